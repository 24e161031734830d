/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Where in Lua code the profilers are: PCs checked against a function's
** bytecode, and the Lua frames a trace runs at an address of its machine
** code, from a map the JIT compiler makes for each trace. The lookups
** (lj_proftrace_inproto, _line, _frames) may run in a signal handler:
** they read, check and neither allocate nor lock. The rest runs in the
** compiler, as it records and assembles a trace, but for
** lj_proftrace_each: the traces of a VM, for a profile that starts.
*/

#ifndef _LJ_PROFTRACE_H
#define _LJ_PROFTRACE_H

#include "lj_obj.h"
#include "lj_ir.h"
#include "lj_debug.h"
#include "lj_jit.h"

/* -- Bytecode positions of the IR ---------------------------------------- */

/*
** The recorder knows which bytecode, in which inlined frame, each IR
** instruction comes from; the assembler, which machine code each IR
** instruction became. Together they give, per trace, a map from its
** machine code to the Lua frames that run there (lj_proftrace_frames).
** A position is a PC and the position of the call that entered its
** frame; the recorder shares the positions of the frames below.
*/

#define LJ_PROFTRACE_NOPOS	0xffff	/* No position known. */
#define LJ_PROFTRACE_LAZY	0xfffe	/* The bytecode's, made when needed. */
#define LJ_PROFTRACE_MAXPOS	0xfffe	/* Positions of a trace, at most. */
#define LJ_PROFTRACE_MAXFRAMES	64	/* Frames a trace inlined, at most. */
#define LJ_PROFTRACE_MAXPT	64	/* Functions a map names, at most. */

/* What the recorder and assembler of the current trace collect: the
** trace's map in the making: positions and code ranges, which
** lj_proftrace_asmdone compacts and encodes (lj_proftrace.c). */
typedef struct ProfTraceRec {
  uint16_t *irpos;	/* Position of each IR instruction, by ref-REF_BIAS. */
  MSize sizeirpos;
  uint16_t curpos;	/* Position of the instructions emitted now. */
  uint16_t linepos;	/* The last innermost position made, */
  BCLine line;		/* and its line. */
  uint16_t nchain;	/* Positions of the frames below the innermost */
  uint16_t chainpos[LJ_PROFTRACE_MAXFRAMES];	/* one, outermost first. */
  const GCproto *pt;	/* The bytecode recorded now, for LAZY: its */
  const BCIns *pc;	/* function, PC (one ahead; NULL in a fast or */
  MSize baseslot;	/* C function) and the recorder's frame base. */
  const GCproto **pospt;	/* Positions: function, */
  uint32_t *posofs;	/* PC (one ahead) as an index into its bytecode, */
  uint16_t *posparent;	/* position of the call of its frame, or NOPOS. */
  MSize npos, sizepos;
  uint16_t *rdist;	/* Code ranges as assembled, backwards: where each */
  uint16_t *rpos;	/* starts, in MCode units from the end, and its */
  MSize nrange, sizerange;	/* position. */
  uint16_t *poskeep;	/* While the map is made: positions it keeps, */
  MSize sizekeep;
  uint8_t *enc;		/* and its bytes. */
  MSize sizeenc;
} ProfTraceRec;

LJ_FUNC void lj_proftrace_irslow(ProfTraceRec *r, lua_State *L, MSize i);

/* The recorder records the bytecode at pc (NULL: a fast or C function) of
** pt, its frame base at baseslot. Most bytecodes emit no IR: the position
** is made for the first IR instruction. That follows at once: the real
** stack, whose frames the position names, stays as it is meanwhile. */
static LJ_AINLINE void lj_proftrace_record(ProfTraceRec *r, const GCproto *pt,
					   const BCIns *pc, MSize baseslot)
{
  r->pt = pt;
  r->pc = pc ? pc + 1 : NULL;
  r->baseslot = baseslot;
  r->curpos = LJ_PROFTRACE_LAZY;
}

/* The loop optimizer copies IR instruction ins: the copy runs its position. */
static LJ_AINLINE void lj_proftrace_inherit(ProfTraceRec *r, IRRef ins)
{
  r->curpos = r->irpos[ins - REF_BIAS];
}

/* A new IR instruction runs the current position. */
static LJ_AINLINE void lj_proftrace_irins(ProfTraceRec *r, lua_State *L,
					  IRRef ref)
{
  MSize i = (MSize)(ref - REF_BIAS);
  if (LJ_UNLIKELY(i >= r->sizeirpos || r->curpos == LJ_PROFTRACE_LAZY))
    lj_proftrace_irslow(r, L, i);
  r->irpos[i] = r->curpos;
}

/* The assembler emitted the code of IR instruction ins (below
** lj_proftrace_asmstart's): it starts dist MCode units (bytes on x86-64,
** instructions on ARM64) from the end of the trace's code. An instruction
** whose code runs another position than the code after it starts a range.
** Traces over 64K units get no map: dist is cut to 16 bits, the capacity
** is kept. */
static LJ_AINLINE void lj_proftrace_asmins(ProfTraceRec *r, MSize dist,
					   IRRef ins)
{
  MSize n = r->nrange;
  uint16_t pos = r->irpos[ins - REF_BIAS];
  if ((uint16_t)dist > r->rdist[n-1]) {
    if (r->rpos[n-1] == pos) {
      r->rdist[n-1] = (uint16_t)dist;
    } else {
      r->rdist[n] = (uint16_t)dist;
      r->rpos[n] = pos;
      r->nrange = n+1;
    }
  }
}

/* Does pc (as the VM keeps it: one ahead) lie in the bytecode of pt? */
static LJ_AINLINE int lj_proftrace_inproto(const GCproto *pt, const BCIns *pc)
{
  const BCIns *bc = proto_bc(pt);
  return pc > bc && pc <= bc + pt->sizebc;
}

/* Line of the instruction before pc; -1 when pc is not one of pt's. */
static LJ_AINLINE BCLine lj_proftrace_line(const GCproto *pt, const BCIns *pc)
{
  if (!lj_proftrace_inproto(pt, pc))
    return -1;
  return lj_debug_line((GCproto *)pt, (BCPos)(pc - proto_bc(pt)) - 1);
}

#if LJ_HASJIT
struct GCtrace;
struct jit_State;

/* The recorder starts a new trace. */
LJ_FUNC void lj_proftrace_recstart(struct jit_State *J);

/* The assembler: code of the trace's tail (dist MCode units from the end
** of its code) before IR instruction ins, the last (lj_proftrace_asmins
** follows); the trace's code is sz units. */
LJ_FUNC void lj_proftrace_asmstart(struct jit_State *J, MSize dist,
				   IRRef ins);
LJ_FUNC void lj_proftrace_asmdone(struct jit_State *J, struct GCtrace *T,
				  MSize sz);

LJ_FUNC void lj_proftrace_freemap(global_State *g, struct GCtrace *T);
LJ_FUNC void lj_proftrace_freerec(global_State *g, ProfTraceRec *r);

/* Size in bytes of T's map, 0 if it has none. */
LJ_FUNC MSize lj_proftrace_mapsize(const struct GCtrace *T);

/*
** The Lua frames trace T runs at ip, an address inside one of its
** instructions (for a return address: one less), innermost first: pcs[i]
** (one ahead) in pts[i]. From the bytecode the IR instruction at ip came
** from, else from the snapshot in force there. The last PC is in the
** frame the trace was entered in (or returned to): pts[n-1] is the
** function the trace runs there, NULL when only the frame's slot can tell
** (a snapshot's frames). Returns n, or 0 when T cannot tell (ip outside
** the code of its snapshots, a continuation frame).
*/
LJ_FUNC int lj_proftrace_frames(const struct GCtrace *T, uintptr_t ip,
				const GCproto **pts, const BCIns **pcs);
/* The same, where exit exitno of T resumes the interpreter: the frames of
** its snapshot, the exit's line innermost. */
LJ_FUNC int lj_proftrace_exitframes(const struct GCtrace *T, ExitNo exitno,
				    const GCproto **pts, const BCIns **pcs);

/* Whether the page that holds p is mapped: memory a signal handler finds
** through a pointer the VM may be changing (a trace, the bytecode of a
** proto being freed) is read only where this says so. */
LJ_FUNC int lj_proftrace_mapped(const void *p);

/* Every complete trace of g (not the one being recorded), by number. */
LJ_FUNC void lj_proftrace_each(global_State *g,
			       void (*f)(void *ud, const struct GCtrace *T),
			       void *ud);
#endif

#endif
