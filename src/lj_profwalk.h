/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The profilers' call stack walk: the Lua frames the VM publishes and the
** native frames unwound from a starting context, interleaved where
** interpreter activations sit on the native stack. Called by sysprof (from
** its signal handler) and memprof (from the allocator): what the walk
** finds goes to a frame sink, which encodes it.
**
** It may only read memory it has checked (frames through lj_prof_framefunc
** and the bounds of L's stack, PCs against their proto's bytecode, traces
** through J->trace[] and their maps, lj_proftrace_*, the native stack
** between the starting SP and the thread's stack top, the unwind tables of
** registered objects, lj_profunwind_*; anything else through
** walk_readable: write(2) and read(2) on a pipe). It never allocates,
** locks or writes a stream, but for walk_refresh, which a walker outside
** signal context may allow (onthread).
**
** Compiled once, in lj_profwalk.c, not into each caller: inlined into
** sysprof's handler it was not faster (bench/sysprof.lua's per-sample
** probe, side by side: a mode C walk 1-4 % slower inlined, mode L within
** 0.1 us either way, whole runs at 1 kHz the same).
*/

#ifndef _LJ_PROFWALK_H
#define _LJ_PROFWALK_H

#include <ucontext.h>

#include "lj_obj.h"
#include "lj_jit.h"
#include "lj_profunwind.h"

/* -- Frames and sinks ---------------------------------------------------- */

/* What a walk yields; sysprof's stream writes these as its frame tags.
** FR_VMCODE, the interpreter's own code, is only taken by sysprof's v2:
** the Lua frames it runs stand in its place. */
enum {
  FR_LUA = 1, FR_CFUNC, FR_FFUNC, FR_NATIVE, FR_TRACE, FR_TRACE_LUA, FR_VMCODE
};
#define FRBIT(tag)		(1u << (tag))

/* Where a walk's frames go, innermost first. The values of a frame:
**   FR_LUA        proto, line (a BCLine, -1: unknown)
**   FR_CFUNC      C function          FR_NATIVE, FR_VMCODE  code address
**   FR_FFUNC      fast function id, its entry
**   FR_TRACE_LUA  trace number, start proto, its line, Lua frames that
**                 follow in the trace's code (those it inlined, then the
**                 one it was entered in). */
typedef struct ProfSink ProfSink;
struct ProfSink {
  int nframes;
  int maxframes;	/* Frames beyond this are left out. */
  unsigned keep;	/* FRBIT()s of the frames taken; others left out. */
  void (*put)(ProfSink *s, int tag, const uint64_t *v);
};

/* What the walker keeps across walks: its VM, the code it knows. */
typedef struct ProfWalk {
  global_State *g;
  uintptr_t vm_lo, vm_hi;	/* The interpreter's code. */
  uintptr_t leaf_lo, leaf_hi;	/* Its leaf helpers' (in it): no frame. */
  uintptr_t cpcall_lo, cpcall_hi;	/* lj_vm_cpcall's: C calling C. */
  uintptr_t stack_lo, stack_hi;	/* The walking thread's native stack. */
  ProfUnwObjs unw;		/* Objects whose code a step may leave. */
  ProfUnwCache unwcache;
  TraceNo lasttrace;		/* The trace found last by address. */
  int probe[2];			/* Pipe that tells readable memory. */
  int onthread;			/* Not in signal context: may refresh. */
  const void *gone;		/* A block the allocator just freed (memprof):
				** a coroutine's stack that it was is not read. */
} ProfWalk;

#define TOPPC_MAX	4

/* Where the walk of a coroutine's frames stands. */
typedef struct LuaCursor {
  lua_State *L;
  cTValue *frame;	/* Next frame to write; NULL: done. */
  /* If that frame is the innermost one: where its PC may be, best first.
  ** The first that lies in its function's bytecode is taken. */
  const BCIns *toppc[TOPPC_MAX];
  int ntoppc;
  int unsure;		/* That frame may be changing under us. */
  /* If that frame is the one a trace runs: the function the trace runs
  ** there, which a tail call in the trace has not yet written to the
  ** frame's slot; NULL if unknown. */
  const GCproto *toppt;
} LuaCursor;

/* -- Setup, outside signal context --------------------------------------- */

/* 0 if the process has no descriptor left. */
LJ_FUNC int lj_profwalk_openprobe(ProfWalk *pw);
LJ_FUNC void lj_profwalk_closeprobe(ProfWalk *pw);
/* The code a walk knows: the interpreter and the objects loaded now; the
** calling thread's stack. onthread: the walks run outside signal context,
** on the VM's thread. */
LJ_FUNC void lj_profwalk_setcode(ProfWalk *pw, global_State *g,
				 int onthread);

/* -- Walks --------------------------------------------------------------- */

/* Does ip lie in the interpreter's code? */
static LJ_AINLINE int lj_profwalk_invm(const ProfWalk *pw, uintptr_t ip)
{
  return ip >= pw->vm_lo && ip < pw->vm_hi;
}

/* Does ip lie in the code of an object the walker knows? */
static LJ_AINLINE int lj_profwalk_incode(ProfWalk *pw, uintptr_t ip)
{
  return lj_profunwind_knownin(&pw->unw, &pw->unwcache, ip);
}

/* The native stack a walk from the registers r may read. */
LJ_FUNC void lj_profwalk_stack(ProfWalk *pw, const ProfUnwRegs *r,
			       ProfUnwStack *stk);
/* The whole stack, Lua and native frames interleaved: unwind from r (on
** stack stk) in VM state st; uc: the interrupted context, if any. */
LJ_FUNC void lj_profwalk_callgraph(ProfWalk *pw, ProfSink *s, int32_t st,
				   ProfUnwStack *stk, ProfUnwRegs *r,
				   const ucontext_t *uc);

/* The parts of a walk, for a sampler that takes fewer frames (sysprof's
** mode L, a host's backtracer, v2): a native frame; the innermost Lua
** frame of the coroutine running; the cursor's frames, up to max in the
** sink; the PC the interpreter had, found by unwinding into it. */
LJ_FUNC void lj_profwalk_addr(ProfSink *s, int tag, uintptr_t addr);
LJ_FUNC void lj_profwalk_top(ProfWalk *pw, LuaCursor *c, int32_t st,
			     const ucontext_t *uc);
LJ_FUNC void lj_profwalk_frames(ProfSink *s, LuaCursor *c, int max);
LJ_FUNC void lj_profwalk_vmreturn(LuaCursor *c, const ProfUnwRegs *r);
/* A trace that links to the interpreter (lj_vm_exit_interp: a stitch, a
** link to the interpreter) has left before the state says so: it loaded
** the interpreter's BASE and PC (of the instruction to run), which uc
** holds. 1 if they name a frame and its PC: the cursor starts there and
** no trace runs. Checked: a helper a trace calls may hold its values in
** those registers. */
LJ_FUNC int lj_profwalk_leftrace(ProfWalk *pw, LuaCursor *c,
				 const ucontext_t *uc);
/* Traces: by number, unless gone; the frames of one running at ip; the
** one whose code holds ip, or 0. */
LJ_FUNC GCtrace *lj_profwalk_gettrace(ProfWalk *pw, TraceNo traceno);
LJ_FUNC void lj_profwalk_trace(ProfWalk *pw, ProfSink *s, LuaCursor *c,
			       int32_t traceno, uintptr_t ip);
LJ_FUNC int32_t lj_profwalk_traceat(ProfWalk *pw, uintptr_t ip);
/* The VM state of a thread stopped at ip: g->vmstate st, but for a trace
** entered and stopped before it stores its number a few instructions in
** (emit_setvmstate): the interpreter jumped there in its own state (x64:
** LFUNC; ARM64's BC_JLOOP stores 0, which is INTERP's here). That is one
** instruction's window, but under qemu-user, whose signals arrive at the
** start of a translated block, many samples land there. */
LJ_FUNC int32_t lj_profwalk_state(ProfWalk *pw, int32_t st, uintptr_t ip);
/* Where trace traceno runs, stopped at ip with the link register lr: ip,
** or, in a helper of the interpreter's code that the trace called
** (lj_vm_modi, lj_vm_floor, ...: no frame of their own), the call, from
** the link register (ARM64; x86-64 has none: lr 0). */
LJ_FUNC uintptr_t lj_profwalk_traceip(ProfWalk *pw, int32_t traceno,
				      uintptr_t ip, uintptr_t lr);
/* A trace exit under way (state EXIT): the trace that exits, the frames
** of its exit's snapshot, the cursor at the frame the trace was entered
** in (lj_profwalk_top's). 0 if J->parent and J->exitno name no exit. */
LJ_FUNC int lj_profwalk_exit(ProfWalk *pw, ProfSink *s, LuaCursor *c);

#endif
