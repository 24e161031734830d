/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Profiles asked for in the environment (LJPROF), without changing the
** program: started when a VM is created, or toggled by a signal.
*/

#ifndef _LJ_PROFENV_H
#define _LJ_PROFENV_H

#include "lj_obj.h"

/* A VM was created: start (or arm) what LJPROF asks for. */
LJ_FUNC void lj_profenv_open(lua_State *L);
/* A VM was created: the perf map, if LJPROF_PERFMAP asks for it. */
LJ_FUNC void lj_profenv_perfmap(global_State *g);
/* A GC step is due: a safe point to act on the signal. Nonzero when the
** step was due to the signal alone: skip it. */
LJ_FUNC int lj_profenv_gcstep(lua_State *L);
/* How many VMs of the process take events at their GC steps: while none
** does, a step does not look (lj_prof_gcstep). Changed atomically, only
** by the thread of the VM whose events start or end, or a forked child. */
LJ_DATA int lj_profenv_npolled;
/* The process exits: heap snapshots at the end of the VMs still open
** (before their memory profiles end: those mark the snapshots). */
LJ_FUNC void lj_profenv_exit(void);
/* Before a fork(): the profiles of Lua and C that follow it, kept. */
LJ_FUNC void lj_profenv_forking(void);
/* In the forked child: those profiles start at their VMs' next safe point,
** as LJPROF's would. */
LJ_FUNC void lj_profenv_follow(void);
/* lua_close: disarm; the profilers complete their streams themselves;
** the heap snapshot at the end, if none was taken. */
LJ_FUNC void lj_profenv_close(global_State *g);

#endif
