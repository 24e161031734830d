/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The profilers' call stack walk. What it may read, and why it is not
** inlined into its callers, is said in lj_profwalk.h.
*/

#define _GNU_SOURCE
#define lj_profwalk_c
#define LUA_CORE

#include <fcntl.h>
#include <unistd.h>

#include "lj_profwalk.h"
#include "lj_frame.h"
#include "lj_dispatch.h"
#include "lj_profframe.h"
#include "lj_proftrace.h"
#include "lj_vm.h"
#if LJ_HASFFI
#include "lj_ccallback.h"
#endif

/* Follows lj_vm_cpcall in the VM's code. */
LJ_ASMF void lj_cont_dispatch(void);

#define WALK_STEPS		256	/* Frames and activations, at most. */
#define WALK_THREADS		16	/* Coroutines met in one walk. */
#define WALK_CFRAMES		16	/* C frames searched for a trace's. */
/* User addresses lie below 2^47 on x86-64, 2^48 on ARM64 (4K pages). */
#if LJ_TARGET_ARM64
#define WALK_VABITS		48
#else
#define WALK_VABITS		47
#endif

/* -- Frames and sinks ---------------------------------------------------- */

/* Starts a frame; 0 when it is left out: the sink is full, or takes no
** such frame. */
static int walk_frame(ProfSink *s, int tag)
{
  if (s->nframes >= s->maxframes || !(s->keep & FRBIT(tag)))
    return 0;
  s->nframes++;
  return 1;
}

static void walk_lua(ProfSink *s, const GCproto *pt, BCLine line)
{
  if (walk_frame(s, FR_LUA)) {
    uint64_t v[2];
    v[0] = (uintptr_t)pt;
    v[1] = (uint64_t)(int64_t)line;
    s->put(s, FR_LUA, v);
  }
}

void lj_profwalk_addr(ProfSink *s, int tag, uintptr_t addr)
{
  if (walk_frame(s, tag)) {
    uint64_t v[1];
    v[0] = addr;
    s->put(s, tag, v);
  }
}

/* -- Setup, outside signal context --------------------------------------- */

int lj_profwalk_openprobe(ProfWalk *pw)
{
  return pipe2(pw->probe, O_CLOEXEC | O_NONBLOCK) == 0;
}

void lj_profwalk_closeprobe(ProfWalk *pw)
{
  close(pw->probe[0]);
  close(pw->probe[1]);
}

/* Code in the VM's that is not the interpreter's. Its helpers for math,
** conversions and lj_vm_next follow its trace exit code, up to the FFI's:
** leaf functions that C code, the interpreter and traces call, with no
** frame of their own (the interpreter's unwind entry, which covers them,
** does not hold there). lj_vm_cpcall: C calling C. */
static void vm_otherranges(ProfWalk *pw)
{
#if LJ_TARGET_X64
  pw->leaf_lo = (uintptr_t)(void *)lj_vm_floor;
#elif LJ_TARGET_ARM64
  pw->leaf_lo = (uintptr_t)(void *)lj_vm_modi;
#else
  pw->leaf_lo = pw->vm_hi;
#endif
#if LJ_HASFFI
  pw->leaf_hi = (uintptr_t)(void *)lj_vm_ffi_callback;
#else
  pw->leaf_hi = pw->vm_hi;
#endif
  if (!(pw->vm_lo <= pw->leaf_lo && pw->leaf_lo < pw->leaf_hi &&
	pw->leaf_hi <= pw->vm_hi))
    pw->leaf_lo = pw->leaf_hi = 0;
  pw->cpcall_lo = (uintptr_t)(void *)lj_vm_cpcall;
  pw->cpcall_hi = (uintptr_t)(void *)lj_cont_dispatch;
  if (!(pw->vm_lo <= pw->cpcall_lo && pw->cpcall_lo < pw->cpcall_hi &&
	pw->cpcall_hi - pw->cpcall_lo < 256 && pw->cpcall_hi <= pw->vm_hi))
    pw->cpcall_lo = pw->cpcall_hi = 0;
}

void lj_profwalk_setcode(ProfWalk *pw, global_State *g, int onthread)
{
  pw->g = g;
  pw->onthread = onthread;
  pw->gone = NULL;
  if (!lj_profunwind_vmcode(&pw->vm_lo, &pw->vm_hi))
    pw->vm_lo = pw->vm_hi = 0;
  vm_otherranges(pw);
  if (!lj_profunwind_threadstack(&pw->stack_lo, &pw->stack_hi))
    pw->stack_lo = pw->stack_hi = 0;  /* Every stack read probed. */
  lj_profunwind_init(&pw->unw, &pw->unwcache);
}

/* -- Checks the walk makes before it follows anything -------------------- */

/* Is [p, p+n) readable? Asks the kernel, which answers EFAULT, not SIGSEGV.
** Whatever went into the pipe comes out again, also after a partial write
** (p readable up to a page boundary): a pipe left with bytes in it would
** fill up and fail every later probe. */
static int walk_readable(ProfWalk *pw, const void *p, size_t n)
{
  uint8_t sink[64];
  ssize_t w;
  if (n > sizeof(sink) || (uintptr_t)p < 4096 ||
      (uintptr_t)p >= ((uintptr_t)1 << WALK_VABITS))
    return 0;
  w = write(pw->probe[1], p, n);
  if (w > 0 && read(pw->probe[0], sink, (size_t)w) != w)
    return 0;
  return w == (ssize_t)n;
}

/* Code of an object loaded since the walker last looked: only on the VM's
** thread, only when the loader counts a change (lj_profunwind_refresh). */
static int walk_refresh(ProfWalk *pw, uintptr_t ip)
{
  return pw->onthread && lj_profunwind_refresh(&pw->unw) &&
	 lj_profwalk_incode(pw, ip);
}

static int unw_probe(void *pw, const void *p, size_t n)
{
  return walk_readable((ProfWalk *)pw, p, n);
}

/* The native stack a walk may read: from the starting SP up. On another
** stack (a host's own, an alternate signal stack) every read is probed. */
void lj_profwalk_stack(ProfWalk *pw, const ProfUnwRegs *r,
		       ProfUnwStack *stk)
{
  stk->probe = unw_probe;
  stk->ctx = pw;
  if (r->sp >= pw->stack_lo && r->sp < pw->stack_hi) {
    stk->lo = r->sp;
    stk->hi = pw->stack_hi;
  } else {
    stk->lo = stk->hi = 0;
  }
}

/* The PC a frame returns to in the frame below it, if it is a Lua one. */
static const BCIns *frame_retpc(cTValue *frame)
{
  if (frame_islua(frame))
    return frame_pc(frame);
  if (frame_iscont(frame))
    return frame_contpc(frame);
  return NULL;
}

/* A fast or C function's frame the VM has set up but not entered (a
** trace that stitches leaves with the call's frames written, the
** interpreter on its way to the function): not running yet, its caller
** runs, at the call. NULL unless the caller is Lua and holds that PC. */
static cTValue *frame_entering(lua_State *L, cTValue *frame,
			       const BCIns **pc)
{
  cTValue *below = lj_prof_framebelow(L, frame, 0);
  GCfunc *fn;
  if (below == NULL || (fn = lj_prof_framefunc(L, below)) == NULL ||
      !isluafunc(fn))
    return NULL;
  *pc = frame_retpc(frame);
  return *pc != NULL && lj_proftrace_inproto(funcproto(fn), *pc) ? below :
	 NULL;
}

/* Is ip in the trace exit handler? Its frame is no interpreter's: it
** holds the trace's registers (an ExitState) below the C frame the trace
** ran on. */
static int native_inexit(uintptr_t ip)
{
#if LJ_HASJIT
  return ip >= (uintptr_t)(void *)lj_vm_exit_handler &&
	 ip < (uintptr_t)(void *)lj_vm_exit_interp;
#else
  UNUSED(ip);
  return 0;
#endif
}

/* -- Lua frames ---------------------------------------------------------- */

static void cursor_addpc(LuaCursor *c, const BCIns *pc)
{
  if (pc != NULL && c->ntoppc < TOPPC_MAX)
    c->toppc[c->ntoppc++] = pc;
}

/* A candidate better than those known: it goes first. */
static void cursor_bestpc(LuaCursor *c, const BCIns *pc)
{
  int i;
  if (c->ntoppc == TOPPC_MAX)
    c->ntoppc--;
  for (i = c->ntoppc; i > 0; i--)
    c->toppc[i] = c->toppc[i-1];
  c->toppc[0] = pc;
  c->ntoppc++;
}

/* A call being entered (lj_dispatch_call: a hot call, a call hook) has
** the callee's frame set up above the cursor's, at the L->base published
** for the call, and pc, the interpreter's, is the callee's: the cursor
** moves there. */
static void cursor_callee(LuaCursor *c, const BCIns *pc)
{
  lua_State *L = c->L;
  cTValue *callee;
  GCfunc *fn;
  if (L != NULL && c->frame != NULL && (callee = L->base - 1) > c->frame &&
      (fn = lj_prof_framefunc(L, callee)) != NULL && isluafunc(fn) &&
      lj_proftrace_inproto(funcproto(fn), pc) &&
      lj_prof_framebelow(L, callee, 0) == c->frame) {
    c->frame = callee;
    c->toppt = NULL;
  }
}

/* The innermost frame's PC, if a candidate is one of pt's. A candidate
** that is the frame's own link (a return PC, or C's frame) says the frame
** is returning: *ret. */
static const BCIns *cursor_toppc(const LuaCursor *c, const GCproto *pt,
				 cTValue *frame, int *ret)
{
  int i;
  for (i = 0; i < c->ntoppc; i++)
    if (lj_proftrace_inproto(pt, c->toppc[i]))
      return c->toppc[i];
    else if (c->toppc[i] == proto_bc(pt))  /* Its header, to run next. */
      return c->toppc[i] + 1;
  for (i = 0; i < c->ntoppc; i++)
    if ((intptr_t)c->toppc[i] == frame_ftsz(frame))
      *ret = 1;
  return NULL;
}

/* Write the frames of one interpreter activation: from the cursor down to
** the frame the VM was entered with from C. C functions are written only
** when their native frames are not (withc). */
static void activation_frames(ProfSink *s, LuaCursor *c, int withc)
{
  cTValue *frame = c->frame, *next = NULL;
  int steps = WALK_STEPS, dup = 0;
  while (frame != NULL && steps-- > 0) {
    GCfunc *fn = lj_prof_framefunc(c->L, frame);
    int boundary;
    if (fn == NULL)
      break;
    /* Entered from C: by lua_call & co., or as an FFI callback. */
    boundary = frame_typep(frame) == FRAME_C ||
	       frame_typep(frame) == FRAME_CP ||
	       (frame_iscont(frame) && frame_iscont_fficb(frame));
    if (!dup) {
      if (isluafunc(fn)) {
	int ret = 0;
	const GCproto *pt = next == NULL && c->toppt != NULL ? c->toppt :
			    funcproto(fn);
	const BCIns *pc = next != NULL ? frame_retpc(next) :
			  cursor_toppc(c, pt, frame, &ret);
	if (!ret)  /* A returning frame is gone: its caller runs on. */
	  walk_lua(s, pt, lj_proftrace_line(pt, pc));
      } else if (isffunc(fn)) {
	if (walk_frame(s, FR_FFUNC)) {
	  uint64_t v[2];
	  v[0] = fn->c.ffid;
	  v[1] = (uintptr_t)fn->c.f;
	  s->put(s, FR_FFUNC, v);
	}
      } else if (withc) {
	lj_profwalk_addr(s, FR_CFUNC, (uintptr_t)fn->c.f);
      }
    }
    /* A vararg function's frame sits above the one it was called with. */
    dup = frame_isvarg(frame);
    next = frame;
    frame = lj_prof_framebelow(c->L, frame, c->unsure);
    c->unsure = 0;
    if (boundary)
      break;
  }
  c->frame = (next != NULL && frame != NULL) ? frame : NULL;
  c->ntoppc = 0;
  c->toppt = NULL;
}

/* The cursor's frames, C functions among them, down to the coroutine's
** first or until the sink holds max frames. Also when the sink takes none
** of them, a damaged frame chain cannot hold the walk. */
void lj_profwalk_frames(ProfSink *s, LuaCursor *c, int max)
{
  int n;
  for (n = 0; c->frame != NULL && s->nframes < max && n < WALK_STEPS; n++)
    activation_frames(s, c, 1);
}

/* The interpreter called C (the JIT: a hot loop or call, an instruction
** to record), which enters lj_vm_cpcall, in the state of the Lua code:
** the registers are C's. Each of those calls saved the interpreter's PC
** in its C frame, L->cframe, until lj_vm_cpcall links its own (at the
** stack pointer) in front of it. */
static void top_cpcallpc(LuaCursor *c, lua_State *L, const ucontext_t *uc)
{
  void *cf = cframe_raw(L->cframe);
  if (cf != NULL && (uintptr_t)cf == LJ_PROFUNW_UCSP(uc))
    cf = cframe_raw(cframe_prev(cf));
  if (cf != NULL) {
    cursor_callee(c, cframe_pc(cf));
    cursor_addpc(c, cframe_pc(cf));
  }
}

/* The innermost frame of the coroutine running, from what the VM publishes:
** the state, the base of a Lua or fast function, L->base for C; none in
** INTERP, the state of a stack being moved (its frames are not where L
** says: the allocator may have freed them). uc, when the walk starts from
** an interrupted context, has the interpreter's registers. */
void lj_profwalk_top(ProfWalk *pw, LuaCursor *c, int32_t st,
		     const ucontext_t *uc)
{
  global_State *g = pw->g;
  lua_State *L = gco2th(gcref(g->cur_L));
  TValue *base;
  cTValue *caller;
  const BCIns *pc;
  GCfunc *fn;
  c->L = NULL;
  c->frame = NULL;
  c->ntoppc = 0;
  c->unsure = 1;
  c->toppt = NULL;
  if (L == NULL || L->gct != ~LJ_TTHREAD || mref(L->glref, global_State) != g)
    return;
  c->L = L;
  if (st == ~LJ_VMST_INTERP || tvref(L->stack) == pw->gone)
    return;
  /* A trace exit publishes the base of the frame the trace was entered
  ** in: jit_base is gone, L->base moves as its snapshot is restored. */
  if (st == ~LJ_VMST_LFUNC || st == ~LJ_VMST_FFUNC || st == ~LJ_VMST_EXIT)
    base = mref(g->prof.vmbase, TValue);
  else if (lj_prof_intrace(st))
    base = tvref(g->jit_base);  /* The frame a trace started in. */
  else
    base = L->base;
  if (base == NULL || (fn = lj_prof_framefunc(L, base-1)) == NULL)
    return;
  c->frame = base-1;
  /* LFUNC with a fast or C function's base: a trace stitched to it and
  ** left (lj_vm_exit_interp), the interpreter is yet to enter it. */
  if (st == ~LJ_VMST_LFUNC && !isluafunc(fn) &&
      (caller = frame_entering(L, base-1, &pc)) != NULL) {
    c->frame = caller;
    cursor_addpc(c, pc);
  }
  /* CFUNC with a Lua function's base: it returned to the C function
  ** below (lj_vm_return sets the state before L->base). */
  if (st == ~LJ_VMST_CFUNC && isluafunc(fn) &&
      (caller = lj_prof_framebelow(L, base-1, 0)) != NULL &&
      !isluafunc(frame_func(caller)))
    c->frame = caller;
  /* The interpreter keeps the PC in a register (also for an instruction
  ** after a fast function returned: the base is published, the state not
  ** yet). Calling a function, it has loaded the callee's PC there already,
  ** but has stored its own in the link of the new frame, at BASE. C code
  ** saved the PC it called from in the C frame. A vararg function being
  ** entered or returning (its caller's base published) has its BASE moved
  ** above the frame holding that link. */
  if (uc != NULL && (st == ~LJ_VMST_LFUNC || st == ~LJ_VMST_FFUNC) &&
      LJ_PROFUNW_UCPC(uc) >= pw->cpcall_lo &&
      LJ_PROFUNW_UCPC(uc) < pw->cpcall_hi) {
    top_cpcallpc(c, L, uc);
  } else if (uc != NULL && (st == ~LJ_VMST_LFUNC || st == ~LJ_VMST_FFUNC) &&
	     lj_profwalk_invm(pw, LJ_PROFUNW_UCPC(uc))) {
    cTValue *link = (cTValue *)LJ_PROFUNW_UCREG(uc, CFRAME_GREG_BASE) - 1;
    cursor_addpc(c, (const BCIns *)LJ_PROFUNW_UCREG(uc, CFRAME_GREG_PC));
    if (link > c->frame && lj_prof_framefunc(L, link) != NULL &&
	frame_isvarg(link))
      link = frame_prevd(link);
    if (link > c->frame && lj_prof_framefunc(L, link) != NULL &&
	frame_islua(link))
      cursor_addpc(c, frame_pc(link));
  }
#if LJ_HASJIT
  /* The compiler at work: the instruction it records (one ahead, as the
  ** VM keeps PCs). L->cframe is then the compiler's own C frame, in front
  ** of the interpreter's, which holds the PC it called the JIT from. */
  if (st == ~LJ_VMST_RECORD || st == ~LJ_VMST_OPT || st == ~LJ_VMST_ASM) {
    void *interp = L->cframe != NULL ? cframe_prev(cframe_raw(L->cframe)) :
				       NULL;
    cursor_addpc(c, G2J(g)->pc + 1);
    if (interp != NULL)
      cursor_addpc(c, cframe_pc(cframe_raw(interp)));
  }
#endif
  /* Not while Lua or a fast function runs: the interpreter updates that
  ** slot only before some of its calls, so it may be stale and yet lie in
  ** the function's bytecode. */
  if (L->cframe != NULL && st != ~LJ_VMST_LFUNC && st != ~LJ_VMST_FFUNC)
    cursor_addpc(c, cframe_pc(cframe_raw(L->cframe)));
}

int lj_profwalk_leftrace(ProfWalk *pw, LuaCursor *c, const ucontext_t *uc)
{
  uintptr_t ip = LJ_PROFUNW_UCPC(uc);
  cTValue *base = (cTValue *)LJ_PROFUNW_UCREG(uc, CFRAME_GREG_BASE);
  const BCIns *pc = (const BCIns *)LJ_PROFUNW_UCREG(uc, CFRAME_GREG_PC);
  cTValue *frame = base-1;
  GCfunc *fn;
  if (c->L == NULL || !lj_profwalk_invm(pw, ip) || native_inexit(ip) ||
      (fn = lj_prof_framefunc(c->L, frame)) == NULL)
    return 0;
  if (isluafunc(fn)) {  /* The PC points at the instruction to run. */
    if (!lj_proftrace_inproto(funcproto(fn), ++pc))
      return 0;
  } else if ((frame = frame_entering(c->L, frame, &pc)) == NULL) {
    return 0;  /* A stitched call's BASE is the callee's; checked there. */
  }
  c->frame = frame;
  c->ntoppc = 0;
  c->toppt = NULL;
  cursor_addpc(c, pc);
  return 1;
}

/* Unwinding C code the interpreter called directly (libm for `^`, its
** helpers) has reached the interpreter: the unwinder restored the PC's
** register, the best candidate for the innermost frame. A call being
** entered marks that PC in its low bit (cursor_callee). */
void lj_profwalk_vmreturn(LuaCursor *c, const ProfUnwRegs *r)
{
  const BCIns *pc = (const BCIns *)(r->bx & ~(uintptr_t)(sizeof(BCIns)-1));
#if LJ_TARGET_X64
  LJ_STATIC_ASSERT(CFRAME_GREG_PC == REG_RBX);
#elif LJ_TARGET_ARM64
  LJ_STATIC_ASSERT(CFRAME_GREG_PC == 21);  /* DW_BX of lj_profunwind.c. */
#endif
  cursor_callee(c, pc);
  cursor_bestpc(c, pc);
}

/* -- Traces -------------------------------------------------------------- */

#if LJ_HASJIT
static int trace_holds(GCtrace *T, uintptr_t ip)
{
  return T != NULL && ip >= (uintptr_t)T->mcode &&
	 ip < (uintptr_t)T->mcode + T->szmcode;
}
#endif

/* The trace of that number, unless it is gone. The array of traces is
** not read while the allocator moves it (memprof: a trace started from
** an exit grows it, the state still EXIT). */
GCtrace *lj_profwalk_gettrace(ProfWalk *pw, TraceNo traceno)
{
#if LJ_HASJIT
  jit_State *J = G2J(pw->g);
  GCtrace *T;
  if (traceno >= J->sizetrace || (const void *)J->trace == pw->gone ||
      !lj_proftrace_mapped(&J->trace[traceno]))
    return NULL;
  /* A sample may land while the allocator grows J->trace: the old block's
  ** words are then its bookkeeping. A trace is one when it says so. */
  T = traceref(J, traceno);
  return T != NULL && lj_proftrace_mapped(T) && T->gct == ~LJ_TTRACE &&
	 T->traceno == traceno ? T : NULL;
#else
  UNUSED(pw); UNUSED(traceno);
  return NULL;
#endif
}

uintptr_t lj_profwalk_traceip(ProfWalk *pw, int32_t traceno, uintptr_t ip,
			      uintptr_t lr)
{
#if LJ_HASJIT
  if (lr != 0 && lj_profwalk_invm(pw, ip) && !native_inexit(ip) &&
      trace_holds(lj_profwalk_gettrace(pw, (TraceNo)traceno), lr))
    return lr - 1;  /* In the call. */
#else
  UNUSED(pw); UNUSED(traceno); UNUSED(lr);
#endif
  return ip;
}

/* Trace T, number traceno, running the n frames pts, pcs (innermost
** first): those it inlined, and the one it was entered in, the cursor's,
** with its PC. The trace's frame says how many Lua frames follow. A sink
** that takes no trace frame still gets the Lua frames. */
static void trace_frames(ProfSink *s, LuaCursor *c, int32_t traceno,
			 GCtrace *T, int n, const GCproto **pts,
			 const BCIns **pcs)
{
  GCproto *pt = &gcref(T->startpt)->pt;
  int i, nlua = n > 0 ? n : 1;
  if (walk_frame(s, FR_TRACE_LUA)) {
    uint64_t v[4];
    v[0] = (uint64_t)traceno;
    v[1] = (uintptr_t)pt;
    v[2] = (uint64_t)lj_proftrace_line(pt, mref(T->startpc, const BCIns) + 1);
    v[3] = (uint64_t)(nlua < s->maxframes - s->nframes ? nlua :
		      s->maxframes - s->nframes);
    s->put(s, FR_TRACE_LUA, v);
  }
  for (i = 0; i < n-1; i++)
    walk_lua(s, pts[i], lj_proftrace_line(pts[i], pcs[i]));
  c->ntoppc = 0;
  c->toppt = n > 0 ? pts[n-1] : NULL;
  if (n > 0)
    cursor_addpc(c, pcs[n-1]);
}

/* The trace running at ip, the frames it inlined, and (through c) the
** frames below it. */
void lj_profwalk_trace(ProfWalk *pw, ProfSink *s, LuaCursor *c,
		       int32_t traceno, uintptr_t ip)
{
  GCtrace *T = lj_profwalk_gettrace(pw, (TraceNo)traceno), *root;
  const GCproto *pts[LJ_PROFTRACE_MAXFRAMES];
  const BCIns *pcs[LJ_PROFTRACE_MAXFRAMES];
  int n = 0;
  if (T == NULL || s->nframes >= s->maxframes)
    return;
#if LJ_HASJIT
  /* A trace entered from this one's exit or link runs before it stores
  ** its number: the code at ip says which. */
  if (!trace_holds(T, ip)) {
    int32_t other = lj_profwalk_traceat(pw, ip);
    GCtrace *OT = other ? lj_profwalk_gettrace(pw, (TraceNo)other) : NULL;
    if (OT != NULL) {
      T = OT;
      traceno = other;
    }
  }
  n = lj_proftrace_frames(T, ip, pts, pcs);
#else
  UNUSED(ip);
#endif
  trace_frames(s, c, traceno, T, n, pts, pcs);
  if (n > 0)
    return;
  /* Outside the trace's snapshots (exit stubs, a walk that got lost):
  ** where the trace started, or, for a side trace that started in a
  ** deeper frame, where its root did, in the frame it was entered from. */
  cursor_addpc(c, mref(T->startpc, const BCIns) + 1);
  if (T->root != 0 && (root = lj_profwalk_gettrace(pw, T->root)) != NULL)
    cursor_addpc(c, mref(root->startpc, const BCIns) + 1);
}

int lj_profwalk_exit(ProfWalk *pw, ProfSink *s, LuaCursor *c)
{
#if LJ_HASJIT
  jit_State *J = G2J(pw->g);
  TraceNo traceno = J->parent;
  GCtrace *T = lj_profwalk_gettrace(pw, traceno);
  const GCproto *pts[LJ_PROFTRACE_MAXFRAMES];
  const BCIns *pcs[LJ_PROFTRACE_MAXFRAMES];
  int n;
  if (T == NULL || s->nframes >= s->maxframes ||
      (n = lj_proftrace_exitframes(T, J->exitno, pts, pcs)) == 0)
    return 0;
  trace_frames(s, c, (int32_t)traceno, T, n, pts, pcs);
  return 1;
#else
  UNUSED(pw); UNUSED(s); UNUSED(c);
  return 0;
#endif
}

/* The trace whose machine code holds ip, or 0: C code called from a
** trace (the collector, table helpers) returns there. */

int32_t lj_profwalk_state(ProfWalk *pw, int32_t st, uintptr_t ip)
{
  int32_t traceno;
  if (!lj_prof_intrace(st) && !lj_profwalk_invm(pw, ip) &&
      !lj_profwalk_incode(pw, ip) &&
      (traceno = lj_profwalk_traceat(pw, ip)) != 0)
    return traceno;
  return st == 0 ? ~LJ_VMST_INTERP : st;  /* 0: the jump itself. */
}

int32_t lj_profwalk_traceat(ProfWalk *pw, uintptr_t ip)
{
#if LJ_HASJIT
  jit_State *J = G2J(pw->g);
  TraceNo i;
  if ((const void *)J->trace == pw->gone)
    return 0;
  /* The trace found last, first: walks from C code a trace calls come in
  ** runs. Not trusted by its number alone: traces are freed and reused. */
  if (pw->lasttrace < J->sizetrace &&
      trace_holds(traceref(J, pw->lasttrace), ip))
    return (int32_t)pw->lasttrace;
  for (i = 1; i < J->sizetrace; i++)
    if (trace_holds(traceref(J, i), ip))
      return (int32_t)(pw->lasttrace = i);
#else
  UNUSED(pw); UNUSED(ip);
#endif
  return 0;
}

/* -- Native frames ------------------------------------------------------- */

/* Leave an interpreter activation: its C frame holds the callee-saved
** registers and the return address of whoever called the VM. The VM's
** own unwind entry cannot be trusted inside its helpers or in traces. */
static int native_vmcaller(const char *cf, const ProfUnwStack *stk,
			   ProfUnwRegs *r)
{
  uintptr_t at = (uintptr_t)cf;
  if (cf == NULL || !lj_profunwind_read(stk, at + CFRAME_OFS_RET, &r->ip) ||
      !lj_profunwind_read(stk, at + CFRAME_OFS_FP, &r->bp) ||
      !lj_profunwind_read(stk, at + CFRAME_OFS_PCREG, &r->bx))
    return 0;
  r->sp = at + CFRAME_SIZE;
  r->exact = 0;
  return 1;
}

/* Does the activation of the C frame cf own none of the cursor's frames?
** A C call protected without a Lua frame (lj_vm_cpcall from C: the
** compiler's, a trace exit's, the parser's) saves, as a negative nres,
** the stack top it was called with: the frames below are those of the
** activations further out. Until the walk meets the exit handler of a
** trace exit under way (exiting), that top is stale: the exit's frames
** are the handler's. */
static int cframe_nolua(const LuaCursor *c, const char *cf,
			const ProfUnwStack *stk, int exiting)
{
  uintptr_t v;
  int32_t nres;
  if (c->L == NULL || c->frame == NULL || cf == NULL ||
      !lj_profunwind_read(stk, (uintptr_t)cf + CFRAME_OFS_NRES, &v))
    return 0;
  nres = (int32_t)(uint32_t)v;  /* Little-endian: the low half. */
  return nres < 0 && (exiting ||
		      c->frame < (cTValue *)((char *)tvref(c->L->stack) - nres));
}

/* The C frame the exiting trace ran on: the first of L's C frames above
** the exit handler's stack pointer sp (lj_trace_exit's protected call
** may be the innermost). */
static const char *exit_cframe(lua_State *L, uintptr_t sp,
			       const ProfUnwStack *stk)
{
  uintptr_t cf = L != NULL ? (uintptr_t)cframe_raw(L->cframe) : 0;
  int n;
  for (n = 0; cf != 0 && cf <= sp && n < WALK_CFRAMES; n++)
    if (!lj_profunwind_read(stk, cf + CFRAME_OFS_PREV, &cf))
      return NULL;
    else
      cf = (uintptr_t)cframe_raw((void *)cf);
  return cf > sp ? (const char *)cf : NULL;
}

/* The coroutine whose activation owns an interpreter frame further out on
** the native stack: the frame's SAVE_L says. */
static LuaCursor *cursor_for(ProfWalk *pw, LuaCursor *cur, int *ncur,
			     const char *cf, const ProfUnwStack *stk)
{
  uintptr_t at;
  lua_State *L;
  int i;
  if (!lj_profunwind_read(stk, (uintptr_t)cf + CFRAME_OFS_L, &at))
    return NULL;
  L = (lua_State *)at;
  for (i = 0; i < *ncur; i++)
    if (cur[i].L == L)
      return &cur[i];
  if (*ncur == WALK_THREADS || !walk_readable(pw, L, 64) ||
      L->gct != ~LJ_TTHREAD || mref(L->glref, global_State) != pw->g)
    return NULL;
  cur[*ncur].L = L;
  cur[*ncur].frame = tvref(L->stack) != pw->gone &&
		     lj_prof_framefunc(L, L->base-1) ? L->base-1 : NULL;
  cur[*ncur].ntoppc = 0;
  cur[*ncur].unsure = 0;
  cur[*ncur].toppt = NULL;
  return &cur[(*ncur)++];
}

/* The whole stack: unwind from the registers r (on stack stk) in VM state
** st; each interpreter activation met on the way is replaced by its Lua
** frames. r->exact: r->ip is where the thread stopped, not a return
** address. uc: the interrupted context, if the walk starts in one. */
void lj_profwalk_callgraph(ProfWalk *pw, ProfSink *s, int32_t st,
			   ProfUnwStack *stk, ProfUnwRegs *r,
			   const ucontext_t *uc)
{
  LuaCursor cur[WALK_THREADS];
  int ncur = 1, i, innermost = 1, lost = 0, stepped = !r->exact;
  int exiting = st == ~LJ_VMST_EXIT;  /* Its trace not written yet. */
  int32_t traceno = lj_prof_intrace(st) ? st : 0;
  uintptr_t ip0 = r->ip;
  cTValue *top;
  lj_profwalk_top(pw, &cur[0], st, uc);
  if (traceno && uc != NULL && lj_profwalk_leftrace(pw, &cur[0], uc))
    traceno = 0;
  top = cur[0].frame;
  while (s->nframes < s->maxframes) {
    uintptr_t ip = lost ? 0 : r->ip;
    const char *cf;
    /* C code called from a trace returns into it, in any VM state. */
    if (!traceno && innermost && stepped && !lost &&
	!lj_profwalk_invm(pw, ip) && !lj_profwalk_incode(pw, ip))
      traceno = lj_profwalk_traceat(pw, (uintptr_t)ip);
    /* A leaf helper of the VM's: its caller's frame is next, not an
    ** interpreter's. Named when C code called it (a conversion under
    ** lj_meta_tset); called by the interpreter (vm_mod for `%`), it is
    ** part of the instruction the interpreter runs. */
    if (innermost && !traceno && !stepped && ip >= pw->leaf_lo &&
	ip < pw->leaf_hi) {
      ProfUnwRegs caller = *r;
      if (!lj_profunwind_leafstep(stk, &caller))
	break;
      if (!lj_profwalk_invm(pw, caller.ip))
	lj_profwalk_addr(s, FR_NATIVE, ip);
      *r = caller;
      stepped = 1;
      continue;
    }
    /* Compiled code has no unwind entries: a trace, or what it called,
    ** ends the walk, or leads out of the code we know. */
    if (lj_profwalk_invm(pw, ip) ||
	(traceno && innermost && (lost || !lj_profwalk_incode(pw, ip)))) {
      /* An interpreter activation (or a trace, which runs in one). */
      LuaCursor *c = &cur[0];
      int inexit = native_inexit(ip), own;
      if (inexit)  /* Named: the JIT's code, not the Lua it runs. */
	lj_profwalk_addr(s, FR_NATIVE, (uintptr_t)ip);
      else if (lj_profwalk_invm(pw, ip))  /* Only v2 keeps it. */
	lj_profwalk_addr(s, FR_VMCODE, (uintptr_t)ip);
      if (innermost && traceno)
	lj_profwalk_trace(pw, s, c, traceno,  /* ip: in the call. */
			  lost ? ip0 : stepped ? (uintptr_t)ip - 1 :
			  lj_profwalk_traceip(pw, traceno, ip, r->lr));
      if (inexit) {
	cf = exit_cframe(cur[0].L, r->sp, stk);
	c = cursor_for(pw, cur, &ncur, cf, stk);
      } else if (innermost) {
	cf = cur[0].L != NULL ? (const char *)cframe_raw(cur[0].L->cframe) :
				NULL;
      } else {
	cf = (const char *)r->sp;
	c = cursor_for(pw, cur, &ncur, cf, stk);
      }
      own = c != NULL &&
	    ((innermost && traceno) || !cframe_nolua(c, cf, stk, exiting));
      if (own && !inexit && c == &cur[0] && stepped && c->frame == top &&
	  top != NULL)
	lj_profwalk_vmreturn(c, r);
      innermost = lost = 0;
      if (own && c == &cur[0] && exiting)
	exiting = !lj_profwalk_exit(pw, s, c);
      if (own)
	activation_frames(s, c, 0);
      if (!native_vmcaller(cf, stk, r))
	break;
      continue;
    }
    if (!lj_profwalk_incode(pw, ip) && !walk_refresh(pw, ip))
      break;  /* Not code we know: the walk went astray. */
    lj_profwalk_addr(s, FR_NATIVE, ip);
    lost = !lj_profunwind_step(&pw->unw, &pw->unwcache, stk, r);
    stepped = 1;
    if (lost && !(traceno && innermost))
      break;
  }
  /* Frames of activations the native walk did not reach. */
  if (exiting)
    lj_profwalk_exit(pw, s, &cur[0]);
  for (i = 0; i < ncur; i++)
    lj_profwalk_frames(s, &cur[i], s->maxframes);
}
