/*
** Where in Lua code the profilers are: PCs checked against a function's
** bytecode, and the Lua frames a trace runs at an address of its machine
** code. Everything here may run in a signal handler: it reads, checks
** and neither allocates nor locks.
*/

#ifndef _LJ_PROFTRACE_H
#define _LJ_PROFTRACE_H

#include "lj_obj.h"
#include "lj_debug.h"

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

/* Frames a trace inlined, kept per lookup. */
#define LJ_PROFTRACE_MAXFRAMES	64

/*
** The Lua frames trace T runs at ip, one of its machine code addresses
** (or a return address into it), innermost first, as the snapshot in
** force there has them: pcs[i] (one ahead) in pts[i]. The last PC is in
** the frame the trace was entered in, whose proto the caller knows and
** checks: pts[n-1] is not set. Returns n, or 0 when T cannot tell (ip
** outside the code of its snapshots, a continuation frame).
*/
LJ_FUNC int lj_proftrace_frames(const struct GCtrace *T, uintptr_t ip,
				const GCproto **pts, const BCIns **pcs);

/* The return address into trace T of C code it called, from the C frame
** of the interpreter activation running T; 0 if the frame does not hold
** one (then T is not what called). */
LJ_FUNC uintptr_t lj_proftrace_retaddr(const struct GCtrace *T,
				       const void *cframe);
#endif

#endif
