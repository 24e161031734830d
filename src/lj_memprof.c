/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Memory profiler.
**
** While a profile runs, the VM's allocator is replaced by one that calls
** the original and then writes the event; a sampled profile's counts the
** bytes and writes only the samples (lj_profmem.h). Without a profile the
** VM's allocation path is upstream's. A profile per VM, several VMs at
** once. Where an event comes from is read from the VM state: internal, a
** Lua function and the line it runs, a C function, or a trace. With
** stacks, each allocation also names its call stack (lj_memstack.c).
*/

#define _GNU_SOURCE
#define lj_memprof_c
#define LUA_CORE

#include <errno.h>
#include <stdatomic.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include "lj_memprof.h"
#include "lj_memstack.h"
#include "lj_prof.h"
#include "lj_profmem.h"
#include "lmisclib.h"

/* -- Configuration ------------------------------------------------------- */

/* In every build: the entry points check options before they know it has
** no profiler. The defaults: lj_memprof.h says why v3. */
#define MEMPROF_DEFAULTS \
  { 0, LJM_VERSION_REFERENCE, 0, 0, 0, LJM_BUDGET, NULL }

void lj_memprof_defaults(MemprofConfig *cfg)
{
  static const MemprofConfig dflt = MEMPROF_DEFAULTS;
  *cfg = dflt;
}

const char *lj_memprof_check(MemprofConfig *cfg)
{
  int v = cfg->format != 0 ? cfg->format : cfg->version;
  if (v < LJM_VERSION_REFERENCE || v > LJM_VERSION_LABELS)
    return "format must be \"v3\", \"v4\", \"v5\" or \"v6\"";
  if (cfg->sample > LJM_SAMPLE_MAX)
    return "sample must be at most 2^40 bytes";
  if (cfg->budget < LJM_BUDGET_MIN || cfg->budget > LJM_BUDGET_MAX)
    return "stack_budget must be from 2^20 to 2^40 bytes";
  /* Samples carry their stacks; native frames are in stacks. */
  cfg->native = cfg->native != 0;
  cfg->stacks = cfg->stacks || cfg->native || cfg->sample != 0;
  if (cfg->stacks) {  /* Stacks are version 5's, and 6's with labels. */
    if (cfg->format != 0 && cfg->format < LJM_VERSION_STACKS)
      return "stacks, native and sample need format \"v5\" or \"v6\"";
    v = cfg->format != 0 ? cfg->format : LJM_VERSION_LABELS;
  }
  cfg->version = v;
  return NULL;
}

#if LJ_HASMEMPROF

#include "lj_debug.h"
#include "lj_frame.h"
#include "lj_profframe.h"
#include "lj_profhost.h"
#include "lj_proflabel.h"
#include "lj_dispatch.h"
#include "lj_proftrace.h"
#include "lj_profunwind.h"
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
  uint64_t addr;	/* Proto, C function, trace number, trace location or
			** the VM's kind (LJM_VM_*). */
  uint64_t line;	/* Line, for Lua functions and the compiler's. */
  uint64_t traceno;	/* Trace, for Lua lines in a trace, the compiler's. */
  uint64_t pt;		/* Proto the compiler's trace starts in. */
  struct TraceSite *site;  /* Its call site, for one in a trace. */
} MemLoc;

/* -- Tables of its own --------------------------------------------------- */

#define SAMPLED_SLOTS	(1u << 12)	/* Sampled blocks: first table, */
#define SAMPLED_MAXSLOTS (1u << 22)	/* the largest it grows to. */

/* Addresses of the sampled blocks still allocated, to record their frees
** and reallocs: open addressing, removal by backward shift. */
typedef struct SampledSet {
  uintptr_t *slots;	/* 0: empty. */
  uint32_t mask, count;
} SampledSet;

/* What a sampled profile counts, for the stats record at its end. */
typedef struct MemStats {
  uint64_t samples;	/* Sampled allocations. */
  uint64_t untracked;	/* Sampled blocks the set had no room for. */
} MemStats;

/* A trace's call site, by the return address of its call out: its
** location (stream version 4), and the frames it runs there for stacks. */
#define TRACESITE_BITS		8
#define TRACESITE_CACHE		(1 << TRACESITE_BITS)
#define TRACESITE_MAX		(TRACESITE_CACHE*3/4)  /* Then emptied. */
typedef struct TraceSite {
  MemStackSite st;		/* Its return address, and frames. */
  uint64_t addr;		/* Trace location, or trace number. */
  uint8_t source;		/* ASOURCE_TRACE_LUA, or ASOURCE_TRACE. */
} TraceSite;

typedef struct Memprof {
  global_State *g;		/* Profiled VM; NULL while idle. */
  _Atomic int state;		/* Claimed by any thread that starts one. */
  int version;			/* Of the stream: LJM_VERSION*. */
  MemprofConfig cfg;
  char follow[LJ_PROF_FOLLOWMAX];  /* cfg.follow's, absolute. */
  MemStacks stacks;		/* With stacks: the call stacks. */
  SampledSet sampled;
  MemStats stats;
  uint8_t filter[1u << LJ_PROFMEM_FILTER_BITS];  /* Sampled blocks, by
					** bucket (lj_profmem.h). */
  int64_t left;			/* Sampled: bytes to the next sample. */
  uint64_t rng;			/* xorshift64* state. */
  int saved_errno;		/* Why the profile halted. */
  lua_Alloc allocf;		/* The VM's own allocator, */
  void *allocd;			/* and its state. */
  struct luam_Memprof_Options opt;
  struct lj_wbuf out;
  struct lj_symtab_objs objs;	/* ELF objects the stream names. */
  uint64_t ntraceloc;		/* Trace locations announced. */
  int64_t mark_left;		/* Events to write before the clock is read. */
  uint64_t t0, tmark;		/* Start, last mark: monotonic ns. */
  /* By return address, open addressing; emptied when a trace appears (it
  ** may reuse the machine code of one that is gone): an address names one
  ** trace. */
  TraceSite tracesites[TRACESITE_CACHE];
  uint32_t ntracesites;
  ProfLabels labels;		/* v6: the label sets announced, */
  uint8_t labelbuf[PROFLABEL_BYTES];  /* and their records, encoded: the
				  ** buffer may be smaller (1 KB). */
#if LJ_TARGET_ARM64 && LJ_HASJIT
  /* The code the C frames between a trace and the allocator lie in
  ** (memprof_retaddr). */
  ProfUnwObjs unw;
  ProfUnwCache unwcache;
#endif
} Memprof;

/* A profile per VM, up to MEMPROF_SLOTS at once: the allocator wrapper
** gets its own as its state. A slot is the VM's until stop() is called. */
#define MEMPROF_SLOTS		8
static Memprof memprof[MEMPROF_SLOTS];

/* The profile of VM g, running or halted; NULL if none. */
static Memprof *memprof_of(global_State *g)
{
  int i;
  for (i = 0; i < MEMPROF_SLOTS; i++)
    if (memprof[i].state != MPS_IDLE && memprof[i].g == g)
      return &memprof[i];
  return NULL;
}

/* A slot for a new profile, taken; NULL if every one is. */
static Memprof *memprof_claim(void)
{
  int i;
  for (i = 0; i < MEMPROF_SLOTS; i++) {
    int expect = MPS_IDLE;
    if (atomic_compare_exchange_strong(&memprof[i].state, &expect, MPS_HALT))
      return &memprof[i];
  }
  return NULL;
}

static void memprof_unclaim(Memprof *mp)
{
  mp->g = NULL;
  mp->state = MPS_IDLE;
}

/* Largest event: header, four location numbers (the compiler's), a stack
** id, four payload numbers and a weight. */
#define MEMPROF_EVENT_MAX	(1 + 10*LJ_WBUF_ULEB_MAX)

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

/* All trace sites forgotten: at the start, when a trace appears, when too
** many are kept. */
static void memprof_emptysites(Memprof *mp)
{
  memset(mp->tracesites, 0, sizeof(mp->tracesites));
  mp->ntracesites = 0;
}

/* Code appeared (MEMSTACK_PROTO, _TRACE), maybe where dead code was: what
** names code by its address forgets the dead one. A trace's machine code
** may be a dead trace's: its sites go. */
static void memprof_forget(Memprof *mp, int what)
{
  if (what == MEMSTACK_TRACE)
    memprof_emptysites(mp);
  lj_memstack_forget(&mp->stacks, what);
}

#if LJ_HASJIT
/* A trace location is announced once, with the next number, and events
** name it by that number: about as few bytes as a trace number. */
static void memprof_announce(Memprof *mp, MemLoc *loc, const GCproto *pt)
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
static void memprof_tracelua(Memprof *mp, MemLoc *loc, lua_State *L,
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
    TValue *base = tvref(mp->g->jit_base);
    GCfunc *fn = base != NULL ? lj_prof_framefunc(L, base-1) : NULL;
    if (fn == NULL || !isluafunc(fn))
      return;
    pt = funcproto(fn);
  }
  if ((line = lj_proftrace_line(pt, pcs[0])) <= 0)
    return;
  loc->source = ASOURCE_TRACE_LUA;
  loc->line = (uint64_t)line;
  memprof_announce(mp, loc, pt);
}

#if LJ_TARGET_ARM64
#define RETADDR_STEPS		16	/* C frames between trace and here. */

/* A call leaves its return address in the link register, which the callee
** saves where its own frame says: the C frames from here up to the trace
** are unwound (on the stack up to the interpreter's C frame cf) to the
** first return address in T's code. 0 if none is found (then T is not
** what called). */
static uintptr_t memprof_retaddr(Memprof *mp, const GCtrace *T,
				 const void *cf)
{
  ProfUnwStack stk;
  ProfUnwRegs r;
  int i;
  lj_profunwind_here(&r);
  stk.lo = r.sp;
  stk.hi = (uintptr_t)cf + CFRAME_SIZE;
  stk.probe = NULL;
  for (i = 0; i < RETADDR_STEPS &&
	      lj_profunwind_step(&mp->unw, &mp->unwcache, &stk, &r); i++)
    if (r.ip - (uintptr_t)T->mcode < T->szmcode)
      return r.ip;
  return 0;
}
#else
/* A trace runs with the stack pointer below the interpreter's C frame by
** what the JIT adds to it (CFRAME_SIZE_JIT) and the trace's own spill
** area; a call pushes the return address just below that. 0 if the slot
** does not hold one (then T is not what called). */
static LJ_AINLINE uintptr_t memprof_retaddr(Memprof *mp, const GCtrace *T,
					    const void *cf)
{
  const char *sp = (const char *)cf - (CFRAME_SIZE_JIT - CFRAME_SIZE) -
		   T->spadjust;
  uintptr_t ra = ((const uintptr_t *)sp)[-1];
  UNUSED(mp);
  return ra - (uintptr_t)T->mcode < T->szmcode ? ra : 0;
}
#endif

/* The slot of the site at return address ra, or an empty one for it (all
** emptied if they are too many). */
static LJ_AINLINE TraceSite *memprof_tracesite(Memprof *mp, uintptr_t ra)
{
  uint32_t i = (uint32_t)(((uint64_t)ra * 0x9e3779b97f4a7c15ull) >>
			  (64 - TRACESITE_BITS));
  TraceSite *ts;
  while ((ts = &mp->tracesites[i])->st.ra != ra) {
    if (ts->st.ra == 0) {
      if (LJ_UNLIKELY(++mp->ntracesites > TRACESITE_MAX)) {
	memprof_emptysites(mp);
	return memprof_tracesite(mp, ra);
      }
      break;
    }
    i = (i+1) & (TRACESITE_CACHE-1);
  }
  return ts;
}

/* A trace allocates from few call sites, each always at the same line:
** the answer is kept by return address. Once per event: kept short. */
static LJ_AINLINE void memprof_loctrace(Memprof *mp, MemLoc *loc,
					 int32_t traceno)
{
  global_State *g = mp->g;
  GCtrace *T = traceref(G2J(g), traceno);
  lua_State *L = gco2th(gcref(g->cur_L));
  TraceSite *ts;
  uintptr_t ra;
  if (LJ_UNLIKELY(T == NULL || L->cframe == NULL))
    return;
  ra = memprof_retaddr(mp, T, cframe_raw(L->cframe));
  if (LJ_UNLIKELY(ra == 0))
    return;
  /* A miss reads the trace's map (thousands of instructions): no site may
  ** push out another that is met in turn. A set-associative cache did, in
  ** some runs of alloc_tree and not others, as the code's address fell:
  ** three sites in a set of two ways missed at every event. */
  ts = memprof_tracesite(mp, ra);
  if (LJ_UNLIKELY(ts->st.ra != ra)) {
    memprof_tracelua(mp, loc, L, T, ra);
    ts->st.ra = ra;
    ts->st.n = 0;
    ts->source = loc->source;
    ts->addr = loc->addr;
  }
  loc->source = ts->source;
  loc->addr = ts->addr;
  loc->site = ts;
}
#endif

#if LJ_HASJIT
/* The compiler at work: the trace it compiles, where it starts. Its
** number is 0 before trace_start gives it one and once it is aborted (its
** start proto may then be gone: not read); its start PC is set up by the
** recorder. */
static void memprof_locjit(MemLoc *loc, global_State *g)
{
  jit_State *J = G2J(g);
  const BCIns *pc = mref(J->cur.startpc, const BCIns);
  BCLine line;
  loc->traceno = J->cur.traceno;
  loc->pt = 0;
  loc->line = LJM_LINE_UNKNOWN;
  if (J->cur.traceno == 0 || gcref(J->cur.startpt) == NULL)
    return;
  loc->pt = (uintptr_t)gcref(J->cur.startpt);
  if (pc != NULL &&
      (line = lj_proftrace_line(&gcref(J->cur.startpt)->pt, pc+1)) >= 0)
    loc->line = (uint64_t)line;
}
#endif

/* The VM's own (stream version 4): of a kind, where one is known. A stack
** being moved is the only realloc of the coroutine's stack in INTERP
** (lj_state.c's resizestack). */
static LJ_NOINLINE void memprof_locvm(MemLoc *loc, global_State *g,
				      int32_t st, const void *ptr)
{
  uint64_t kind;
  if (st == ~LJ_VMST_GC) {
    kind = LJM_VM_GC;
  } else if (st == ~LJ_VMST_EXIT) {
    kind = LJM_VM_EXIT;
#if LJ_HASJIT
  } else if (st == ~LJ_VMST_RECORD || st == ~LJ_VMST_OPT ||
	     st == ~LJ_VMST_ASM) {
    kind = st == ~LJ_VMST_RECORD ? LJM_VM_RECORD :
	   st == ~LJ_VMST_OPT ? LJM_VM_OPT : LJM_VM_ASM;
    memprof_locjit(loc, g);
#endif
  } else {
    lua_State *L = gco2th(gcref(g->prof.mem_L));
    if (ptr == NULL || L == NULL || ptr != tvref(L->stack))
      return;
    kind = LJM_VM_STACK;
  }
  loc->source = ASOURCE_VM;
  loc->addr = kind;
}

/* Where the event comes from; ptr: the block it frees or reallocates. The
** VM's own kinds are for what it allocates (alloc and realloc): a free is
** charged to the block's owner by the reader, and most are the GC's. */
static LJ_AINLINE void memprof_locate(Memprof *mp, MemLoc *loc,
				      uint8_t aevent, const void *ptr)
{
  global_State *g = mp->g;
  int32_t st = g->vmstate;
  loc->source = ASOURCE_INT;
  loc->site = NULL;
  if (lj_prof_intrace(st)) {
    loc->source = ASOURCE_TRACE;
    loc->addr = loc->traceno = (uint64_t)st;
#if LJ_HASJIT
    if (mp->version >= LJM_VERSION)
      memprof_loctrace(mp, loc, st);
#endif
  } else if (st == ~LJ_VMST_LFUNC || st == ~LJ_VMST_FFUNC ||
	     st == ~LJ_VMST_CFUNC) {
    memprof_locfunc(loc, g);
  } else if ((aevent & AEVENT_ALLOC) && mp->version >= LJM_VERSION) {
    memprof_locvm(loc, g, st, ptr);
  }
}

/* -- Sampled blocks ------------------------------------------------------ */

void *lj_memprof_map(size_t sz)
{
  void *p = mmap(NULL, sz, PROT_READ|PROT_WRITE,
		 MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static LJ_AINLINE uint32_t sampled_home(const SampledSet *s, uintptr_t a)
{
  return (uint32_t)(((uint64_t)a * 0x9e3779b97f4a7c15ull) >> 32) & s->mask;
}

static void sampled_put(SampledSet *s, uintptr_t a)
{
  uint32_t i = sampled_home(s, a);
  while (s->slots[i] != 0)
    i = (i+1) & s->mask;
  s->slots[i] = a;
  s->count++;
}

/* Double the table, up to SAMPLED_MAXSLOTS; 0 if it cannot grow. */
static int sampled_grow(SampledSet *s)
{
  SampledSet n;
  uint32_t i;
  if (s->mask+1 >= SAMPLED_MAXSLOTS ||
      (n.slots = lj_memprof_map(2*(s->mask+1)*sizeof(uintptr_t))) ==
      NULL)
    return 0;
  n.mask = 2*s->mask+1;
  n.count = 0;
  for (i = 0; i <= s->mask; i++)
    if (s->slots[i] != 0)
      sampled_put(&n, s->slots[i]);
  munmap(s->slots, (s->mask+1)*sizeof(uintptr_t));
  *s = n;
  return 1;
}

/* Track a sampled block; counted as untracked when the set is full. A
** bucket of the filter counts its blocks, up to 255: then it stays. */
static void sampled_add(Memprof *mp, void *p)
{
  SampledSet *s = &mp->sampled;
  uint8_t *f = &mp->filter[lj_profmem_bucket(p)];
  if (2*(s->count+1) > s->mask+1 && !sampled_grow(s)) {
    mp->stats.untracked++;
    return;
  }
  sampled_put(s, (uintptr_t)p);
  if (*f != 255)
    (*f)++;
}

/* Forget a block; 0 if it is not a sampled one. Removal shifts the rest of
** its run back, so that no lookup stops early at the hole. */
static int sampled_del(Memprof *mp, uintptr_t a)
{
  SampledSet *s = &mp->sampled;
  uint8_t *f = &mp->filter[lj_profmem_bucket((void *)a)];
  uint32_t i = sampled_home(s, a), j, k;
  while (s->slots[i] != a) {
    if (s->slots[i] == 0)
      return 0;
    i = (i+1) & s->mask;
  }
  if (*f != 255)
    (*f)--;
  for (j = i;;) {
    j = (j+1) & s->mask;
    if (s->slots[j] == 0)
      break;
    k = sampled_home(s, s->slots[j]);
    if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
      continue;  /* Its home lies after the hole: it stays. */
    s->slots[i] = s->slots[j];
    i = j;
  }
  s->slots[i] = 0;
  s->count--;
  return 1;
}

/* -- Sampling ------------------------------------------------------------ */

static uint64_t sample_rand(Memprof *mp)
{
  uint64_t x = mp->rng;  /* xorshift64*. */
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  mp->rng = x;
  return x * 0x2545f4914f6cdd1dull;
}

/* Bytes to the next sample, drawn from an exponential distribution of mean
** cfg.sample: every byte allocated has the same chance to be the one
** sampled, whatever came before, so an allocation of n bytes is sampled
** with probability 1 - exp(-n/sample), and estimates are unbiased. */
static void sample_next(Memprof *mp)
{
  double u = ((double)(sample_rand(mp) >> 11) + 1.0) *
	     (1.0/9007199254740992.0);  /* In (0, 1]. */
  double d = -log(u) * (double)mp->cfg.sample;
  mp->left = d < 1.0 ? 1 : d > 4e18 ? (int64_t)4e18 : (int64_t)d;
}

/* The bytes a sampled allocation of n bytes stands for: n divided by the
** chance it had to be sampled. */
static uint64_t sample_weight(Memprof *mp, size_t n)
{
  double p = -expm1(-(double)n / (double)mp->cfg.sample);
  double w = p > 0.0 ? (double)n / p : (double)mp->cfg.sample;
  return w < (double)n ? (uint64_t)n : (uint64_t)(w + 0.5);
}

/* -- Event stream -------------------------------------------------------- */

static void memprof_halt(Memprof *mp);
static void memprof_mark(Memprof *mp);

/* Header, location and stack id of an event; returns where its payload
** goes. */
static LJ_AINLINE uint8_t *memprof_event(Memprof *mp, uint8_t aevent,
					 const MemLoc *loc, uint32_t stack)
{
  struct lj_wbuf *out = &mp->out;
  uint8_t *p;
  if (loc->source == ASOURCE_CFUNC)  /* New objects are named first. */
    lj_symtab_newobjs(out, &mp->objs, AEVENT_SYMTAB | ASOURCE_CFUNC);
  lj_wbuf_reserve(out, MEMPROF_EVENT_MAX);
  p = out->pos;
  if (stack != MEMSTACK_NONE)
    aevent |= AFLAG_STACK;
  *p++ = aevent | loc->source;
  if (loc->source != ASOURCE_INT)
    p = lj_wbuf_uleb(p, loc->addr);
  if (loc->source == ASOURCE_LFUNC) {
    p = lj_wbuf_uleb(p, loc->line);
  } else if (LJ_UNLIKELY(loc->source == ASOURCE_VM) &&
	     loc->addr <= LJM_VM_ASM) {  /* The compiler's trace. */
    p = lj_wbuf_uleb(p, loc->traceno);
    p = lj_wbuf_uleb(p, loc->pt);
    p = lj_wbuf_uleb(p, loc->line);
  }
  if (stack != MEMSTACK_NONE)
    p = lj_wbuf_uleb(p, stack);
  return p;
}

/* An event written up to p: the time marks' count, the writer's state. */
static LJ_AINLINE void memprof_written(Memprof *mp, uint8_t *p)
{
  mp->out.pos = p;
  if (LJ_UNLIKELY(--mp->mark_left <= 0))
    memprof_mark(mp);
  if (LJ_UNLIKELY(lj_wbuf_failed(&mp->out)))
    memprof_halt(mp);
}

/* v6: the records of a label set the event's coroutine switched to. */
static LJ_NOINLINE void memprof_labels(Memprof *mp, const lua_State *L)
{
  static const ProfLabelRecs recs = {
    { AEVENT_SYMTAB | ASOURCE_INFO, LJM_INFO_LABELSET },
    { AEVENT_SYMTAB | ASOURCE_INFO, LJM_INFO_LABELS }, 2, 1
  };
  ProfLabelSwitch sw;
  uint8_t *p = lj_proflabel_switch(&mp->labels, &recs, L, mp->labelbuf, &sw);
  lj_wbuf_addn(&mp->out, mp->labelbuf, (size_t)(p - mp->labelbuf));
  lj_proflabel_taken(&mp->labels, &sw);
}

/* Write one event. Allocations carry their stack when stacks are on; a
** sampled one (weight > 0) the bytes it stands for, and both, in v6, the
** label set in force. Inlined in
** memprof_allocev: as a call, with its spills, it cost 40 instructions
** more an event (of about 180). */
static LJ_AINLINE void memprof_write(Memprof *mp, uint8_t aevent,
				     void *ptr, size_t osize, void *nptr,
				     size_t nsize, uint64_t weight)
{
  uint32_t stack = MEMSTACK_NONE;
  uint8_t *p;
  MemLoc loc;
  memprof_locate(mp, &loc, aevent, ptr);
  if (mp->cfg.stacks && (aevent & AEVENT_ALLOC))
    stack = lj_memstack_id(&mp->stacks, loc.source == ASOURCE_INT ||
					loc.source == ASOURCE_VM,
			   loc.site != NULL ? &loc.site->st : NULL);
  if ((stack != MEMSTACK_NONE || weight) &&
      mp->version == LJM_VERSION_LABELS) {
    const lua_State *L = gco2th(gcref(mp->g->cur_L));
    if (LJ_UNLIKELY(lj_proflabel_id(L) != mp->labels.inforce))
      memprof_labels(mp, L);
  }
  p = memprof_event(mp, weight ? aevent | AFLAG_WEIGHT : aevent, &loc,
		    stack);
  if (aevent & AEVENT_FREE) {  /* A realloc is a free and an alloc. */
    p = lj_wbuf_uleb(p, (uintptr_t)ptr);
    p = lj_wbuf_uleb(p, osize);
  }
  if (aevent & AEVENT_ALLOC) {
    p = lj_wbuf_uleb(p, (uintptr_t)nptr);
    p = lj_wbuf_uleb(p, nsize);
  }
  if (weight)
    p = lj_wbuf_uleb(p, weight);
  memprof_written(mp, p);
}

/* The collector frees a block: internal, no stack (as memprof_write has
** it), and nothing to call but the VM's allocator. Most frees are these:
** written before the block is freed, the allocator then called last, no
** value has to live across a call. */
static LJ_AINLINE void memprof_gcfree(Memprof *mp, void *ptr, size_t osize)
{
  uint8_t *p;
  lj_wbuf_reserve(&mp->out, 1 + 2*LJ_WBUF_ULEB_MAX);
  p = mp->out.pos;
  *p++ = AEVENT_FREE | ASOURCE_INT;
  p = lj_wbuf_uleb(p, (uintptr_t)ptr);
  p = lj_wbuf_uleb(p, osize);
  memprof_written(mp, p);
}

/* lj_mem_free has no L and sets none (patches/0004): the coroutine that
** runs frees. */
static LJ_AINLINE void memprof_freer(Memprof *mp, size_t nsize)
{
  if (nsize == 0)
    setgcrefr(mp->g->prof.mem_L, mp->g->cur_L);
}

static LJ_NOINLINE void *memprof_allocev(Memprof *mp, void *ptr, size_t osize,
					  size_t nsize, uintptr_t ra)
{
  void *nptr = mp->allocf(mp->allocd, ptr, osize, nsize);
  if (nsize != 0 && nptr == NULL)
    return NULL;  /* Out of memory: nothing happened. */
  memprof_freer(mp, nsize);
  mp->stacks.allocra = ra;
  mp->stacks.gone = ptr;
  memprof_write(mp, nsize == 0 ? AEVENT_FREE :
		    ptr == NULL ? AEVENT_ALLOC : AEVENT_REALLOC,
		ptr, osize, nptr, nsize, 0);
  return nptr;
}

/* Both ways out are calls in tail position: the wrapper keeps nothing. */
static void *memprof_allocf(void *ud, void *ptr, size_t osize, size_t nsize)
{
  Memprof *mp = (Memprof *)ud;
  if (nsize == 0 && mp->g->vmstate == ~LJ_VMST_GC) {
    memprof_gcfree(mp, ptr, osize);
    return mp->allocf(mp->allocd, ptr, osize, 0);
  }
  return memprof_allocev(mp, ptr, osize, nsize,
			 (uintptr_t)__builtin_return_address(0));
}

/* Sampled: the allocation, then what is recorded: a sampled block's free,
** and the allocation sampled. A realloc is both: the old block's weight
** stood for blocks of its size, not of the new one (an array sampled at 16
** bytes and grown to 256 KB would stand for a thousand of those); its new
** bytes were counted like any others. */
static LJ_NOINLINE void *memprof_sampledev(Memprof *mp, void *ptr,
					   size_t osize, size_t nsize,
					   uintptr_t ra)
{
  void *nptr = mp->allocf(mp->allocd, ptr, osize, nsize);
  if (nsize != 0 && nptr == NULL)
    return NULL;  /* Out of memory: nothing happened. */
  memprof_freer(mp, nsize);
  mp->stacks.allocra = ra;
  mp->stacks.gone = ptr;
  if (ptr != NULL && lj_profmem_insample(mp->filter, ptr) &&
      sampled_del(mp, (uintptr_t)ptr))
    memprof_write(mp, AEVENT_FREE, ptr, osize, NULL, 0, 0);
  if (nsize != 0 && mp->left < 0 && mp->state == MPS_PROFILE) {
    uint64_t weight = sample_weight(mp, nsize);
    sample_next(mp);
    mp->stats.samples++;
    sampled_add(mp, nptr);
    memprof_write(mp, AEVENT_ALLOC, NULL, 0, nptr, nsize, weight);
  }
  return nptr;
}

/* A sampled profile's allocator: it counts the bytes, and leaves the VM's
** allocator only when the count ran out, or for a block that may be a
** sampled one. Swapped in at start and out at stop, as the unsampled
** one: a VM without a profile checks nothing. */
static void *memprof_samplef(void *ud, void *ptr, size_t osize, size_t nsize)
{
  Memprof *mp = (Memprof *)ud;
  if (LJ_UNLIKELY((mp->left -= (int64_t)nsize) < 0 ||
		  (ptr != NULL && lj_profmem_insample(mp->filter, ptr))))
    return memprof_sampledev(mp, ptr, osize, nsize,
			     (uintptr_t)__builtin_return_address(0));
  return mp->allocf(mp->allocd, ptr, osize, nsize);
}

/* -- Start and stop ------------------------------------------------------ */

static void memprof_freetables(Memprof *mp)
{
  lj_memstack_free(&mp->stacks);
  if (mp->sampled.slots != NULL)
    munmap(mp->sampled.slots, (mp->sampled.mask+1)*sizeof(uintptr_t));
  memset(&mp->sampled, 0, sizeof(mp->sampled));
}

/* The tables stacks and sampling need: 0 if they cannot be had. */
static int memprof_newtables(Memprof *mp)
{
  memset(&mp->stacks, 0, sizeof(mp->stacks));
  memset(&mp->sampled, 0, sizeof(mp->sampled));
  memset(&mp->stats, 0, sizeof(mp->stats));
  memset(mp->filter, 0, sizeof(mp->filter));
  if (mp->cfg.stacks &&
      !lj_memstack_init(&mp->stacks, mp->g, mp->cfg.native, mp->cfg.budget,
			&mp->out, &mp->objs))
    return 0;
  if (mp->cfg.sample) {
    if ((mp->sampled.slots =
	 lj_memprof_map(SAMPLED_SLOTS*sizeof(uintptr_t))) == NULL)
      return 0;
    mp->sampled.mask = SAMPLED_SLOTS-1;
    mp->rng = ((uint64_t)time(NULL) << 20) ^ (uintptr_t)mp ^
	      (uintptr_t)&mp ^ 0x853c49e6748fea9bull;
  }
  return 1;
}

static void memprof_release(Memprof *mp)
{
  mp->g->allocf = mp->allocf;
  mp->g->allocd = mp->allocd;
  lj_memstack_watch(&mp->stacks, NULL, 0);
  lj_prof_statewatch(mp->g, 0);
  lj_symtab_freeobjs(&mp->objs);
  memprof_freetables(mp);
}

/* The writer failed or ended the stream: stop, keep the program running. */
static void memprof_halt(Memprof *mp)
{
  memprof_release(mp);
  mp->saved_errno = mp->out.saved_errno;
  mp->opt.on_stop(mp->opt.ctx, mp->out.buf);
  mp->state = MPS_HALT;
}

/* Version 5: what the profile records, after the prologue; what it
** counted, before the end. */
static void memprof_info(Memprof *mp, uint64_t kind, const uint64_t *v,
			 int n)
{
  struct lj_wbuf *out = &mp->out;
  int i;
  lj_wbuf_addbyte(out, AEVENT_SYMTAB | ASOURCE_INFO);
  lj_wbuf_adduleb(out, kind);
  for (i = 0; i < n; i++)
    lj_wbuf_adduleb(out, v[i]);
}

static void memprof_config(Memprof *mp)
{
  uint64_t v[2];
  v[0] = (mp->cfg.stacks ? LJM_CONFIG_STACKS : 0) |
	 (mp->cfg.native ? LJM_CONFIG_NATIVE : 0);
  v[1] = mp->cfg.sample;
  memprof_info(mp, LJM_INFO_CONFIG, v, 2);
  memprof_info(mp, LJM_INFO_PROCESS, NULL, 0);
  lj_profhost_process(&mp->out);
}

static uint64_t memprof_clock(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec*1000000000u + (uint64_t)ts.tv_nsec;
}

static void memprof_writemark(Memprof *mp, uint64_t now)
{
  uint64_t t = now - mp->t0;
  mp->tmark = now;
  memprof_info(mp, LJM_INFO_MARK, &t, 1);
}

/* Every LJM_MARK_EVENTS events, or every event when sampled: a time mark,
** if LJM_MARK_NS passed. Version 3 and 4 have none: never reached there. */
static void memprof_mark(Memprof *mp)
{
  uint64_t now = memprof_clock();
  mp->mark_left = mp->cfg.sample ? 1 : LJM_MARK_EVENTS;
  if (now - mp->tmark >= LJM_MARK_NS)
    memprof_writemark(mp, now);
}

/* A heap snapshot is taken now (version 5): its id, and a time mark. */
int lj_memprof_snapmark(global_State *g, uint64_t id)
{
  Memprof *mp = memprof_of(g);
  uint64_t v[2], now = memprof_clock();
  if (mp == NULL || mp->state != MPS_PROFILE ||
      mp->version < LJM_VERSION_STACKS)
    return 0;
  v[0] = id;
  v[1] = now - mp->t0;
  mp->tmark = now;
  memprof_info(mp, LJM_INFO_SNAPSHOT, v, 2);
  if (LJ_UNLIKELY(lj_wbuf_failed(&mp->out))) {
    memprof_halt(mp);
    return 0;
  }
  return 1;
}

static void memprof_stats(Memprof *mp)
{
  uint64_t v[6];
  v[0] = mp->stacks.nstacks;
  v[1] = mp->stacks.full;
  v[2] = mp->stacks.truncated;
  v[3] = mp->stats.samples;
  v[4] = mp->stats.untracked;
  v[5] = mp->labels.nfolded;
  memprof_info(mp, LJM_INFO_STATS, v,
	       mp->version == LJM_VERSION_LABELS ? 6 : 5);
}

/* What the C API's next profile records (luaM_memprof_set_*). Its format
** is the version of a profile without stacks, a default: stacks, native
** frames or samples make the stream v5 (lmisclib.h). */
static MemprofConfig next_cfg = MEMPROF_DEFAULTS;

/* The C API's next profile as next, if the check takes it. The check
** settles what is implied (stacks by native frames, ...) on a copy: what
** was set stays as set, and set_native(0) after set_native(1) leaves no
** stacks behind. */
static int memprof_setnext(const MemprofConfig *next)
{
  MemprofConfig cfg = *next;
  if (lj_memprof_check(&cfg) != NULL)
    return PROFILE_ERRUSE;
  if (lj_memprof_busy(NULL))
    return PROFILE_ERRRUN;
  next_cfg = *next;
  return PROFILE_SUCCESS;
}

/* The C API names v3 and v4 only: v5 is the stacks' (lmisclib.h). */
LUA_API int luaM_memprof_set_format(int format)
{
  MemprofConfig next = next_cfg;
  if (format != LUAM_MEMPROF_V3 && format != LUAM_MEMPROF_V4)
    return PROFILE_ERRUSE;
  next.version = format;
  return memprof_setnext(&next);
}

LUA_API int luaM_memprof_set_stacks(int stacks)
{
  MemprofConfig next = next_cfg;
  next.stacks = stacks != 0;
  return memprof_setnext(&next);
}

LUA_API int luaM_memprof_set_native(int native)
{
  MemprofConfig next = next_cfg;
  next.native = native != 0;
  return memprof_setnext(&next);
}

LUA_API int luaM_memprof_set_sample(uint64_t bytes)
{
  MemprofConfig next = next_cfg;
  next.sample = bytes;
  return memprof_setnext(&next);
}

LUA_API int luaM_memprof_set_stack_budget(uint64_t bytes)
{
  MemprofConfig next = next_cfg;
  next.budget = bytes;
  return memprof_setnext(&next);
}

/* The path is copied: the host's string may go. */
LUA_API int luaM_memprof_set_follow(const char *path)
{
  static char follow[LJ_PROF_FOLLOWMAX];
  MemprofConfig next = next_cfg;
  if (path != NULL && (*path == '\0' || strlen(path) >= LJ_PROF_FOLLOWMAX))
    return PROFILE_ERRUSE;
  if (lj_memprof_busy(NULL))
    return PROFILE_ERRRUN;
  next.follow = path != NULL ? strcpy(follow, path) : NULL;
  return memprof_setnext(&next);
}

LUA_API int luaM_memprof_start(lua_State *L,
			       const struct luam_Memprof_Options *opt)
{
  return lj_memprof_start(L, opt, &next_cfg);
}

int lj_memprof_start(lua_State *L, const struct luam_Memprof_Options *opt,
		     const MemprofConfig *cfg)
{
  uint8_t prologue[] = { 'l', 'j', 'm', 0, 0, 0, 0 };
  global_State *g = G(L);
  MemprofConfig c = *cfg;
  Memprof *mp;
  if (lj_memprof_check(&c) != NULL || opt == NULL || opt->writer == NULL ||
      opt->on_stop == NULL || opt->buf == NULL || opt->len < 1024)
    return PROFILE_ERRUSE;
  if (memprof_of(g) != NULL || (mp = memprof_claim()) == NULL)
    return PROFILE_ERRRUN;
  if (c.follow != NULL) {
    if (!lj_prof_followpath(mp->follow, c.follow)) {
      memprof_unclaim(mp);
      return PROFILE_ERRUSE;
    }
    c.follow = mp->follow;
  }
  mp->g = g;
  mp->opt = *opt;
  mp->saved_errno = 0;
  mp->cfg = c;
  mp->version = c.version;
  memprof_emptysites(mp);
  lj_proflabel_reset(&mp->labels);
  mp->ntraceloc = 0;
#if LJ_TARGET_ARM64 && LJ_HASJIT
  lj_profunwind_init(&mp->unw, &mp->unwcache);
#endif
  if (!memprof_newtables(mp)) {
    memprof_freetables(mp);
    memprof_unclaim(mp);
    return PROFILE_ERRMEM;
  }
  prologue[3] = (uint8_t)mp->version;
  lj_wbuf_init(&mp->out, opt->writer, opt->ctx, opt->buf, opt->len);
  lj_symtab_dump(&mp->out, g, &mp->objs);
  lj_wbuf_addn(&mp->out, prologue, sizeof(prologue));
  mp->t0 = mp->tmark = memprof_clock();
  mp->mark_left = INT64_MAX;
  if (mp->version >= LJM_VERSION_STACKS) {
    memprof_config(mp);
    mp->mark_left = mp->cfg.sample ? 1 : LJM_MARK_EVENTS;
  }
  if (lj_wbuf_failed(&mp->out)) {
    int err = mp->out.saved_errno;
    lj_symtab_freeobjs(&mp->objs);
    memprof_freetables(mp);
    opt->on_stop(opt->ctx, mp->out.buf);
    memprof_unclaim(mp);
    errno = err;
    return PROFILE_ERRIO;
  }
  lj_prof_statewatch(g, 1);
  if (!mp->cfg.sample)  /* Sampled events are few: returns not watched. */
    lj_memstack_watch(&mp->stacks, L, 1);
  mp->allocf = g->allocf;
  mp->allocd = g->allocd;
  if (mp->cfg.sample)
    sample_next(mp);
  g->allocf = mp->cfg.sample ? memprof_samplef : memprof_allocf;
  g->allocd = mp;
  mp->state = MPS_PROFILE;
  lj_prof_forkguard();
  return PROFILE_SUCCESS;
}

static int memprof_stop(Memprof *mp)
{
  struct lj_wbuf *out = &mp->out;
  int err, cbfail;
  if (mp->state == MPS_HALT) {
    err = mp->saved_errno;
    memprof_unclaim(mp);
    if (err == 0)
      return PROFILE_SUCCESS;  /* The writer ended the stream itself. */
    errno = err;
    return PROFILE_ERRIO;
  }
  if (mp->version >= LJM_VERSION_STACKS) {
    memprof_writemark(mp, memprof_clock());  /* Where the run ends. */
    memprof_stats(mp);
  }
  memprof_release(mp);
  lj_wbuf_addbyte(out, LJM_EPILOGUE_HEADER);
  lj_wbuf_flush(out);
  err = out->saved_errno;
  cbfail = mp->opt.on_stop(mp->opt.ctx, out->buf);
  memprof_unclaim(mp);
  if (err != 0 || cbfail) {
    if (err != 0)
      errno = err;
    return PROFILE_ERRIO;
  }
  return PROFILE_SUCCESS;
}

LUA_API int luaM_memprof_stop(lua_State *L)
{
  Memprof *mp = memprof_of(G(L));
  return mp != NULL ? memprof_stop(mp) : PROFILE_ERRRUN;
}

/* -- Hooks for the VM ---------------------------------------------------- */

static LJ_AINLINE Memprof *memprof_running(global_State *g)
{
  Memprof *mp = memprof_of(g);
  return mp != NULL && mp->state == MPS_PROFILE ? mp : NULL;
}

void lj_memprof_addproto(global_State *g, const GCproto *pt)
{
  Memprof *mp = memprof_running(g);
  if (mp != NULL) {
    memprof_forget(mp, MEMSTACK_PROTO);
    lj_symtab_writeproto(&mp->out, AEVENT_SYMTAB | ASOURCE_LFUNC, pt);
    if (LJ_UNLIKELY(lj_wbuf_failed(&mp->out)))
      memprof_halt(mp);
  }
}

#if LJ_HASJIT
void lj_memprof_addtrace(global_State *g, const GCtrace *T)
{
  Memprof *mp = memprof_running(g);
  if (mp != NULL) {
    memprof_forget(mp, MEMSTACK_TRACE);
    lj_symtab_writetrace(&mp->out, AEVENT_SYMTAB | ASOURCE_TRACE, T);
    if (LJ_UNLIKELY(lj_wbuf_failed(&mp->out)))
      memprof_halt(mp);
  }
}
#endif

void lj_memprof_close(global_State *g)
{
  Memprof *mp = memprof_of(g);
  if (mp != NULL)
    memprof_stop(mp);
}

int lj_memprof_busy(global_State *g)
{
  int i, n = 0;
  for (i = 0; i < MEMPROF_SLOTS; i++)
    n += memprof[i].state != MPS_IDLE;
  return g == NULL ? n > 0 : n == MEMPROF_SLOTS || memprof_of(g) != NULL;
}

/* The child of a fork(): the profiles stay the parent's. Their VMs'
** allocations go to their own allocators again, unrecorded; the writers
** and on_stop are not called (the writers' state is the parent's). */
void lj_memprof_forked(void)
{
  int i;
  for (i = 0; i < MEMPROF_SLOTS; i++) {
    if (memprof[i].state == MPS_PROFILE)
      memprof_release(&memprof[i]);
    if (memprof[i].state != MPS_IDLE)
      memprof_unclaim(&memprof[i]);
  }
}

int lj_memprof_follows(int i, global_State **g, MemprofConfig *cfg)
{
  if (i >= MEMPROF_SLOTS)
    return -1;
  if (memprof[i].state != MPS_PROFILE || memprof[i].cfg.follow == NULL)
    return 0;
  *g = memprof[i].g;
  *cfg = memprof[i].cfg;
  return 1;
}

void lj_memprof_exit(void *ctx)
{
  int i;
  for (i = 0; i < MEMPROF_SLOTS && ctx != NULL; i++)
    if (memprof[i].state == MPS_PROFILE && memprof[i].opt.ctx == ctx)
      memprof_stop(&memprof[i]);
}

#else /* !LJ_HASMEMPROF */

LJ_PROF_OFF(memprof)
LJ_PROF_OFF_SETTER(luaM_memprof_set_format, int)
LJ_PROF_OFF_SETTER(luaM_memprof_set_stacks, int)
LJ_PROF_OFF_SETTER(luaM_memprof_set_native, int)
LJ_PROF_OFF_SETTER(luaM_memprof_set_sample, uint64_t)
LJ_PROF_OFF_SETTER(luaM_memprof_set_stack_budget, uint64_t)

int lj_memprof_follows(int i, global_State **g, MemprofConfig *cfg)
{
  UNUSED(i); UNUSED(g); UNUSED(cfg);
  return -1;
}

int lj_memprof_start(lua_State *L, const struct luam_Memprof_Options *opt,
		     const MemprofConfig *cfg)
{
  UNUSED(L); UNUSED(opt); UNUSED(cfg);
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

int lj_memprof_snapmark(global_State *g, uint64_t id)
{
  UNUSED(g); UNUSED(id);
  return 0;
}

#endif
