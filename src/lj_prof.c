/*
** What the VM tells its profilers.
*/

#define lj_prof_c
#define LUA_CORE

#include "lj_prof.h"
#include "lj_memprof.h"
#include "lj_sysprof.h"

void lj_prof_addproto(global_State *g, const GCproto *pt)
{
  lj_memprof_addproto(g, pt);
  lj_sysprof_addproto(g, pt);
}

#if LJ_HASJIT
void lj_prof_addtrace(global_State *g, const struct GCtrace *T)
{
  lj_memprof_addtrace(g, T);
  lj_sysprof_addtrace(g, T);
}
#endif

void lj_prof_close(global_State *g)
{
  lj_memprof_close(g);
  lj_sysprof_close(g);
}
