/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** VM metrics: luaM_metrics() reads the counters the VM keeps.
*/

#define lj_metrics_c
#define LUA_CORE

#include "lj_obj.h"
#include "lj_gc.h"
#include "lj_jit.h"
#include "lj_dispatch.h"
#include "lmisclib.h"

LUA_API void luaM_metrics(lua_State *L, struct luam_Metrics *m)
{
  global_State *g = G(L);
  const GCState *gc = &g->gc;
  m->strhash_hit = g->str.hit;
  m->strhash_miss = g->str.miss;
  m->gc_strnum = g->str.num;
  m->gc_tabnum = gc->tabnum;
  m->gc_udatanum = gc->udatanum;
  m->gc_cdatanum = gc->cdatanum;
  m->gc_total = gc->total;
  /* Not counted (patches/0002): what went less what is live. */
  m->gc_freed = gc->allocated + sizeof(GG_State) - gc->total;
  m->gc_allocated = gc->allocated;
  m->gc_steps_pause = gc->steps[GCSpause];
  m->gc_steps_propagate = gc->steps[GCSpropagate];
  m->gc_steps_atomic = gc->steps[GCSatomic];
  m->gc_steps_sweepstring = gc->steps[GCSsweepstring];
  m->gc_steps_sweep = gc->steps[GCSsweep];
  m->gc_steps_finalize = gc->steps[GCSfinalize];
#if LJ_HASJIT
  {
    const jit_State *J = G2J(g);
    m->jit_snap_restore = J->nsnaprestore;
    m->jit_trace_abort = J->ntraceabort;
    m->jit_mcode_size = J->szallmcarea;
    m->jit_trace_num = (unsigned int)J->ntraces;
  }
#else
  m->jit_snap_restore = 0;
  m->jit_trace_abort = 0;
  m->jit_mcode_size = 0;
  m->jit_trace_num = 0;
#endif
}
