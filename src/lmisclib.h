/*
** ljprof: VM metrics and profilers of LuaJIT, for embedders and scripts.
**
** Lua scripts reach all of this through the `misc` library, which
** luaL_openlibs() opens.
*/

#ifndef _LMISCLIB_H
#define _LMISCLIB_H

#include <stddef.h>
#include <stdint.h>

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

/* -- Profilers: common definitions -------------------------------------- */

/* Return codes of the profilers' C API. */
#define PROFILE_SUCCESS	0	/* Done. */
#define PROFILE_ERRUSE	1	/* Bad arguments, or no profiler in this build. */
#define PROFILE_ERRRUN	2	/* Already running (start), not running (stop). */
#define PROFILE_ERRMEM	3	/* Out of memory. */
#define PROFILE_ERRIO	4	/* The writer or on_stop failed: see errno. */

/* -- Memory profiler ----------------------------------------------------- */

/*
** While it runs, the memory profiler replaces the VM's allocator and
** streams every allocation, reallocation and free, with the place that
** caused it, in the format documented in docs/formats.md (symbol table
** `ljs` v3 followed by memprof `ljm` v3). One profile runs per process.
**
** The stream goes through the host's callbacks:
**
**   size_t writer(const void **data, size_t len, void *ctx)
**     Called with *data pointing to len > 0 bytes of the stream, whenever
**     the buffer is full and when the profile stops. Returns the number of
**     bytes it consumed: anything less than len is an error, which stops
**     the profile (set errno to say why). Before returning, the writer sets
**     *data to the buffer to fill next: the same one, another of at least
**     `len` bytes of the options (double buffering), or NULL to end the
**     profile. The writer runs inside the VM's allocator: it must not call
**     into the Lua API, and should not block for long.
**
**   int on_stop(void *ctx, uint8_t *buf)
**     Called exactly once, after the last write: on luaM_memprof_stop(),
**     on lua_close() of the profiled VM, or when the writer failed or ended
**     the stream. buf is the buffer the profiler holds at that point (the
**     one to free, if the host allocated it). Returns 0 on success, or
**     non-zero with errno set: luaM_memprof_stop() then says PROFILE_ERRIO.
**     It may run inside the allocator, too: no Lua API calls.
**
** The buffer stays in use by the profiler from start until on_stop.
*/
struct luam_Memprof_Options {
  void *ctx;		/* Passed to writer and on_stop. */
  uint8_t *buf;		/* The first buffer to fill. */
  size_t len;		/* Its size: at least 1 KiB. */
  size_t (*writer)(const void **data, size_t len, void *ctx);
  int (*on_stop)(void *ctx, uint8_t *buf);
};

/*
** Start profiling the VM of L: writes the symbol table, then events.
** PROFILE_ERRUSE for bad options or a build without the profiler,
** PROFILE_ERRRUN if a profile already runs in this process, PROFILE_ERRIO
** (with errno) if the writer failed already on the symbol table; on_stop
** has been called then.
*/
LUA_API int luaM_memprof_start(lua_State *L,
			       const struct luam_Memprof_Options *opt);

/*
** Stop profiling the VM of L and complete the stream. PROFILE_ERRRUN if no
** profile of this VM runs; PROFILE_ERRIO (with errno) if the writer failed
** during the profile (which then stopped early, leaving the program
** running) or if on_stop failed.
*/
LUA_API int luaM_memprof_stop(lua_State *L);

/* -- The misc library ---------------------------------------------------- */

#define LUAM_MISCLIBNAME "misc"
LUALIB_API int luaopen_misc(lua_State *L);

#endif
