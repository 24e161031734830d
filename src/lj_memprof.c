/*
** Memory profiler.
**
** While a profile runs, the VM's allocator is replaced by one that calls
** the original and then writes the event. Where an event comes from is
** read from the VM state: internal, a Lua function and the line it runs,
** a C function, or a trace.
*/

#define lj_memprof_c
#define LUA_CORE

#include <errno.h>
#include <string.h>

#include "lj_memprof.h"
#include "lj_prof.h"
#include "lmisclib.h"

#if LJ_HASMEMPROF

#include "lj_debug.h"
#include "lj_frame.h"
#include "lj_proftrace.h"
#if LJ_HASJIT
#include "lj_jit.h"
#include "lj_dispatch.h"
#endif
#include "lj_symtab.h"
#include "lj_wbuf.h"

/* -- Profiler state ------------------------------------------------------ */

enum {
  MPS_IDLE,	/* No profile. */
  MPS_PROFILE,	/* Profiling. */
  MPS_HALT	/* The writer failed: stopped, stop() reports the error. */
};

/* Where an event comes from. */
typedef struct MemLoc {
  uint8_t source;	/* ASOURCE_*. */
  uint64_t addr;	/* Proto, C function, trace number or trace location. */
  uint64_t line;	/* Line, for Lua functions. */
  uint64_t traceno;	/* Trace, for Lua lines in a trace. */
} MemLoc;

/* The location of a trace's call site (stream version 4). */
#define TRACELINE_CACHE		64	/* Power of two. */
typedef struct TraceLine {
  uintptr_t ra;			/* Return address into a trace; 0: none. */
  uint64_t addr;		/* Trace location, or trace number. */
  uint8_t source;		/* ASOURCE_TRACE_LUA, or ASOURCE_TRACE. */
} TraceLine;

typedef struct MemProf {
  global_State *g;		/* Profiled VM. */
  int state;
  int version;			/* Of the stream: LJM_VERSION*. */
  int saved_errno;		/* Why the profile halted. */
  lua_Alloc allocf;		/* The VM's own allocator, */
  void *allocd;			/* and its state. */
  struct luam_Memprof_Options opt;
  struct lj_wbuf out;
  struct lj_symtab_objs objs;	/* ELF objects the stream names. */
  uint64_t ntraceloc;		/* Trace locations announced. */
  /* By return address; emptied when a trace appears (it may reuse the
  ** machine code of one that is gone): an address names one trace. */
  TraceLine tracelines[TRACELINE_CACHE];
} MemProf;

/* One profile per process: the allocator callback has no other context. */
static MemProf memprof;

/* The stream version of the next profile (luaM_memprof_set_format). */
static int next_version = LJM_VERSION_REFERENCE;

/* Largest event: header, two location and four payload numbers. */
#define MEMPROF_EVENT_MAX	(1 + 6*LJ_WBUF_ULEB_MAX)

/* -- Attribution --------------------------------------------------------- */

static void memprof_loclua(MemLoc *loc, lua_State *L, GCfunc *fn,
			   cTValue *nextframe)
{
  /* No line known (no PC saved yet, or the trace recorder at work): ljm
  ** v3 cannot say "unknown line", and line 0 would be a line that does
  ** not exist: the event is internal, as the reference has it. */
  BCLine line = lj_debug_frameline(L, fn, nextframe);
  if (line <= 0)
    return;
  loc->source = ASOURCE_LFUNC;
  loc->addr = (uintptr_t)funcproto(fn);
  loc->line = (uint64_t)line;
}

/* A function runs: name it from the top frame of the allocating coroutine.
** Anything that does not look like a frame is reported as internal. */
static void memprof_locfunc(MemLoc *loc, global_State *g)
{
  lua_State *L = gco2th(gcref(g->prof.mem_L));
  cTValue *frame;
  GCfunc *fn;
  if (L == NULL)
    return;
  frame = L->base - 1;
  if ((fn = lj_prof_framefunc(L, frame)) == NULL)
    return;
  if (isluafunc(fn)) {
    memprof_loclua(loc, L, fn, NULL);
  } else {
    /* A fast function called from Lua is charged to the calling line. */
    if (isffunc(fn) && frame_islua(frame)) {
      cTValue *pframe = frame_prevl(frame);
      GCfunc *pfn = lj_prof_framefunc(L, pframe);
      if (pfn != NULL && isluafunc(pfn)) {
	memprof_loclua(loc, L, pfn, frame);
	return;
      }
    }
    loc->source = ASOURCE_CFUNC;
    loc->addr = (uintptr_t)fn->c.f;
  }
}

#if LJ_HASJIT
/* A trace location is announced once, with the next number, and events
** name it by that number: about as few bytes as a trace number. */
static void memprof_announce(MemProf *mp, MemLoc *loc, const GCproto *pt)
{
  struct lj_wbuf *out = &mp->out;
  uint8_t *p;
  lj_wbuf_reserve(out, 1 + 4*LJ_WBUF_ULEB_MAX);
  p = out->pos;
  *p++ = AEVENT_SYMTAB | ASOURCE_TRACE_LUA;
  p = lj_wbuf_uleb(p, mp->ntraceloc);
  p = lj_wbuf_uleb(p, loc->traceno);
  p = lj_wbuf_uleb(p, (uintptr_t)pt);
  p = lj_wbuf_uleb(p, loc->line);
  out->pos = p;
  loc->addr = mp->ntraceloc++;
}

/* A trace allocates: the line it runs there, from the return address of
** the C code it called (stream version 4). Left as the trace if the trace
** cannot tell. */
static void memprof_tracelua(MemLoc *loc, global_State *g, lua_State *L,
			     GCtrace *T, uintptr_t ra)
{
  const GCproto *pts[LJ_PROFTRACE_MAXFRAMES];
  const BCIns *pcs[LJ_PROFTRACE_MAXFRAMES];
  const GCproto *pt;
  BCLine line;
  int n = lj_proftrace_frames(T, ra - 1, pts, pcs);  /* In the call. */
  if (n == 0)
    return;
  if (n > 1) {  /* In a function the trace inlined. */
    pt = pts[0];
  } else {  /* In the function the trace was entered in. */
    TValue *base = tvref(g->jit_base);
    GCfunc *fn = base != NULL ? lj_prof_framefunc(L, base-1) : NULL;
    if (fn == NULL || !isluafunc(fn))
      return;
    pt = funcproto(fn);
  }
  if ((line = lj_proftrace_line(pt, pcs[0])) <= 0)
    return;
  loc->source = ASOURCE_TRACE_LUA;
  loc->line = (uint64_t)line;
  memprof_announce(&memprof, loc, pt);
}

/* A trace runs with the stack pointer below the interpreter's C frame by
** what the JIT adds to it (CFRAME_SIZE_JIT) and the trace's own spill
** area; a call pushes the return address just below that. 0 if the slot
** does not hold one (then T is not what called). */
static LJ_AINLINE uintptr_t memprof_retaddr(const GCtrace *T, const void *cf)
{
  const char *sp = (const char *)cf - (CFRAME_SIZE_JIT - CFRAME_SIZE) -
		   T->spadjust;
  uintptr_t ra = ((const uintptr_t *)sp)[-1];
  return ra - (uintptr_t)T->mcode < T->szmcode ? ra : 0;
}

/* A trace allocates from few call sites, each always at the same line:
** the answer is kept by return address. Once per event: kept short. */
static void memprof_loctrace(MemLoc *loc, global_State *g, int32_t traceno)
{
  GCtrace *T = traceref(G2J(g), traceno);
  lua_State *L = gco2th(gcref(g->cur_L));
  TraceLine *tl;
  uintptr_t ra;
  if (LJ_UNLIKELY(T == NULL || L->cframe == NULL))
    return;
  ra = memprof_retaddr(T, cframe_raw(L->cframe));
  if (LJ_UNLIKELY(ra == 0))
    return;
  tl = &memprof.tracelines[(ra ^ (ra >> 7)) & (TRACELINE_CACHE-1)];
  if (LJ_UNLIKELY(tl->ra != ra)) {
    memprof_tracelua(loc, g, L, T, ra);
    tl->ra = ra;
    tl->source = loc->source;
    tl->addr = loc->addr;
  }
  loc->source = tl->source;
  loc->addr = tl->addr;
}
#endif

static void memprof_locate(MemLoc *loc, global_State *g)
{
  int32_t st = g->vmstate;
  loc->source = ASOURCE_INT;
  if (lj_prof_intrace(st)) {
    loc->source = ASOURCE_TRACE;
    loc->addr = loc->traceno = (uint64_t)st;
#if LJ_HASJIT
    if (memprof.version >= 4)
      memprof_loctrace(loc, g, st);
#endif
  } else if (st == ~LJ_VMST_LFUNC || st == ~LJ_VMST_FFUNC ||
	     st == ~LJ_VMST_CFUNC) {
    memprof_locfunc(loc, g);
  }
}

/* -- Event stream -------------------------------------------------------- */

static void memprof_halt(MemProf *mp);

/* Header and location of an event; returns where its payload goes. */
static LJ_AINLINE uint8_t *memprof_event(MemProf *mp, uint8_t aevent,
					 const MemLoc *loc)
{
  struct lj_wbuf *out = &mp->out;
  uint8_t *p;
  if (loc->source == ASOURCE_CFUNC)  /* New objects are named first. */
    lj_symtab_newobjs(out, &mp->objs, AEVENT_SYMTAB | ASOURCE_CFUNC);
  lj_wbuf_reserve(out, MEMPROF_EVENT_MAX);
  p = out->pos;
  *p++ = aevent | loc->source;
  if (loc->source != ASOURCE_INT)
    p = lj_wbuf_uleb(p, loc->addr);
  if (loc->source == ASOURCE_LFUNC)
    p = lj_wbuf_uleb(p, loc->line);
  return p;
}

static void *memprof_allocf(void *ud, void *ptr, size_t osize, size_t nsize)
{
  MemProf *mp = &memprof;
  void *nptr = mp->allocf(ud, ptr, osize, nsize);
  uint8_t aevent, *p;
  MemLoc loc;
  if (nsize != 0 && nptr == NULL)
    return NULL;  /* Out of memory: nothing happened. */
  aevent = nsize == 0 ? AEVENT_FREE :
	   ptr == NULL ? AEVENT_ALLOC : AEVENT_REALLOC;
  memprof_locate(&loc, mp->g);
  p = memprof_event(mp, aevent, &loc);
  if (aevent & AEVENT_FREE) {  /* A realloc is a free and an alloc. */
    p = lj_wbuf_uleb(p, (uintptr_t)ptr);
    p = lj_wbuf_uleb(p, osize);
  }
  if (aevent & AEVENT_ALLOC) {
    p = lj_wbuf_uleb(p, (uintptr_t)nptr);
    p = lj_wbuf_uleb(p, nsize);
  }
  mp->out.pos = p;
  if (LJ_UNLIKELY(lj_wbuf_failed(&mp->out)))
    memprof_halt(mp);
  return nptr;
}

/* -- Start and stop ------------------------------------------------------ */

static void memprof_release(MemProf *mp)
{
  mp->g->allocf = mp->allocf;
  mp->g->allocd = mp->allocd;
  lj_symtab_freeobjs(&mp->objs);
}

/* The writer failed or ended the stream: stop, keep the program running. */
static void memprof_halt(MemProf *mp)
{
  memprof_release(mp);
  mp->saved_errno = mp->out.saved_errno;
  mp->opt.on_stop(mp->opt.ctx, mp->out.buf);
  mp->state = MPS_HALT;
}

LUA_API int luaM_memprof_set_format(int format)
{
  if (format != LUAM_MEMPROF_V3 && format != LUAM_MEMPROF_V4)
    return PROFILE_ERRUSE;
  if (memprof.state != MPS_IDLE)
    return PROFILE_ERRRUN;
  next_version = format;
  return PROFILE_SUCCESS;
}

LUA_API int luaM_memprof_start(lua_State *L,
			       const struct luam_Memprof_Options *opt)
{
  return lj_memprof_start(L, opt, next_version);
}

int lj_memprof_start(lua_State *L, const struct luam_Memprof_Options *opt,
		     int version)
{
  uint8_t prologue[] = { 'l', 'j', 'm', 0, 0, 0, 0 };
  MemProf *mp = &memprof;
  global_State *g = G(L);
  if (opt == NULL || opt->writer == NULL || opt->on_stop == NULL ||
      opt->buf == NULL || opt->len < 1024)
    return PROFILE_ERRUSE;
  if (mp->state != MPS_IDLE)
    return PROFILE_ERRRUN;
  mp->g = g;
  mp->opt = *opt;
  mp->saved_errno = 0;
  mp->version = version;
  memset(mp->tracelines, 0, sizeof(mp->tracelines));
  mp->ntraceloc = 0;
  prologue[3] = (uint8_t)mp->version;
  lj_wbuf_init(&mp->out, opt->writer, opt->ctx, opt->buf, opt->len);
  lj_symtab_dump(&mp->out, g, &mp->objs);
  lj_wbuf_addn(&mp->out, prologue, sizeof(prologue));
  if (lj_wbuf_failed(&mp->out)) {
    int err = mp->out.saved_errno;
    lj_symtab_freeobjs(&mp->objs);
    opt->on_stop(opt->ctx, mp->out.buf);
    errno = err;
    return PROFILE_ERRIO;
  }
  mp->allocf = g->allocf;
  mp->allocd = g->allocd;
  g->allocf = memprof_allocf;
  mp->state = MPS_PROFILE;
  lj_prof_forkguard();
  return PROFILE_SUCCESS;
}

LUA_API int luaM_memprof_stop(lua_State *L)
{
  MemProf *mp = &memprof;
  struct lj_wbuf *out = &mp->out;
  int err, cbfail;
  if (mp->state == MPS_IDLE || mp->g != G(L))
    return PROFILE_ERRRUN;
  if (mp->state == MPS_HALT) {
    mp->state = MPS_IDLE;
    if (mp->saved_errno == 0)
      return PROFILE_SUCCESS;  /* The writer ended the stream itself. */
    errno = mp->saved_errno;
    return PROFILE_ERRIO;
  }
  memprof_release(mp);
  lj_wbuf_addbyte(out, LJM_EPILOGUE_HEADER);
  lj_wbuf_flush(out);
  err = out->saved_errno;
  cbfail = mp->opt.on_stop(mp->opt.ctx, out->buf);
  mp->state = MPS_IDLE;
  if (err != 0 || cbfail) {
    if (err != 0)
      errno = err;
    return PROFILE_ERRIO;
  }
  return PROFILE_SUCCESS;
}

/* -- Hooks for the VM ---------------------------------------------------- */

static LJ_AINLINE int memprof_running(global_State *g)
{
  return memprof.state == MPS_PROFILE && memprof.g == g;
}

void lj_memprof_addproto(global_State *g, const GCproto *pt)
{
  if (memprof_running(g)) {
    lj_symtab_writeproto(&memprof.out, AEVENT_SYMTAB | ASOURCE_LFUNC, pt);
    if (LJ_UNLIKELY(lj_wbuf_failed(&memprof.out)))
      memprof_halt(&memprof);
  }
}

#if LJ_HASJIT
void lj_memprof_addtrace(global_State *g, const GCtrace *T)
{
  if (memprof_running(g)) {
    memset(memprof.tracelines, 0, sizeof(memprof.tracelines));
    lj_symtab_writetrace(&memprof.out, AEVENT_SYMTAB | ASOURCE_TRACE, T);
    if (LJ_UNLIKELY(lj_wbuf_failed(&memprof.out)))
      memprof_halt(&memprof);
  }
}
#endif

void lj_memprof_close(global_State *g)
{
  if (memprof.state != MPS_IDLE && memprof.g == g)
    luaM_memprof_stop(mainthread(g));
}

int lj_memprof_busy(void)
{
  return memprof.state != MPS_IDLE;
}

/* The child of a fork(): the profile stays the parent's. Its allocations
** go to the VM's own allocator again, unrecorded; the writer and on_stop
** are not called (the writer's state is the parent's). */
void lj_memprof_forked(void)
{
  if (memprof.state == MPS_PROFILE)
    memprof_release(&memprof);
  memprof.state = MPS_IDLE;
}

void lj_memprof_exit(void *ctx)
{
  if (memprof.state == MPS_PROFILE && ctx != NULL && memprof.opt.ctx == ctx)
    luaM_memprof_stop(mainthread(memprof.g));
}

#else /* !LJ_HASMEMPROF */

LJ_PROF_OFF(memprof)

LUA_API int luaM_memprof_set_format(int format)
{
  UNUSED(format);
  return PROFILE_ERRUSE;
}

int lj_memprof_start(lua_State *L, const struct luam_Memprof_Options *opt,
		     int version)
{
  UNUSED(L); UNUSED(opt); UNUSED(version);
  return PROFILE_ERRUSE;
}

LUA_API int luaM_memprof_start(lua_State *L,
			       const struct luam_Memprof_Options *opt)
{
  UNUSED(L); UNUSED(opt);
  return PROFILE_ERRUSE;
}

LUA_API int luaM_memprof_stop(lua_State *L)
{
  UNUSED(L);
  return PROFILE_ERRUSE;
}

#endif
