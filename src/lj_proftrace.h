/*
** Where in Lua code the profilers are: PCs checked against a function's
** bytecode, and the Lua frames a trace runs at an address of its machine
** code. Everything here may run in a signal handler: it reads, checks
** and neither allocates nor locks.
*/

#ifndef _LJ_PROFTRACE_H
#define _LJ_PROFTRACE_H

#include "lj_obj.h"
#include "lj_ir.h"
#include "lj_debug.h"

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
#define LJ_PROFTRACE_MAXFRAMES	64	/* Frames a trace inlined, at most. */

typedef struct ProfTracePos {
  const GCproto *pt;	/* Function of the PC. */
  const BCIns *pc;	/* One ahead, as the VM keeps PCs. */
  uint16_t parent;	/* Position of the call of this frame, or NOPOS. */
  uint16_t keep;	/* While the map is built: index in the map + 1. */
} ProfTracePos;

/* Code of one position: where it starts, as bytes from the code's end. */
typedef struct ProfTraceRange {
  uint32_t dist;
  uint16_t pos;
} ProfTraceRange;

/* What the recorder and assembler of the current trace collect. */
typedef struct ProfTraceRec {
  uint16_t *irpos;	/* Position of each IR instruction, by ref-REF_BIAS. */
  MSize sizeirpos;
  uint16_t curpos;	/* Position of the instructions emitted now. */
  uint16_t nchain;	/* Frames below the innermost one, outermost first: */
  uint16_t chainpos[LJ_PROFTRACE_MAXFRAMES];	/* ... their positions. */
  ProfTracePos *pos;	/* Positions seen. */
  MSize npos, sizepos;
  ProfTraceRange *range;	/* Code ranges as assembled (backwards). */
  MSize nrange, sizerange;
} ProfTraceRec;

LJ_FUNC void lj_proftrace_growirpos(ProfTraceRec *r, lua_State *L, MSize n);

/* A new IR instruction runs the current position. */
static LJ_AINLINE void lj_proftrace_irins(ProfTraceRec *r, lua_State *L,
					  IRRef ref)
{
  MSize i = (MSize)(ref - REF_BIAS);
  if (LJ_UNLIKELY(i >= r->sizeirpos))
    lj_proftrace_growirpos(r, L, i+1);
  r->irpos[i] = r->curpos;
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

/* The recorder: a new trace, the bytecode it records next, an instruction
** the loop optimizer copies from ins. */
LJ_FUNC void lj_proftrace_recstart(struct jit_State *J);
LJ_FUNC void lj_proftrace_record(struct jit_State *J);
LJ_FUNC void lj_proftrace_inherit(struct jit_State *J, IRRef ins);

/* The assembler: code of the trace's tail (dist bytes from the end of its
** code) before IR instruction ins; the code of ins starts dist bytes from
** the end; the trace's code is sz bytes. */
LJ_FUNC void lj_proftrace_asmstart(struct jit_State *J, MSize dist,
				   IRRef ins);
LJ_FUNC void lj_proftrace_asmins(struct jit_State *J, MSize dist, IRRef ins);
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
** frame the trace was entered in, whose proto the caller knows and
** checks: pts[n-1] may not be set. Returns n, or 0 when T cannot tell
** (ip outside the code of its snapshots, a continuation frame).
*/
LJ_FUNC int lj_proftrace_frames(const struct GCtrace *T, uintptr_t ip,
				const GCproto **pts, const BCIns **pcs);
#endif

#endif
