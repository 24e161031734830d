/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Platform profiler (sysprof): at every tick of a timer, the VM state and
** the Lua and native stacks together, as a `ljs` + `ljp` v3 stream, or
** the reference's v2.
*/

#ifndef _LJ_SYSPROF_H
#define _LJ_SYSPROF_H

#include <stddef.h>
#include <stdint.h>

#include "lj_obj.h"

/* The sampler reads the x64 or ARM64 interpreter's frames and published
** state. */
#if (LJ_TARGET_X64 || LJ_TARGET_ARM64) && LJ_TARGET_LINUX && LJ_GC64 && \
    !defined(LUAJIT_DISABLE_SYSPROF)
#define LJ_HASSYSPROF		1
#else
#define LJ_HASSYSPROF		0
#endif


/* Clocks that drive the sampling timer. */
enum {
  SYSPROF_CLOCK_CPU,	/* CPU time of the VM's thread. */
  SYSPROF_CLOCK_WALL	/* Monotonic wall-clock time. */
};

/* A profile's settings; the writer contract is that of lmisclib.h. */
typedef struct SysprofConfig {
  int mode;		/* LUAM_SYSPROF_DEFAULT, _LEAF or _CALLGRAPH. */
  int format;		/* LUAM_SYSPROF_V2 to _V4: the stream version. */
  int clock;		/* SYSPROF_CLOCK_*. */
  uint64_t interval;	/* Microseconds between samples. */
  int jitev;		/* v3: the trace compiler's events too. */
  const char *follow;	/* Forked children's path, or NULL (lj_prof.h). */
  uint8_t *buf;
  size_t len;
  void *ctx;
  size_t (*writer)(const void **data, size_t len, void *ctx);
  int (*on_stop)(void *ctx, uint8_t *buf);
} SysprofConfig;

/* Intervals taken, in microseconds: 0.001 ms to 1000000 ms. */
#define SYSPROF_INTERVAL_MIN	1
#define SYSPROF_INTERVAL_MAX	1000000000

/* The profiler's defaults, the writer's fields cleared: mode D (the
** reference's default, LUAM_SYSPROF_DEFAULT: misc.sysprof.start{}), every
** 10 ms of the VM thread's CPU time, stream v3. LJPROF asks for mode C
** (lj_profenv.c says why); the C API's options name mode and interval. */
LJ_FUNC void lj_sysprof_defaults(SysprofConfig *cfg);
/* Milliseconds as the interval's microseconds, truncated; what is not
** above 0 is 0, what is past 2^64 saturates, for the check to refuse. */
LJ_FUNC uint64_t lj_sysprof_interval(double ms);
/* The one rule of each option, for every entry point: NULL, or what is
** wrong in the words misc.sysprof.start says after "profiler misuse: ".
** lj_sysprof_start refuses (PROFILE_ERRUSE) what it refuses. */
LJ_FUNC const char *lj_sysprof_check(const SysprofConfig *cfg);

LJ_FUNC int lj_sysprof_start(lua_State *L, const SysprofConfig *cfg);
/* Profiles run in several VMs at once, one per VM: a start is refused while
** VM g has a profile (running, or halted until stop() is called) or every
** slot is taken. g NULL: a profile holds in the process. */
LJ_FUNC int lj_sysprof_busy(global_State *g);
/* Stop the profile whose writer context is ctx, if any (process exit). */
LJ_FUNC void lj_sysprof_exit(void *ctx);
/* Counters of VM g's profile running or last; g NULL: of the calling
** thread's VM, else of the last profile in the process. */
struct luam_Sysprof_Counters;
LJ_FUNC int lj_sysprof_report(global_State *g,
			      struct luam_Sysprof_Counters *c);
/* In the child of a fork(): forget the parent's profile (lj_prof.h). */
LJ_FUNC void lj_sysprof_forked(void);
/* Before a fork(): slot i's profile, if it runs and follows forks: 1, with
** its VM and settings (the writer's fields are the parent's); 0 if not;
** -1 past the last slot. */
LJ_FUNC int lj_sysprof_follows(int i, global_State **g, SysprofConfig *cfg);

/* Through lj_prof.h. */
LJ_FUNC void lj_sysprof_addproto(global_State *g, const GCproto *pt);
#if LJ_HASJIT
struct GCtrace;
LJ_FUNC void lj_sysprof_addtrace(global_State *g, const struct GCtrace *T);
#endif
LJ_FUNC void lj_sysprof_close(global_State *g);
#if LJ_HASJIT
/* The trace compiler's events, while a v3 profile runs (lj_prof.h). */
struct jit_State;
LJ_FUNC void lj_sysprof_jitstart(struct jit_State *J);
LJ_FUNC void lj_sysprof_jitstop(struct jit_State *J, struct GCtrace *T);
LJ_FUNC void lj_sysprof_jitabort(struct jit_State *J, int e);
LJ_FUNC void lj_sysprof_jitblacklist(struct jit_State *J, GCproto *pt,
				     const BCIns *pc);
LJ_FUNC void lj_sysprof_jitflush(struct jit_State *J);
LJ_FUNC void lj_sysprof_jitexit(struct jit_State *J, const BCIns *pc);
#endif

#endif
