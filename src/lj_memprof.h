/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Memory profiler: every allocation, reallocation and free of the VM,
** with the place that caused it, as a `ljs` + `ljm` stream (its grammar:
** lj_profstream.h).
*/

#ifndef _LJ_MEMPROF_H
#define _LJ_MEMPROF_H

#include "lj_obj.h"
#include "lj_profstream.h"

/* The VM states it relies on are split in the x64 and ARM64 interpreters
** only. */
#if (LJ_TARGET_X64 || LJ_TARGET_ARM64) && LJ_TARGET_LINUX && LJ_GC64 && \
    !defined(LUAJIT_DISABLE_MEMPROF)
#define LJ_HASMEMPROF		1
#else
#define LJ_HASMEMPROF		0
#endif

struct GCtrace;
struct luam_Memprof_Options;

/* What a profile records. */
typedef struct MemprofConfig {
  int format;		/* Stream version asked for, LJM_VERSION*; 0: none. */
  int version;		/* Of the stream: the entry point's default, until
			** lj_memprof_check settles it. */
  int stacks;		/* Events carry their call stacks (version 5). */
  int native;		/* The stacks have the C frames too; implies stacks. */
  uint64_t sample;	/* Mean bytes between sampled allocations; 0: all.
			** Implies stacks. */
  uint64_t budget;	/* Address space the stack tables may take. */
  const char *follow;	/* Forked children's path, or NULL (lj_prof.h). */
} MemprofConfig;

/* Time marks (version 5): the clock is read every LJM_MARK_EVENTS events
** written (every event when sampled: those are few), and a mark written
** when LJM_MARK_NS passed since the last one. */
#define LJM_MARK_NS		10000000
#define LJM_MARK_EVENTS		256

/* Sampling intervals accepted, in bytes. */
#define LJM_SAMPLE_MAX		((uint64_t)1 << 40)

/* Budgets of the stack tables accepted, in bytes, and the default: address
** space, reserved at the start, its pages touched as the tables grow. */
#define LJM_BUDGET_MIN		((uint64_t)1 << 20)
#define LJM_BUDGET_MAX		((uint64_t)1 << 40)
#define LJM_BUDGET		((uint64_t)1 << 30)

/* The profiler's defaults: every event, no stacks, the reference's stream
** (v3), which its call misc.memprof.start(path) and its C API write, for
** its tools. Our own calls, misc.memprof.start{...} and LJPROF, write v4
** unless asked otherwise: v4's lines inside traces are for our reader. */
LJ_FUNC void lj_memprof_defaults(MemprofConfig *cfg);
/* The one rule of each option, for every entry point: NULL, or what is
** wrong in the words misc.memprof.start says after "profiler misuse: ".
** Settles what is implied: stacks by native frames or sampling, version 5
** by stacks, the version by the format asked. lj_memprof_start refuses
** (PROFILE_ERRUSE) what it refuses. */
LJ_FUNC const char *lj_memprof_check(MemprofConfig *cfg);

/* luaM_memprof_start with the config given, not the one the setters of
** the C API chose. */
LJ_FUNC int lj_memprof_start(lua_State *L,
			     const struct luam_Memprof_Options *opt,
			     const MemprofConfig *cfg);

/* Through lj_prof.h: code that appears while profiling is announced. */
LJ_FUNC void lj_memprof_addproto(global_State *g, const GCproto *pt);
#if LJ_HASJIT
LJ_FUNC void lj_memprof_addtrace(global_State *g, const struct GCtrace *T);
#endif
/* lua_close: stop a profile of this VM and complete its stream. */
LJ_FUNC void lj_memprof_close(global_State *g);

/* Profiles run in several VMs at once, one per VM: a start is refused while
** VM g has a profile (running, or halted until stop() is called) or every
** slot is taken. g NULL: a profile holds in the process. */
LJ_FUNC int lj_memprof_busy(global_State *g);
/* Stop the profile whose writer context is ctx, if any (process exit). */
LJ_FUNC void lj_memprof_exit(void *ctx);
/* In the child of a fork(): forget the parent's profile (lj_prof.h). */
LJ_FUNC void lj_memprof_forked(void);
/* Before a fork(): slot i's profile, if it runs and follows forks: 1, with
** its VM and settings; 0 if not; -1 past the last slot. */
LJ_FUNC int lj_memprof_follows(int i, global_State **g, MemprofConfig *cfg);
/* A heap snapshot of VM g is taken now: a version 5 profile of g marks
** its stream with the snapshot's id (the reader joins the two there).
** 1 if it did. */
LJ_FUNC int lj_memprof_snapmark(global_State *g, uint64_t id);
/* Memory for the profile's own tables, off the Lua heap (the allocator
** being profiled is the one that calls us): address space, its pages
** touched as used. NULL if none. */
LJ_FUNC void *lj_memprof_map(size_t sz);

#endif
