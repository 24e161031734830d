/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** What the VM calls of its profilers: the hooks of the patched files (code
** that appears, a VM created, a GC step, a VM closing), its calls into Lua
** that C code goes on after, the fork and exit guards a profile sets, and
** the stubs that answer the hooks for a profiler compiled out. What the
** profilers share among themselves is in lj_profframe.h, lj_proftrace.h
** and lj_profunwind.h.
*/

#ifndef _LJ_PROF_H
#define _LJ_PROF_H

#include "lj_obj.h"
#include "lj_vm.h"
#include "lj_sysprof.h"
#include "lj_profenv.h"

struct GCtrace;

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
#endif

/* -- What the trace compiler does --------------------------------------- */

#if LJ_HASJIT
/* Why the traces are flushed (g->prof.flushwhy, set before the flush):
** the compiler ran out of trace numbers or of machine code; else the
** program asked (jit.flush(), jit.profile, a base metatable, ...). */
enum { LJ_PROF_FLUSH_ASKED, LJ_PROF_FLUSH_MAXTRACE, LJ_PROF_FLUSH_MAXMCODE };

/* Told only while a profile records them (g->prof.jitev): a trace started
** (J->cur, J->pt and J->pc, J->parent and J->exitno), saved as T,
** aborted with error e (its object on top of J->L's stack), a start
** blacklisted, all traces flushed, an exit taken (the PC it resumes at,
** the frames restored). Only sysprof records them. */
#define LJ_PROF_JIT(J, call) \
  do { if (LJ_UNLIKELY(J2G(J)->prof.jitev)) call; } while (0)
#define lj_prof_tracestart(J)	LJ_PROF_JIT(J, lj_sysprof_jitstart(J))
#define lj_prof_tracestop(J, T)	LJ_PROF_JIT(J, lj_sysprof_jitstop(J, T))
#define lj_prof_traceabort(J, e) \
  LJ_PROF_JIT(J, lj_sysprof_jitabort(J, (int)(e)))
#define lj_prof_blacklist(J, pt, pc) \
  LJ_PROF_JIT(J, lj_sysprof_jitblacklist(J, pt, pc))
#define lj_prof_traceflush(J)	LJ_PROF_JIT(J, lj_sysprof_jitflush(J))
#define lj_prof_traceexit(J, pc)	LJ_PROF_JIT(J, lj_sysprof_jitexit(J, pc))
#endif

/* -- A VM's life --------------------------------------------------------- */

/* lua_newstate: what the environment asks for starts (LJPROF,
** LJPROF_PERFMAP). */
LJ_FUNC void lj_prof_newstate(lua_State *L);
/* lj_gc_step: a safe point for profiles toggled by a signal. Nonzero when
** the step was due to the signal alone: skip it. No call while no VM of
** the process takes such events: a load and a branch a step. */
static LJ_AINLINE int lj_prof_gcstep(lua_State *L)
{
  return __atomic_load_n(&lj_profenv_npolled, __ATOMIC_RELAXED) != 0 &&
	 lj_profenv_gcstep(L);
}
/* A profile that reads g->vmstate and g->prof.vmbase starts (on) or
** stops: the interpreter publishes them at calls and returns while one
** runs (lj_dispatch.c), and cur_L's base at the start. */
LJ_FUNC void lj_prof_statewatch(global_State *g, int on);
/* lua_close: profiles of this VM stop and complete their streams. */
LJ_FUNC void lj_prof_close(global_State *g);
/* A profile started: from now on, the child of a fork() forgets the
** profiles of its parent instead of writing into their streams. */
LJ_FUNC void lj_prof_forkguard(void);
/* A profile writes to a file of lj_proffile.h: it completes its stream at
** the process's exit, if it still runs then. */
LJ_FUNC void lj_prof_exitguard(void);

/* -- Profiles that follow fork() ----------------------------------------- */

/* A profile started from Lua or C may follow forks (its config's follow, a
** path): while it runs, each forked child starts its own, with the same
** options, into that path with the child's pid added (lj_profenv.c). */
#define LJ_PROF_FOLLOWMAX	2048	/* Bytes of such a path, its NUL too. */
/* path made absolute into out (LJ_PROF_FOLLOWMAX bytes), against the
** working directory of now: a child may leave it. 0 if too long. */
LJ_FUNC int lj_prof_followpath(char *out, const char *path);

/* -- A profiler compiled out --------------------------------------------- */

/* Its hooks in a build without it (LUAJIT_DISABLE_MEMPROF, _SYSPROF):
** nothing to announce, stop or drop, and never busy. Beside the hooks:
** what lj_prof.c calls of a profiler exists in every build. */
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
  int lj_##prof##_busy(global_State *g) { UNUSED(g); return 0; } \
  LJ_PROF_OFF_SETTER(luaM_##prof##_set_follow, const char *)

#endif
