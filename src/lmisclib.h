/*
** ljprof: VM metrics and profilers of LuaJIT, for embedders and scripts.
**
** Lua scripts reach all of this through the `misc` library, which
** luaL_openlibs() opens.
*/

#ifndef _LMISCLIB_H
#define _LMISCLIB_H

#include <stddef.h>

#include "lua.h"

/* -- VM metrics ---------------------------------------------------------- */

/*
** A snapshot of the VM's counters.  Counts of live objects and sizes are
** current values; everything else only grows while the VM lives.
*/
struct luam_Metrics {
  size_t strhash_hit;		/* Strings interned that already existed. */
  size_t strhash_miss;		/* Strings interned that had to be created. */
  size_t gc_strnum;		/* Live strings. */
  size_t gc_tabnum;		/* Live tables. */
  size_t gc_udatanum;		/* Live userdata. */
  size_t gc_cdatanum;		/* Live cdata. */
  size_t gc_total;		/* Bytes the GC manages now. */
  size_t gc_freed;		/* Bytes freed, in all. */
  size_t gc_allocated;		/* Bytes allocated, in all. */
  size_t gc_steps_pause;	/* GC steps taken in each GC state. */
  size_t gc_steps_propagate;
  size_t gc_steps_atomic;
  size_t gc_steps_sweepstring;
  size_t gc_steps_sweep;
  size_t gc_steps_finalize;
  size_t jit_snap_restore;	/* Exits from traces to the interpreter. */
  size_t jit_trace_abort;	/* Trace compilations aborted. */
  size_t jit_mcode_size;	/* Bytes of machine code areas. */
  unsigned int jit_trace_num;	/* Live traces. */
};

/* Fill *metrics with the counters of L's VM. */
LUA_API void luaM_metrics(lua_State *L, struct luam_Metrics *metrics);

/* -- The misc library ---------------------------------------------------- */

#define LUAM_MISCLIBNAME "misc"
LUALIB_API int luaopen_misc(lua_State *L);

#endif
