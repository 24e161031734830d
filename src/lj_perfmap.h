/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Linux perf map: names of the VM's code for profilers outside the process.
*/

#ifndef _LJ_PERFMAP_H
#define _LJ_PERFMAP_H

#include "lj_obj.h"

struct GCtrace;

/* On: open /tmp/perf-PID.map with the interpreter and the traces of g;
** off: close it. PROFILE_SUCCESS, or PROFILE_ERRIO with errno. */
LJ_FUNC int lj_perfmap_set(global_State *g, int on);
#if LJ_HASJIT
LJ_FUNC void lj_perfmap_addtrace(global_State *g, const struct GCtrace *T);
#endif

#endif
