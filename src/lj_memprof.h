/*
** Memory profiler: every allocation, reallocation and free of the VM,
** with the place that caused it, as a `ljs` + `ljm` stream.
*/

#ifndef _LJ_MEMPROF_H
#define _LJ_MEMPROF_H

#include "lj_obj.h"

/* The VM states it relies on are split in the x64 interpreter only. */
#if LJ_TARGET_X64 && LJ_TARGET_LINUX && LJ_GC64 && \
    !defined(LUAJIT_DISABLE_MEMPROF)
#define LJ_HASMEMPROF		1
#else
#define LJ_HASMEMPROF		0
#endif

/* Stream versions: 3 is the reference's; 4 adds ASOURCE_TRACE_LUA. */
#define LJM_VERSION_REFERENCE	3
#define LJM_VERSION		4

/* Event header: [F UU SSS EE], high bit to low. */
#define AEVENT_SYMTAB		((uint8_t)0)
#define AEVENT_ALLOC		((uint8_t)1)
#define AEVENT_FREE		((uint8_t)2)
#define AEVENT_REALLOC		((uint8_t)(AEVENT_ALLOC | AEVENT_FREE))

#define ASOURCE_INT		((uint8_t)(1 << 2))
#define ASOURCE_LFUNC		((uint8_t)(2 << 2))
#define ASOURCE_CFUNC		((uint8_t)(3 << 2))
#define ASOURCE_TRACE		((uint8_t)(4 << 2))
#define ASOURCE_TRACE_LUA	((uint8_t)(5 << 2))	/* Trace location. */

#define LJM_EPILOGUE_HEADER	((uint8_t)0x80)

struct GCtrace;
struct luam_Memprof_Options;

/* luaM_memprof_start with the stream version given (LJM_VERSION*), not
** the one luaM_memprof_set_format chose for the C API. */
LJ_FUNC int lj_memprof_start(lua_State *L,
			     const struct luam_Memprof_Options *opt,
			     int version);

/* Through lj_prof.h: code that appears while profiling is announced. */
LJ_FUNC void lj_memprof_addproto(global_State *g, const GCproto *pt);
#if LJ_HASJIT
LJ_FUNC void lj_memprof_addtrace(global_State *g, const struct GCtrace *T);
#endif
/* lua_close: stop a profile of this VM and complete its stream. */
LJ_FUNC void lj_memprof_close(global_State *g);

/* A profile holds the profiler: running, or halted until stop() is called. */
LJ_FUNC int lj_memprof_busy(void);
/* Process exit: complete the profile whose writer context is ctx, if any. */
LJ_FUNC void lj_memprof_exit(void *ctx);
/* In the child of a fork(): forget the parent's profile (lj_prof.h). */
LJ_FUNC void lj_memprof_forked(void);

#endif
