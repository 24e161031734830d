/*
** What the VM tells its profilers: code that appears, and the VM closing.
*/

#ifndef _LJ_PROF_H
#define _LJ_PROF_H

#include "lj_obj.h"

struct GCtrace;

/* A proto or a trace is complete: a running profile announces it. */
LJ_FUNC void lj_prof_addproto(global_State *g, const GCproto *pt);
#if LJ_HASJIT
LJ_FUNC void lj_prof_addtrace(global_State *g, const struct GCtrace *T);
#endif
/* lua_close: profiles of this VM stop and complete their streams. */
LJ_FUNC void lj_prof_close(global_State *g);

#endif
