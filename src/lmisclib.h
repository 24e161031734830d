/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
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

/* -- Profilers: common definitions --------------------------------------- */

/* Return codes of the profilers' C API. */
#define PROFILE_SUCCESS	0	/* Done. */
#define PROFILE_ERRUSE	1	/* Bad arguments, or no profiler in this build. */
#define PROFILE_ERRRUN	2	/* Already running (start), not running (stop). */
#define PROFILE_ERRMEM	3	/* Out of memory (or file descriptors). */
#define PROFILE_ERRIO	4	/* The writer or on_stop failed: see errno. */

/* -- Memory profiler ----------------------------------------------------- */

/*
** While it runs, the memory profiler replaces the VM's allocator and
** streams every allocation, reallocation and free, with the place that
** caused it, in the format documented in docs/formats.md (symbol table
** `ljs` v3 followed by memprof `ljm` v3, or v4: luaM_memprof_set_format).
** One profile runs per VM, in up to 8 VMs at once.
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
**
** A profile belongs to the process that started it. In the child of a
** fork() the profiler is idle: the child's allocations are not recorded,
** writer and on_stop are never called there (the stream and the buffers
** are the parent's), luaM_memprof_stop() says PROFILE_ERRRUN, and the
** child may start a profile of its own, unless one follows the fork
** (luaM_memprof_set_follow). The same holds for sysprof.
*/
struct luam_Memprof_Options {
  void *ctx;		/* Passed to writer and on_stop. */
  uint8_t *buf;		/* The first buffer to fill. */
  size_t len;		/* Its size: at least 1 KiB. */
  size_t (*writer)(const void **data, size_t len, void *ctx);
  int (*on_stop)(void *ctx, uint8_t *buf);
};

/*
** The stream format of the profiles luaM_memprof_start starts from now
** on (misc.memprof.start chooses its own): LUAM_MEMPROF_V3, the
** reference's (the default: an allocation made by a trace is charged to
** the trace), or LUAM_MEMPROF_V4, which charges it to the Lua line the
** trace runs there. PROFILE_ERRUSE for another value, PROFILE_ERRRUN
** while a profile runs.
*/
#define LUAM_MEMPROF_V3		3
#define LUAM_MEMPROF_V4		4
LUA_API int luaM_memprof_set_format(int format);

/*
** Call stacks for the profiles luaM_memprof_start starts from now on:
** with stacks non-zero, every allocation and reallocation carries the Lua
** call stack that made it (the allocating coroutine's frames with their
** lines, those a trace inlined among them), each distinct stack written
** once (stream `ljm` v5, docs/formats.md). While such a profile runs,
** the VM marks the lowest frame returned from between two allocations;
** traces that return below the frame they started in are flushed when it
** starts (they are compiled again, marking it, as they run). PROFILE_ERRRUN
** while a profile runs.
*/
LUA_API int luaM_memprof_set_stacks(int stacks);

/*
** Native frames in those stacks, for the profiles luaM_memprof_start
** starts from now on: with native non-zero (which implies stacks), each
** stack also holds the C frames of the allocation, interleaved with the
** Lua frames where the interpreter runs them, as sysprof's mode C has them;
** from the VM code that allocated outwards. PROFILE_ERRRUN while a profile
** runs.
*/
LUA_API int luaM_memprof_set_native(int native);

/*
** Sampling for the profiles luaM_memprof_start starts from now on: with
** bytes > 0, allocations are recorded at a mean interval of that many
** bytes allocated (drawn from an exponential distribution), each with its
** stack and the bytes it stands for; the frees and reallocations of the
** sampled blocks are recorded, nothing else (stream `ljm` v5). 0 records
** every event again. PROFILE_ERRUSE above 2^40, PROFILE_ERRRUN while a
** profile runs.
*/
LUA_API int luaM_memprof_set_sample(uint64_t bytes);

/*
** The budget of the stack tables, for the profiles luaM_memprof_start
** starts from now on: the address space they may take, in bytes, from
** 2^20 to 2^40 (default 2^30, 1 GiB), reserved when the profile starts
** and touched as they grow. Past it, events name no stack and are counted
** (the stats record at the end). PROFILE_ERRUSE outside that range,
** PROFILE_ERRRUN while a profile runs.
*/
LUA_API int luaM_memprof_set_stack_budget(uint64_t bytes);

/*
** Whether the profiles luaM_memprof_start starts from now on follow fork():
** with a path, while such a profile runs, each forked child of the process
** starts a profile of its own at its VM's first safe point (its next GC
** step), with the same options, written to path with ".PID" (the child's)
** added, by the profiler's own file writer (the host's writer is the
** parent's); its stream is complete at luaM_memprof_stop() in the child, or
** at its exit. A relative path is taken against the working directory at
** the start. NULL: the child is not profiled (the default). PROFILE_ERRUSE
** for an empty path or one of 2 KiB or more, PROFILE_ERRRUN while a profile
** runs. The same holds for luaM_sysprof_set_follow.
*/
LUA_API int luaM_memprof_set_follow(const char *path);

/*
** Start profiling the VM of L: writes the symbol table, then events.
** PROFILE_ERRUSE for bad options or a build without the profiler,
** PROFILE_ERRRUN if a profile already runs in this VM, or in 8 VMs,
** PROFILE_ERRMEM
** if the tables of stacks or samples could not be mapped, PROFILE_ERRIO
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

/* -- Platform profiler --------------------------------------------------- */

/*
** The platform profiler samples, on a timer, the VM state and the Lua and
** native stacks together. Modes:
**   LUAM_SYSPROF_DEFAULT    counters per VM state only;
**   LUAM_SYSPROF_LEAF       the innermost Lua frame and native frame;
**   LUAM_SYSPROF_CALLGRAPH  one stack from main to the innermost frame,
**                           Lua frames placed where they nest among
**                           native ones.
** The stream (docs/formats.md: `ljs` v3 + `ljp` v3, or the reference's
** `ljp` v2: luaM_sysprof_set_format) goes through a writer and an on_stop
** callback with the contract of the memory profiler's, except that the
** writer runs on a thread of the profiler's own (never in the signal
** handler, never in the VM's thread): it may block.
*/

/*
** Samples are taken in the handler of the real-time signal SIGRTMIN +
** LUAM_SYSPROF_SIGRTOFS, sent to the VM's thread while a profile runs: a
** host must leave that signal alone (no handler, not blocked there). A
** tick while no call into the VM is under way (the host runs, or another
** VM on the same thread) is no sample of it.
*/
#define LUAM_SYSPROF_SIGRTOFS	4

#define LUAM_SYSPROF_DEFAULT	0
#define LUAM_SYSPROF_LEAF	1
#define LUAM_SYSPROF_CALLGRAPH	2

struct luam_Sysprof_Counters {
  uint64_t vmst_interp;
  uint64_t vmst_lfunc;
  uint64_t vmst_ffunc;
  uint64_t vmst_cfunc;
  uint64_t vmst_gc;
  uint64_t vmst_exit;
  uint64_t vmst_record;
  uint64_t vmst_opt;
  uint64_t vmst_asm;
  uint64_t vmst_trace;
  uint64_t samples;	/* The sum of the above. */
};

struct luam_Sysprof_Options {
  uint8_t mode;		/* LUAM_SYSPROF_*. */
  uint64_t interval;	/* Milliseconds between samples (CPU time), 1 to
			** 1000000. */
  uint8_t *buf;		/* The first buffer for the writer. */
  size_t len;		/* Its size: at least 1 KiB. */
  void *ctx;		/* Passed to writer and on_stop. */
};

typedef size_t (*luam_Sysprof_writer)(const void **data, size_t len,
				      void *ctx);
typedef int (*luam_Sysprof_on_stop)(void *ctx, uint8_t *buf);
/*
** A native stack walker of the host's, called in the signal handler: it
** must be async-signal-safe. It reports each frame's address, innermost
** first, through frame_writer. With one set, native frames follow the Lua
** frames instead of being interleaved with them.
*/
typedef void (*luam_Sysprof_backtracer)(void *(*frame_writer)(int frame_no,
							      void *addr));

/* Set before start; each returns PROFILE_SUCCESS, or PROFILE_ERRRUN while
** a profile runs (in any VM). */
LUA_API int luaM_sysprof_set_writer(luam_Sysprof_writer writer);
LUA_API int luaM_sysprof_set_on_stop(luam_Sysprof_on_stop on_stop);
LUA_API int luaM_sysprof_set_backtracer(luam_Sysprof_backtracer backtracer);

/*
** The stream format of the profiles luaM_sysprof_start starts from now on
** (misc.sysprof.start chooses its own): LUAM_SYSPROF_V4, ours (the
** default), LUAM_SYSPROF_V3, ours without labels (for readers older than
** them), or LUAM_SYSPROF_V2, the reference's, for its tools: each Lua
** frame at its function's first line, the Lua frames apart from the native
** ones (which include the interpreter's), a trace alone by its number and
** start, no statistics. PROFILE_ERRUSE for another value, PROFILE_ERRRUN
** while a profile runs.
*/
#define LUAM_SYSPROF_V2		2
#define LUAM_SYSPROF_V3		3
#define LUAM_SYSPROF_V4		4
LUA_API int luaM_sysprof_set_format(int format);

/* As luaM_memprof_set_follow. */
LUA_API int luaM_sysprof_set_follow(const char *path);

/* PROFILE_ERRUSE: bad options, no writer or on_stop set, or no profiler in
** this build; PROFILE_ERRRUN: a profile runs already in this VM, or in 8
** VMs (one per VM, each on the thread that started it); PROFILE_ERRIO: the
** writer failed on the symbol table, or the timer could not be set up. */
LUA_API int luaM_sysprof_start(lua_State *L,
			       const struct luam_Sysprof_Options *opt);
LUA_API int luaM_sysprof_stop(lua_State *L);
/* The counters of the profile running, or of the last one, of the calling
** thread's VM (else of the last profile in the process). */
LUA_API int luaM_sysprof_report(struct luam_Sysprof_Counters *counters);

/* -- Perf map ------------------------------------------------------------ */

/*
** on != 0: write /tmp/perf-PID.map, perf's map of code no file backs
** (`START SIZE name`, hex): the interpreter, the traces of L's VM that
** exist, and from now on every trace any VM of the process saves, as
** `TRACE n @chunk:line`. on == 0: stop. The environment variable
** LJPROF_PERFMAP=1 turns it on as a VM is created. PROFILE_SUCCESS, or
** PROFILE_ERRIO (errno set) when the map cannot be created.
*/
LUA_API int luaM_perfmap(lua_State *L, int on);

/* -- Heap snapshot ------------------------------------------------------- */

/*
** Write a snapshot of L's heap to path: every live object (type, address,
** size, ...) and every reference between them, named (docs/formats.md:
** `ljh`). Taken at once, on the calling thread, which it stops for the
** walk; strings' contents are not written (misc.heapsnapshot{strings =
** N} writes their first N bytes). PROFILE_SUCCESS; PROFILE_ERRIO (errno
** set) when path cannot be written; PROFILE_ERRMEM when the walk's own
** tables find no memory. The program goes on either way.
*/
LUA_API int luaM_heapsnapshot(lua_State *L, const char *path);

/* -- Labels -------------------------------------------------------------- */

/*
** A coroutine carries a set of labels (string keys and values, such as a
** route or a tenant) for the profiles to charge its work to. A coroutine
** made while a call into the VM is under way (coroutine.create and wrap, a
** C function that calls lua_newthread) starts with the set of the
** coroutine running; one a host makes outside any call, with none.
**
** A set is made from a table of labels. Its keys are non-empty strings of
** at most LUAM_LABEL_MAXKEY bytes, its values strings of at most
** LUAM_LABEL_MAXVALUE bytes (any bytes, no conversion from numbers), at
** most LUAM_LABEL_MAXN of them; {} is no labels. Sets are interned and
** immutable: the same labels are the same set object, a userdata that
** misc.label and luaM_label_set return and take back at the cost of a
** pointer's store. A set nothing holds is collected.
*/
#define LUAM_LABEL_MAXN		16
#define LUAM_LABEL_MAXKEY	64
#define LUAM_LABEL_MAXVALUE	255

/*
** The set at idx of L's stack (a table of labels, or a set object) becomes
** the set of coroutine L. PROFILE_SUCCESS, with the set it replaces pushed
** (the empty set for none); PROFILE_ERRUSE, with the rule the table breaks
** pushed as a message, L's set unchanged. Like lua_newtable, it raises an
** error when memory runs out.
*/
LUA_API int luaM_label_set(lua_State *L, int idx);

/* Push a new table of the labels of coroutine L ({} for none). */
LUA_API void luaM_label_get(lua_State *L);

/* -- The misc library ---------------------------------------------------- */

#define LUAM_MISCLIBNAME "misc"
LUALIB_API int luaopen_misc(lua_State *L);

#endif
