/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Where the VM is, as a profiler may read it: frames checked before they
** are followed, the VM state. The profilers read frames the VM may be
** changing (from a signal handler, from the allocator): these read only
** L's stack within its bounds and the live objects a checked slot names.
*/

#ifndef _LJ_PROFFRAME_H
#define _LJ_PROFFRAME_H

#include "lj_obj.h"
#include "lj_frame.h"

/* The function of a frame, if the frame is one of L's stack. Compared as
** addresses: a frame made from a register a trace's helper left (a small
** index, say) must not wrap below the stack, nor straddle two slots. */
static LJ_AINLINE GCfunc *lj_prof_framefunc(lua_State *L, cTValue *frame)
{
  uintptr_t at = (uintptr_t)frame;
  uintptr_t lo = (uintptr_t)(tvref(L->stack) + LJ_FR2);
  uintptr_t hi = (uintptr_t)(tvref(L->stack) + L->stacksize);
  if (at < lo || at >= hi || ((at - lo) & (sizeof(TValue)-1)) != 0 ||
      !tvisfunc(frame - LJ_FR2))
    return NULL;
  return frame_func(frame);
}

/* Does pc lie in the bytecode of the Lua function at prev, as a PC its
** call returns to? Reads only that slot and, if it holds a function, the
** function and its proto: live objects. */
static LJ_AINLINE int lj_prof_ownspc(lua_State *L, cTValue *prev,
				     const BCIns *pc)
{
  GCfunc *fn = lj_prof_framefunc(L, prev);
  return fn != NULL && isluafunc(fn) && pc > proto_bc(funcproto(fn)) &&
	 pc <= proto_bc(funcproto(fn)) + funcproto(fn)->sizebc;
}

/* The frame below frame, checked: for a Lua frame, a Lua function whose
** bytecode holds the PC the frame returns to, at the slot the call there
** names; else any function. NULL if not one of L's frames. unsure: frame
** is the innermost of a VM interrupted by a signal, which may be returning
** from it, its link overwritten by a result: that PC is not read before
** it is known to be bytecode, of a caller tried at each slot below,
** nearest first. */
static LJ_AINLINE cTValue *lj_prof_framebelow(lua_State *L, cTValue *frame,
					      int unsure)
{
  const BCIns *pc;
  cTValue *prev;
  int a;
  if (!frame_islua(frame)) {
    prev = frame_prevd(frame);
    return lj_prof_framefunc(L, prev) != NULL ? prev : NULL;
  }
  pc = frame_pc(frame);
  if ((uintptr_t)pc & 3)
    return NULL;
  if (!unsure) {
    prev = frame - (1+LJ_FR2+bc_a(pc[-1]));
    return lj_prof_ownspc(L, prev, pc) ? prev : NULL;
  }
  for (a = 0; a <= BCMAX_A && frame - (1+LJ_FR2+a) >= tvref(L->stack); a++) {
    prev = frame - (1+LJ_FR2+a);
    if (lj_prof_ownspc(L, prev, pc) && bc_a(pc[-1]) == (BCReg)a)
      return prev;
  }
  return NULL;
}

/* g->vmstate is ~LJ_VMST_* in the VM's own states, or the number of the
** trace running (trace numbers start at 1). */
static LJ_AINLINE int lj_prof_intrace(int32_t vmstate)
{
  return vmstate > 0;
}

#endif
