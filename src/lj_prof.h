/*
** What the VM tells its profilers: code that appears, and the VM closing.
*/

#ifndef _LJ_PROF_H
#define _LJ_PROF_H

#include "lj_obj.h"
#include "lj_frame.h"
#include "lj_vm.h"

struct GCtrace;

/* The function of a frame, if the frame is one of L's stack: profilers
** read frames the VM may be changing, and check before they follow. */
static LJ_AINLINE GCfunc *lj_prof_framefunc(lua_State *L, cTValue *frame)
{
  cTValue *fslot = frame - LJ_FR2;
  if (fslot < tvref(L->stack) || frame >= tvref(L->stack) + L->stacksize ||
      !tvisfunc(fslot))
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

/* -- Calls into the VM from C code that goes on afterwards --------------- */

/* The VM returns to C in the C function state and leaves g->cur_L at the
** coroutine it ran last; the C code that called (the API, a __gc finalizer,
** a VM event) gets back the state and coroutine it had: a fast function that
** calls back into Lua is still one afterwards. The patched files call these
** under lj_vm_*'s names.
*/
#define LJ_PROF_VMCALL(g, call) \
  { int32_t ostate_ = (g)->vmstate; GCRef ocur_ = (g)->cur_L; \
    call; (g)->vmstate = ostate_; (g)->cur_L = ocur_; }

static LJ_AINLINE void lj_prof_call(lua_State *L, TValue *base, int nres1)
{
  LJ_PROF_VMCALL(G(L), lj_vm_call(L, base, nres1))
}

static LJ_AINLINE int lj_prof_pcall(lua_State *L, TValue *base, int nres1,
				    ptrdiff_t ef)
{
  int status;
  LJ_PROF_VMCALL(G(L), status = lj_vm_pcall(L, base, nres1, ef))
  return status;
}

static LJ_AINLINE int lj_prof_cpcall(lua_State *L, lua_CFunction func,
				     void *ud, lua_CPFunction cp)
{
  int status;
  LJ_PROF_VMCALL(G(L), status = lj_vm_cpcall(L, func, ud, cp))
  return status;
}

static LJ_AINLINE int lj_prof_resume(lua_State *L, TValue *base, int nres1,
				     ptrdiff_t ef)
{
  int status;
  LJ_PROF_VMCALL(G(L), status = lj_vm_resume(L, base, nres1, ef))
  return status;
}

/* -- What the VM tells its profilers ------------------------------------- */

/* A proto or a trace is complete: a running profile announces it. */
LJ_FUNC void lj_prof_addproto(global_State *g, const GCproto *pt);
#if LJ_HASJIT
LJ_FUNC void lj_prof_addtrace(global_State *g, const struct GCtrace *T);
/* Every complete trace of g (not the one being recorded), by number. */
LJ_FUNC void lj_prof_eachtrace(global_State *g,
			       void (*f)(void *ud, const struct GCtrace *T),
			       void *ud);
#endif
/* lua_newstate: what the environment asks for starts (LJPROF,
** LJPROF_PERFMAP). */
LJ_FUNC void lj_prof_newstate(lua_State *L);
/* lj_gc_step: a safe point for profiles toggled by a signal. Nonzero when
** the step was due to the signal alone: skip it. */
LJ_FUNC int lj_prof_gcstep(lua_State *L);
/* lua_close: profiles of this VM stop and complete their streams. */
LJ_FUNC void lj_prof_close(global_State *g);
/* A profile started: from now on, the child of a fork() forgets the
** profiles of its parent instead of writing into their streams. */
LJ_FUNC void lj_prof_forkguard(void);
/* A profile writes to a file of lj_proffile.h: it completes its stream at
** the process's exit, if it still runs then. */
LJ_FUNC void lj_prof_exitguard(void);

/* The interpreter's machine code [lo, hi); 0 if unknown. */
LJ_FUNC int lj_prof_vmcode(uintptr_t *lo, uintptr_t *hi);

/* -- A profiler compiled out --------------------------------------------- */

/* Its hooks in a build without it (LUAJIT_DISABLE_MEMPROF, _SYSPROF):
** nothing to announce, stop or drop, and never busy. */
#if LJ_HASJIT
#define LJ_PROF_OFF_TRACE(prof) \
  void lj_##prof##_addtrace(global_State *g, const struct GCtrace *T) \
  { UNUSED(g); UNUSED(T); }
#else
#define LJ_PROF_OFF_TRACE(prof)
#endif
/* A setter of the C API that only says so: PROFILE_ERRUSE. */
#define LJ_PROF_OFF_SETTER(name, type) \
  LUA_API int name(type v) { UNUSED(v); return PROFILE_ERRUSE; }
#define LJ_PROF_OFF(prof) \
  void lj_##prof##_addproto(global_State *g, const GCproto *pt) \
  { UNUSED(g); UNUSED(pt); } \
  LJ_PROF_OFF_TRACE(prof) \
  void lj_##prof##_close(global_State *g) { UNUSED(g); } \
  void lj_##prof##_forked(void) {} \
  void lj_##prof##_exit(void *ctx) { UNUSED(ctx); } \
  int lj_##prof##_busy(global_State *g) { UNUSED(g); return 0; }

#endif
