/*
** Memory profiler.
**
** While a profile runs, the VM's allocator is replaced by one that calls
** the original and then writes the event; a sampled profile leaves it in
** place, the VM's allocation path calling us only for what is sampled
** (lj_profmem.h). A profile per VM, several VMs at once. Where an event
** comes from is read from the VM state: internal, a Lua function and the
** line it runs, a C function, or a trace. With stacks, each allocation
** also names its call stack: the Lua frames, and with native frames, the
** C frames walked from the allocator as sysprof walks a sample
** (lj_profwalk.h). Most of a stack is usually the last one's: the walk
** stops on the first frame of it whose link and frames below are
** unchanged, and only the frames above are looked up. The VM marks the
** lowest frame returned from between two events: the frames below it
** are not checked.
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
#ifdef LJ_MEMPROF_CHECKSTACKS
#include <stdio.h>
#include <stdlib.h>
#endif

#include "lj_memprof.h"
#include "lj_prof.h"
#include "lj_profmem.h"
#include "lmisclib.h"

#if LJ_HASMEMPROF

#include "lj_debug.h"
#include "lj_frame.h"
#include "lj_profframe.h"
#include "lj_proftrace.h"
#include "lj_dispatch.h"
#if LJ_HASJIT
#include "lj_jit.h"
#include "lj_trace.h"
#endif
#include "lj_profwalk.h"
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
  struct TraceSite *site;  /* Its call site, for one in a trace. */
} MemLoc;

/* -- Call stacks and sampled blocks: tables of their own ---------------- */

#define STACK_MAXDEPTH	64		/* Frames of a stack, then a marker. */
#define STACK_MAXLAST	(2*STACK_MAXDEPTH+2)	/* Lua frames walked through
					** for them: two a vararg function. */
#define STACK_MAX	65536		/* Stacks announced, at most. */
#define STACK_NODES	(1u << 20)	/* Distinct stack prefixes, at most; */
#define STACK_SLOTS	(2*STACK_NODES)	/* their hash table, half used. */
#define SAMPLED_SLOTS	(1u << 12)	/* Sampled blocks: first table, */
#define SAMPLED_MAXSLOTS (1u << 22)	/* the largest it grows to. */

/* A frame: LJM_FRAME_* << 32 | line, and the proto or C function. */
typedef struct MemFrame {
  uint64_t info;
  uint64_t addr;
} MemFrame;

/* A frame as the walk finds it: the function and as little as tells its
** line. at: for a Lua frame, the PC the VM keeps (one ahead, 4-aligned),
** whose line is looked up only when the frame is new to the stack; else
** RAW_TAG(tag, line). Two raw frames alike are the same frame. */
typedef struct RawFrame {
  uint64_t addr;	/* Proto, C function or code address; 0: marker. */
  uint64_t at;
} RawFrame;

#define RAW_TAG(tag, line) \
  ((uint64_t)(uint32_t)(line) << 32 | (uint64_t)(tag) << 1 | 1)

/* Stacks are kept as a tree, outermost frame at the root: a node is a
** stack, its frame the innermost, its parent the stack below that frame.
** An event's stack differs from the last one's in its innermost frames
** mostly: only those are looked up. */
typedef struct StackNode {
  MemFrame f;
  uint32_t parent;	/* 0: the root, the empty stack. */
  uint32_t id;		/* Id it is announced with; 0: not yet. */
} StackNode;

/* A Lua frame of the last stack walked, as it was: a walk that comes to
** it, the frames below it unchanged, stops there (stack_lua). A frame
** called from Lua bytecode is unchanged if its link is: the PC above it,
** in its bytecode, tells its function and line, the link where the frame
** below is; so is a vararg function's call frame (its frame above holds
** the function). Other frames also need their function slot, and a frame
** whose line came from elsewhere (a continuation, the VM's debug code) is
** never taken as unchanged. */
enum { LAST_LINK, LAST_SLOTS, LAST_NEVER };
typedef struct StackLast {
  cTValue *frame;
  uint64_t fslot, link;	/* The frame's function slot and link, */
  uint64_t fnid;	/* its proto or C function (stack_fnid). */
  uint32_t below;	/* Node of the frames below it, */
  uint32_t depth;	/* and how many they are. */
  int check;		/* LAST_*. */
  int watched;		/* It leaves the stack by a watched return only. */
} StackLast;

/* A node by (parent, raw frame), for the innermost frames looked up at
** each event: no line, no probe of the large table. */
#define STACK_MEMO	256	/* Power of two. */
typedef struct StackMemo {
  RawFrame r;
  uint32_t parent, node;	/* node 0: none. */
} StackMemo;

/* Kept off the Lua heap (mmap'd): the allocator being profiled is the one
** that calls us. Bounded: past STACK_NODES prefixes or STACK_MAX stacks,
** events name LJM_STACK_FULL. */
typedef struct StackTab {
  uint32_t *slots;	/* Node by (parent, frame); 0: empty. */
  StackNode *nodes;	/* nodes[0]: the root. */
  uint32_t nnodes, nstacks;
  uint32_t lastnode, lastid;	/* The last event's stack. */
  StackMemo memo[STACK_MEMO];
  /* The Lua frames of the last stack walked, outermost first: of the
  ** coroutine L with its stack at stack. */
  lua_State *L;
  cTValue *stack;
  int nlast;
  StackLast last[STACK_MAXLAST];
  int trunc;		/* It was cut at STACK_MAXDEPTH. */
  /* The raw frames of the last stack above where its walk stopped (its
  ** base), outermost first, and their nodes: those of a native stack,
  ** walked whole each time, are mostly the same. */
  uint32_t rawbase;
  int nraw;
  RawFrame raw[STACK_MAXDEPTH+1];
  uint32_t rawnode[STACK_MAXDEPTH+1];
  /* The last stack's top frame (NULL: none to compare with), what ran
  ** there (stack_top) and the stack's node: an event with the same top,
  ** the frames below unchanged, has the same stack, without a walk. */
  cTValue *topframe;
  uintptr_t topkey;
  uint32_t topnode;
} StackTab;

/* Addresses of the sampled blocks still allocated, to record their frees
** and reallocs: open addressing, removal by backward shift. */
typedef struct SampledSet {
  uintptr_t *slots;	/* 0: empty. */
  uint32_t mask, count;
} SampledSet;

/* What a profile counts, for the stats record at its end. */
typedef struct MemStats {
  uint64_t full;	/* Events whose stack found no room. */
  uint64_t truncated;	/* Events whose stack was cut at STACK_MAXDEPTH. */
  uint64_t samples;	/* Sampled allocations. */
  uint64_t untracked;	/* Sampled blocks the set had no room for. */
} MemStats;

/* A trace's call site: its location (stream version 4) and the frames it
** runs there (stack_trace), by return address. */
#define TRACESITE_BITS		8
#define TRACESITE_CACHE		(1 << TRACESITE_BITS)
#define TRACESITE_MAX		(TRACESITE_CACHE*3/4)  /* Then emptied. */
#define TRACESITE_FRAMES	6
typedef struct TraceSite {
  uintptr_t ra;			/* Return address into a trace; 0: none. */
  uint64_t addr;		/* Trace location, or trace number. */
  uint8_t source;		/* ASOURCE_TRACE_LUA, or ASOURCE_TRACE. */
  int n;			/* Frames; 0: not known yet. */
  const GCproto *pt;		/* The function the trace was entered in. */
  RawFrame f[TRACESITE_FRAMES];
  uint32_t below, node;		/* The frames' node on node below; 0: none. */
} TraceSite;

typedef struct MemProf {
  global_State *g;		/* Profiled VM; NULL while idle. */
  _Atomic int state;		/* Claimed by any thread that starts one. */
  int version;			/* Of the stream: LJM_VERSION*. */
  MemprofConfig cfg;
  StackTab stacks;
  SampledSet sampled;
  MemStats stats;
  uint8_t filter[1u << LJ_PROFMEM_FILTER_BITS];  /* Sampled blocks, by
					** bucket: g->prof.mem_filter. */
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
  /* Native stacks: the walk, and the return address of the allocator's
  ** call (set by the allocator), where the walk starts. */
  ProfWalk walk;
  uintptr_t allocra;
  /* The block the event freed, a realloc's old one: the stack of the
  ** coroutine being resized, maybe, which is not read then. */
  const void *gone;
} MemProf;

/* A profile per VM, up to MEMPROF_SLOTS at once: the allocator wrapper
** gets its own as its state. A slot is the VM's until stop() is called. */
#define MEMPROF_SLOTS		8
static MemProf memprof[MEMPROF_SLOTS];

/* The profile of VM g, running or halted; NULL if none. */
static MemProf *memprof_of(global_State *g)
{
  int i;
  for (i = 0; i < MEMPROF_SLOTS; i++)
    if (memprof[i].state != MPS_IDLE && memprof[i].g == g)
      return &memprof[i];
  return NULL;
}

/* A slot for a new profile, taken; NULL if every one is. */
static MemProf *memprof_claim(void)
{
  int i;
  for (i = 0; i < MEMPROF_SLOTS; i++) {
    int expect = MPS_IDLE;
    if (atomic_compare_exchange_strong(&memprof[i].state, &expect, MPS_HALT))
      return &memprof[i];
  }
  return NULL;
}

static void memprof_unclaim(MemProf *mp)
{
  mp->g = NULL;
  mp->state = MPS_IDLE;
}

/* Largest event: header, two location numbers, a stack id, four payload
** numbers and a weight. */
#define MEMPROF_EVENT_MAX	(1 + 8*LJ_WBUF_ULEB_MAX)

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
static void memprof_emptysites(MemProf *mp)
{
  memset(mp->tracesites, 0, sizeof(mp->tracesites));
  mp->ntracesites = 0;
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
static void memprof_tracelua(MemProf *mp, MemLoc *loc, lua_State *L,
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

/* The slot of the site at return address ra, or an empty one for it (all
** emptied if they are too many). */
static LJ_AINLINE TraceSite *memprof_tracesite(MemProf *mp, uintptr_t ra)
{
  uint32_t i = (uint32_t)(((uint64_t)ra * 0x9e3779b97f4a7c15ull) >>
			  (64 - TRACESITE_BITS));
  TraceSite *ts;
  while ((ts = &mp->tracesites[i])->ra != ra) {
    if (ts->ra == 0) {
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
static LJ_AINLINE void memprof_loctrace(MemProf *mp, MemLoc *loc,
					 int32_t traceno)
{
  global_State *g = mp->g;
  GCtrace *T = traceref(G2J(g), traceno);
  lua_State *L = gco2th(gcref(g->cur_L));
  TraceSite *ts;
  uintptr_t ra;
  if (LJ_UNLIKELY(T == NULL || L->cframe == NULL))
    return;
  ra = memprof_retaddr(T, cframe_raw(L->cframe));
  if (LJ_UNLIKELY(ra == 0))
    return;
  /* A miss reads the trace's map (thousands of instructions): no site may
  ** push out another that is met in turn. A set-associative cache did, in
  ** some runs of alloc_tree and not others, as the code's address fell:
  ** three sites in a set of two ways missed at every event. */
  ts = memprof_tracesite(mp, ra);
  if (LJ_UNLIKELY(ts->ra != ra)) {
    memprof_tracelua(mp, loc, L, T, ra);
    ts->ra = ra;
    ts->source = loc->source;
    ts->addr = loc->addr;
    ts->n = 0;
  }
  loc->source = ts->source;
  loc->addr = ts->addr;
  loc->site = ts;
}
#endif

static LJ_AINLINE void memprof_locate(MemProf *mp, MemLoc *loc)
{
  global_State *g = mp->g;
  int32_t st = g->vmstate;
  loc->source = ASOURCE_INT;
  loc->site = NULL;
  if (lj_prof_intrace(st)) {
    loc->source = ASOURCE_TRACE;
    loc->addr = loc->traceno = (uint64_t)st;
#if LJ_HASJIT
    if (mp->version >= 4)
      memprof_loctrace(mp, loc, st);
#endif
  } else if (st == ~LJ_VMST_LFUNC || st == ~LJ_VMST_FFUNC ||
	     st == ~LJ_VMST_CFUNC) {
    memprof_locfunc(loc, g);
  }
}

/* -- Call stacks (stream version 5) -------------------------------------- */

/* A walk: its raw frames, innermost first, and the Lua frames it went
** through, for the next walk (StackLast), each with the raw frames above
** and its own counted (rawend). */
typedef struct StackWalk {
  ProfSink sink;		/* Native stacks: what the walk finds, */
  ProfWalk *pw;			/* and the walk. */
  RawFrame f[STACK_MAXDEPTH+1];
  int n;
  lua_State *L;			/* Whose frames it walked (stack_lua). */
  uint32_t base;		/* Node of the frames below the walk, */
  uint32_t basedepth;		/* and how many they are. */
  int whole;			/* It reached the bottom, or base. */
  int kept;			/* Frames of the last stack it stopped on. */
  int uselast;			/* It may stop on the last stack, */
  int c;			/* its frame it came down to, */
  int good;			/* how many from its first are unchanged, */
  int lim;			/* and the highest it may stop on. */
  uintptr_t retlow;		/* The VM's ret_low when it began. */
  int nwalked;
  StackLast walked[STACK_MAXLAST];
  int rawend[STACK_MAXLAST];
} StackWalk;

/* 0 when the stack is full: it ends with the marker then. */
static LJ_AINLINE int stack_add(StackWalk *w, uint64_t addr, uint64_t at)
{
  RawFrame *f = &w->f[w->n++];
  if (LJ_UNLIKELY(w->n > STACK_MAXDEPTH)) {
    f->addr = 0;
    f->at = RAW_TAG(LJM_FRAME_TRUNC, 0);
    return 0;
  }
  f->addr = addr;
  f->at = at;
  return 1;
}

/* A Lua frame of pt at pc, as the VM keeps it (one ahead). */
static LJ_AINLINE uint64_t stack_at(const GCproto *pt, const BCIns *pc)
{
  return lj_proftrace_inproto(pt, pc) ? (uint64_t)(uintptr_t)pc :
	 RAW_TAG(LJM_FRAME_LUA, -1);
}

/* Where Lua function fn runs, nextframe above it (NULL: on top): the PC
** the VM saved, if it lies in fn's bytecode, else the line as the VM's
** own debug code finds it (a PC undone by a trace exit, a frame below C). */
static uint64_t stack_luaat(lua_State *L, GCfunc *fn, cTValue *nextframe)
{
  const BCIns *pc = NULL;
  if (nextframe == NULL) {
    void *cf = cframe_raw(L->cframe);
    if (cf != NULL)
      pc = cframe_pc(cf);
  } else if (frame_islua(nextframe)) {
    pc = frame_pc(nextframe);
  } else if (frame_iscont(nextframe)) {
    pc = frame_contpc(nextframe);
  }
  if (pc != NULL && lj_proftrace_inproto(funcproto(fn), pc))
    return (uint64_t)(uintptr_t)pc;
  return RAW_TAG(LJM_FRAME_LUA, lj_debug_frameline(L, fn, nextframe));
}

static LJ_AINLINE uint64_t stack_fnid(GCfunc *fn)
{
  return isluafunc(fn) ? (uint64_t)(uintptr_t)funcproto(fn) :
			 (uint64_t)(uintptr_t)fn->c.f;
}

/* Are the link and function slot of the last stack's frame e as they
** were? */
static LJ_AINLINE int stack_linked(const StackLast *e)
{
  return e->frame->u64 == e->link && (e->frame - LJ_FR2)->u64 == e->fslot;
}

/* How many frames of the last stack, from the first, are as they were:
** from i on (those below are known to be), j at most. */
static int stack_unchanged(const StackLast *last, int i, int j)
{
  for (; i < j; i++) {
    const StackLast *e = &last[i];
    if (e->frame->u64 != e->link ||
	(e->check != LAST_LINK &&
	 (e->check == LAST_NEVER || (e->frame - LJ_FR2)->u64 != e->fslot ||
	  stack_fnid(frame_func(e->frame)) != e->fnid)))
      break;
  }
  return i;
}

/* -- Returns watched ----------------------------------------------------- */

/* With stacks, the VM lowers g->prof.ret_low to the base of each frame
** that returns (for a return to C, a pcall, a continuation or a vararg
** call frame, to the base of the frame below): the interpreter's returns,
** through the dispatch (lj_vm_retwatch), and its traces' (asm_retf); an
** error unwinding sets it to 0, as does any dispatch that bypasses the
** watch. It is reset at each event whose stack is checked. A Lua function
** called from bytecode leaves the stack by such a return only: if one of
** the last stack's is based below the mark, with the same link and
** function slot, neither it nor any frame below it has changed since. */

/* Is the last stack's frame e watched, and based below the mark? */
static LJ_AINLINE int stack_belowmark(const StackLast *e, uintptr_t low)
{
  return e->watched && (uintptr_t)(e->frame + 1) < low;
}

/* How many of the last stack's frames, from the first, are known to be as
** they were: those up to the highest watched one below the mark. */
static int stack_trusted(const StackTab *t, uintptr_t low)
{
  int i;
  if (low == 0)
    return 0;
  for (i = t->nlast-1; i >= 0; i--)
    if (stack_belowmark(&t->last[i], low))
      return stack_linked(&t->last[i]) ? i+1 : 0;
  return 0;
}

/* The stack of the event was checked: returns count from here. The watch
** read again, after: a signal may turn it off in between (jit.profile). */
static void stack_watchreset(global_State *g)
{
  volatile ProfState *ps = &g->prof;
  ps->ret_low = UINTPTR_MAX;
  if (!ps->ret_watched)
    ps->ret_low = 0;
}

#if LJ_HASJIT
/* Is there a trace that returns below the frame it was entered in? It was
** compiled without the watch, maybe. */
static int stack_tracesreturn(jit_State *J)
{
  BCReg i;
  for (i = 1; i < J->sizetrace; i++) {
    GCtrace *T = traceref(J, i);
    IRRef ref;
    if (T != NULL)
      for (ref = REF_FIRST; ref < T->nins; ref++)
	if (T->ir[ref].o == IR_RETF)
	  return 1;
  }
  return 0;
}
#endif

/* Stacks without native frames, every event: returns are watched. Traces
** that return without lowering the mark are flushed first, if that is
** safe here (not from inside a trace, nor while one is recorded). */
static void stack_watchon(MemProf *mp, lua_State *L)
{
  global_State *g = mp->g;
  if (!mp->cfg.stacks || mp->cfg.native || mp->cfg.sample)
    return;
  g->prof.ret_watch = 1;
#if LJ_HASJIT
  if (stack_tracesreturn(G2J(g)) &&
      (G2J(g)->state != LJ_TRACE_IDLE || tvref(g->jit_base) != NULL ||
       lj_prof_intrace(g->vmstate) || lj_trace_flushall(L) != 0)) {
    g->prof.ret_watch = 0;
    return;
  }
#else
  UNUSED(L);
#endif
  lj_dispatch_profupdate(g);
}

static void stack_watchoff(MemProf *mp)
{
  global_State *g = mp->g;
  if (g->prof.ret_watch) {
    g->prof.ret_watch = 0;
    lj_dispatch_profupdate(g);
  }
}

/* -- Walking the stack --------------------------------------------------- */

/* The walk is to go through L's frames: those of the last stack it may
** stop on, if they are L's; those below the mark are as they were. */
static void stack_begin(StackTab *t, StackWalk *w, lua_State *L)
{
  w->L = L;
  w->good = 0;
  w->lim = STACK_MAXDEPTH;
  w->c = w->uselast && t->L == L && t->stack == tvref(L->stack) ?
	 t->nlast-1 : -1;
  if (w->c >= 0)
    w->good = stack_trusted(t, w->retlow);
}

/* Can a stack of depth raw frames, the last stack's below some of them,
** be those? If it fits and the last one was whole, or if the last one was
** cut and this cuts it at the same frame: as many frames above the cut. */
static LJ_AINLINE int stack_fits(const StackTab *t, uint32_t depth)
{
  return t->trunc ? depth == STACK_MAXDEPTH+1 : depth <= STACK_MAXDEPTH;
}

/* The walk went through frame, of function fn, its raw frame added: it
** stops there (1) if the frames below are those of the last stack, the
** same link leading to them, and the stack is what a walk to the bottom
** would keep (the last one may be far below a deep one). -1: too many
** frames to keep them. */
static int stack_land(StackTab *t, StackWalk *w, cTValue *frame, GCfunc *fn,
		      int check)
{
  StackLast *e = &w->walked[w->nwalked];
  int c = w->c;
  if (w->nwalked == STACK_MAXLAST)
    return -1;
  e->frame = frame;
  e->fslot = (frame - LJ_FR2)->u64;
  e->link = frame->u64;
  e->fnid = stack_fnid(fn);
  e->check = check;
  e->watched = check != LAST_NEVER && isluafunc(fn) && frame_islua(frame);
  w->rawend[w->nwalked++] = w->n;
  while (c >= 0 && t->last[c].frame > frame)
    c--;
  w->c = c;
  if (c < 0 || c > w->lim || t->last[c].frame != frame ||
      t->last[c].link != e->link || c + w->nwalked > STACK_MAXLAST ||
      !stack_fits(t, t->last[c].depth + (uint32_t)w->n))
    return 0;
  if (w->good < c) {  /* Each frame checked once a walk. */
    w->good = stack_unchanged(t->last, w->good, c);
    if (w->good < c) {
      w->lim = w->good;  /* No stop above a frame that changed. */
      return 0;
    }
  }
  w->base = t->last[c].below;
  w->basedepth = t->last[c].depth;
  w->kept = c;
  w->whole = 1;
  return 1;
}

/* L's frames from frame down, nextframe above it (NULL: the top one). The
** VM is inside its allocator, its frames as they were at the call, but
** each step is checked all the same (lj_prof_framebelow): an error being
** thrown may have left them half unwound. The walk stops where the frames
** below are the last stack's (stack_land), or at the marker: what it went
** through is kept all the same. */
static void stack_lua(StackTab *t, StackWalk *w, lua_State *L,
		      cTValue *frame, cTValue *nextframe, int dup)
{
  GCfunc *fn = frame != NULL ? lj_prof_framefunc(L, frame) : NULL;
  while (fn != NULL && frame > tvref(L->stack) + LJ_FR2) {
    /* A vararg function's call frame adds no frame to the stack, and holds
    ** the function its frame above was copied from: its link tells all. */
    int check = dup || (nextframe != NULL && frame_islua(nextframe)) ?
		LAST_LINK : LAST_SLOTS;
    if (!dup) {  /* A vararg function's frame sits above its call's. */
      if (isluafunc(fn)) {
	uint64_t at = stack_luaat(L, fn, nextframe);
	if ((at & 1) || (nextframe != NULL && frame_iscont(nextframe)))
	  check = LAST_NEVER;
	if (!stack_add(w, (uintptr_t)funcproto(fn), at))
	  break;
      } else if (!(nextframe == NULL && isffunc(fn) && frame_islua(frame))) {
	/* (A fast function called from Lua is the calling line's.) */
	if (!stack_add(w, (uintptr_t)fn->c.f, RAW_TAG(LJM_FRAME_CFUNC, 0)))
	  break;
      }
    }
    if (stack_land(t, w, frame, fn, check))
      return;  /* Whole, or too many frames to keep. */
    dup = frame_isvarg(frame);
    nextframe = frame;
    frame = lj_prof_framebelow(L, frame, 0);  /* Checked: a function's. */
    fn = frame != NULL ? frame_func(frame) : NULL;
  }
  /* Whole: it came to the marker, or to the first frame, called from C at
  ** the base. */
  w->whole = w->n > STACK_MAXDEPTH || fn != NULL ||
	     (nextframe != NULL && frame_isc(nextframe) &&
	      frame_prevd(nextframe) <= tvref(L->stack) + LJ_FR2);
}

#if LJ_HASJIT
/* A trace allocates: the frames it inlined there and the one it was
** entered in, from its map (lj_proftrace_frames), then the frames below.
** The frames of the trace depend on its call site alone (and the function
** entered, checked): kept with the site's location, up to a few. */
static void stack_trace(MemProf *mp, StackWalk *w, int32_t traceno,
			TraceSite *ts)
{
  global_State *g = mp->g;
  const GCproto *pts[LJ_PROFTRACE_MAXFRAMES];
  const BCIns *pcs[LJ_PROFTRACE_MAXFRAMES];
  GCtrace *T = traceref(G2J(g), traceno);
  lua_State *L = gco2th(gcref(g->cur_L));
  TValue *base = tvref(g->jit_base);
  const GCproto *pt;
  cTValue *frame;
  GCfunc *fn;
  int n = 0, i;
  if (T == NULL || L->cframe == NULL || base == NULL ||
      tvref(L->stack) == mp->gone)
    return;
  frame = base-1;
  if ((fn = lj_prof_framefunc(L, frame)) == NULL || !isluafunc(fn))
    return;
  pt = funcproto(fn);
  if (ts == NULL || ts->n == 0 || ts->pt != pt) {
    if (ts != NULL)
      n = lj_proftrace_frames(T, ts->ra - 1, pts, pcs);
    for (i = 0; i < n-1; i++)
      if (!stack_add(w, (uintptr_t)pts[i], stack_at(pts[i], pcs[i])))
	return;
    if (!stack_add(w, (uintptr_t)pt, n > 0 ? stack_at(pt, pcs[n-1]) :
				      RAW_TAG(LJM_FRAME_LUA, -1)))
      return;
    if (ts != NULL && w->n <= TRACESITE_FRAMES) {
      ts->pt = pt;
      ts->n = w->n;
      ts->node = 0;
      memcpy(ts->f, w->f, (size_t)w->n*sizeof(RawFrame));
    }
  } else {
    for (i = 0; i < ts->n; i++)  /* A few: no call of memcpy. */
      w->f[i] = ts->f[i];
    w->n = ts->n;
  }
  /* Its raw frame is the trace's: never taken as unchanged. */
  stack_begin(&mp->stacks, w, L);
  if (stack_land(&mp->stacks, w, frame, fn, LAST_NEVER) == 0)
    stack_lua(&mp->stacks, w, L, lj_prof_framebelow(L, frame, 0), frame,
	      frame_isvarg(frame));
}
#endif

/* The frame a raw one stands for; the line of a PC is looked up here. */
static void stack_frame(MemFrame *f, const RawFrame *r)
{
  uint32_t tag = LJM_FRAME_LUA;
  BCLine line;
  if (r->at & 1) {
    tag = (uint32_t)(r->at >> 1) & 7;
    line = (BCLine)(int32_t)(r->at >> 32);
  } else {
    const GCproto *pt = (const GCproto *)(uintptr_t)r->addr;
    const BCIns *pc = (const BCIns *)(uintptr_t)r->at;
    line = lj_debug_line((GCproto *)pt, (BCPos)(pc - proto_bc(pt)) - 1);
  }
  f->info = (uint64_t)tag << 32 |
	    (tag != LJM_FRAME_LUA ? 0 : line > 0 ? (uint32_t)line :
	     LJM_LINE_UNKNOWN);
  f->addr = r->addr;
}

/* The node of frame f on the stack of node parent, made if new; 0 (the
** root) when the table has no room for it. */
static uint32_t stack_node(StackTab *t, uint32_t parent, const MemFrame *f)
{
  uint64_t h = (f->addr ^ (f->info << 17) ^ ((uint64_t)parent << 40)) *
	       0xff51afd7ed558ccdull;
  uint32_t i = (uint32_t)(h >> 40) & (STACK_SLOTS-1), k;
  StackNode *nd;
  for (;; i = (i+1) & (STACK_SLOTS-1)) {
    if ((k = t->slots[i]) == 0)
      break;
    nd = &t->nodes[k];
    if (nd->parent == parent && nd->f.addr == f->addr &&
	nd->f.info == f->info)
      return k;
  }
  if (t->nnodes >= STACK_NODES)
    return 0;
  k = t->slots[i] = t->nnodes++;
  nd = &t->nodes[k];
  nd->f = *f;
  nd->parent = parent;
  nd->id = 0;
  return k;
}

/* A new stack is announced with its frames, before the first event that
** names it; C functions in it are named first, as for an event. */
static void stack_announce(MemProf *mp, uint32_t node)
{
  const StackNode *nodes = mp->stacks.nodes;
  const MemFrame *f[STACK_MAXDEPTH+1];
  struct lj_wbuf *out = &mp->out;
  uint8_t *p;
  int n = 0, named = 0, i;
  for (; node != 0; node = nodes[node].parent) {
    uint32_t tag = (uint32_t)(nodes[node].f.info >> 32);
    f[n++] = &nodes[node].f;
    if (!named && (tag == LJM_FRAME_CFUNC || tag == LJM_FRAME_NATIVE)) {
      lj_symtab_newobjs(out, &mp->objs, AEVENT_SYMTAB | ASOURCE_CFUNC);
      named = 1;
    }
  }
  lj_wbuf_reserve(out, 1 + 2*LJ_WBUF_ULEB_MAX);
  p = out->pos;
  *p++ = AEVENT_SYMTAB | ASOURCE_STACK;
  p = lj_wbuf_uleb(p, mp->stacks.nstacks);
  p = lj_wbuf_uleb(p, (uint64_t)n);
  out->pos = p;
  for (i = 0; i < n; i++) {  /* Frame by frame: the buffer may be 1 KB. */
    uint32_t tag = (uint32_t)(f[i]->info >> 32);
    lj_wbuf_reserve(out, 1 + 2*LJ_WBUF_ULEB_MAX);
    p = out->pos;
    *p++ = (uint8_t)tag;
    if (tag != LJM_FRAME_TRUNC)
      p = lj_wbuf_uleb(p, f[i]->addr);
    if (tag == LJM_FRAME_LUA)
      p = lj_wbuf_uleb(p, (uint32_t)f[i]->info);
    out->pos = p;
  }
}

/* The node of raw frame r on the stack of node parent, looked up and
** remembered in memo slot m (0: no room). */
static LJ_NOINLINE uint32_t stack_memonode(StackTab *t, StackMemo *m,
					   uint32_t parent, const RawFrame *r)
{
  MemFrame f;
  uint32_t node;
  stack_frame(&f, r);
  if ((node = stack_node(t, parent, &f)) == 0)
    return 0;
  m->r = *r;
  m->parent = parent;
  m->node = node;
  return node;
}

/* The node of raw frame r on the stack of node parent: remembered for the
** frames met often, else looked up (0: no room). A few a stack: inline. */
static LJ_AINLINE uint32_t stack_rawnode(StackTab *t, uint32_t parent,
					 const RawFrame *r)
{
  uint64_t h = (r->addr ^ r->at ^ parent) * 0x9e3779b97f4a7c15ull;
  StackMemo *m = &t->memo[(h >> 40) & (STACK_MEMO-1)];
  if (m->node != 0 && m->parent == parent && m->r.addr == r->addr &&
      m->r.at == r->at)
    return m->node;
  return stack_memonode(t, m, parent, r);
}

/* The node of the stack walked, its raw frames on w->base, and nodeat[k]
** of its frames from k out; 0 when the table has no room. The frames it
** shares with the last stack from its base out are not looked up. */
static uint32_t stack_nodeof(StackTab *t, const StackWalk *w,
			     uint32_t *nodeat)
{
  uint32_t node = w->base;
  int d = 0, k = w->n-1;  /* w->f[k]: d frames out from the base. */
  nodeat[w->n] = node;
  if (t->rawbase == node)
    for (; d < w->n && d < t->nraw && w->f[k].addr == t->raw[d].addr &&
	   w->f[k].at == t->raw[d].at; d++, k--)
      nodeat[k] = node = t->rawnode[d];
  for (; d < w->n; d++, k--) {
    if ((node = stack_rawnode(t, node, &w->f[k])) == 0) {
      t->nraw = 0;
      return 0;
    }
    nodeat[k] = node;
    t->raw[d] = w->f[k];
    t->rawnode[d] = node;
  }
  t->rawbase = w->base;
  t->nraw = w->n;
  return node;
}

/* The Lua frames of a whole walk are kept for the next one. */
static void stack_keep(StackTab *t, const StackWalk *w,
		       const uint32_t *nodeat)
{
  StackLast *e;
  int k;
  if (!w->whole) {
    t->nlast = 0;
    return;
  }
  e = &t->last[w->kept + w->nwalked];
  for (k = 0; k < w->nwalked; k++) {
    *--e = w->walked[k];
    e->below = nodeat[w->rawend[k]];
    e->depth = w->basedepth + (uint32_t)(w->n - w->rawend[k]);
  }
  t->nlast = w->kept + w->nwalked;
  t->L = w->L;
  t->stack = tvref(w->L->stack);
}

/* The id of the stack of node, not the last event's: ids 1, 2, ... in
** the order of announcement, LJM_STACK_FULL when the table has no room. */
static uint32_t stack_newid(MemProf *mp, uint32_t node)
{
  StackTab *t = &mp->stacks;
  if (LJ_LIKELY(node != 0 && t->nodes[node].id != 0)) {
    t->lastnode = node;
    return (t->lastid = t->nodes[node].id);
  }
  if (node == 0 || t->nstacks >= STACK_MAX) {
    mp->stats.full++;
    return LJM_STACK_FULL;
  }
  t->nodes[node].id = ++t->nstacks;
  stack_announce(mp, node);
  return t->nstacks;
}

/* Mostly the last event's stack: the table's node is far in memory. */
static LJ_AINLINE uint32_t stack_id(MemProf *mp, uint32_t node)
{
  StackTab *t = &mp->stacks;
  if (LJ_LIKELY(node == t->lastnode && node != 0))
    return t->lastid;
  return stack_newid(mp, node);
}

/* -- Native call stacks -------------------------------------------------- */

#define NATIVE_OWNFRAMES	8	/* The profiler's, at most. */

/* The walk's frames, as those of a stack. A fast function is named by its
** entry, as in stacks without native frames, if that is the interpreter's
** code: one written in C has its native frame. */
static void stack_put(ProfSink *s, int tag, const uint64_t *v)
{
  StackWalk *w = (StackWalk *)s;
  if (tag == FR_LUA)
    stack_add(w, v[0], RAW_TAG(LJM_FRAME_LUA, (BCLine)(int64_t)v[1]));
  else if (tag == FR_NATIVE)
    stack_add(w, v[0], RAW_TAG(LJM_FRAME_NATIVE, 0));
  else if (tag == FR_FFUNC && in_vm(w->pw, (uintptr_t)v[1]))
    stack_add(w, v[1], RAW_TAG(LJM_FRAME_CFUNC, 0));
}

/* The stack from the code that called the allocator, as sysprof's mode C
** walks it: the registers here, read in place (getcontext would make a
** system call), then steps out of the profiler's own frames until the
** allocator's return address. 0 if they do not lead there. */
static int stack_native(MemProf *mp, StackWalk *w)
{
  ProfWalk *pw = &mp->walk;
  ProfUnwStack stk;
  ProfUnwRegs r;
  int i;
  __asm__ volatile("leaq 0(%%rip), %%rax\n\t"
		   "movq %%rax, %0\n\t"
		   "movq %%rsp, %1\n\t"
		   "movq %%rbp, %2\n\t"
		   "movq %%rbx, %3"
		   : "=m"(r.ip), "=m"(r.sp), "=m"(r.bp), "=m"(r.bx) : : "rax");
  r.exact = 1;
  walk_stack(pw, &r, &stk);
  for (i = 0; r.ip != mp->allocra; i++)
    if (i == NATIVE_OWNFRAMES ||
	!lj_profunwind_step(&pw->unw, &pw->unwcache, &stk, &r))
      return 0;
  w->sink.nframes = 0;
  w->sink.maxframes = STACK_MAXDEPTH+1;  /* The last: the marker. */
  w->sink.keep = FRBIT(FR_LUA) | FRBIT(FR_CFUNC) | FRBIT(FR_FFUNC) |
		 FRBIT(FR_NATIVE);
  w->sink.put = stack_put;
  w->pw = pw;
  pw->gone = mp->gone;
  walk_callgraph(pw, &w->sink, mp->g->vmstate, &stk, &r, NULL);
  return w->n > 0;
}

/* The walk's setup: at the start of a profile with native stacks. */
static int stack_nativeinit(MemProf *mp)
{
  if (!walk_openprobe(&mp->walk))
    return 0;
  walk_setcode(&mp->walk, mp->g, 1);
  return 1;
}

#define STACK_NONE	(~(uint32_t)0)

/* The stack of an event located at loc: the coroutine that allocates, or
** the trace and what lies below it; with native frames, the walk from the
** allocator (also for an internal event). 0: no stack, for an internal
** event otherwise. uselast: the walk may stop on the last stack. */
static int stack_walk(MemProf *mp, const MemLoc *loc, StackWalk *w,
		      int uselast)
{
  global_State *g = mp->g;
  w->n = w->nwalked = w->kept = w->whole = 0;
  w->base = w->basedepth = 0;
  w->L = NULL;
  w->uselast = uselast;
  w->retlow = g->prof.ret_low;
  if (mp->cfg.native && stack_native(mp, w))
    return 1;
  w->n = 0;
  if (loc->source == ASOURCE_INT)
    return 0;
#if LJ_HASJIT
  if (lj_prof_intrace(g->vmstate)) {
    stack_trace(mp, w, g->vmstate, loc->site);
  } else
#endif
  {
    lua_State *L = gco2th(gcref(g->prof.mem_L));
    if (L != NULL && tvref(L->stack) != mp->gone) {
      stack_begin(&mp->stacks, w, L);
      stack_lua(&mp->stacks, w, L, L->base-1, NULL, 0);
    }
  }
  /* (It may have stopped on a frame of the last stack with no raw one.) */
  return w->n > 0 || w->base != 0;
}

#ifdef LJ_MEMPROF_CHECKSTACKS
/* Test builds: each stack looked up again frame by frame, from the root,
** must be the same node; walked again whole, unless it is native (a walk
** from here is not the one from the allocator). */
static void stack_check(MemProf *mp, const MemLoc *loc, const StackWalk *w,
			uint32_t node)
{
  StackWalk again;
  uint32_t check = 0;
  int k;
  if (node == 0)
    return;
  if (!mp->cfg.native) {  /* (w is NULL: found without a walk.) */
    stack_walk(mp, loc, &again, 0);
    w = &again;
  }
  for (k = w->n-1; k >= 0; k--) {
    MemFrame f;
    stack_frame(&f, &w->f[k]);
    if ((check = stack_node(&mp->stacks, check, &f)) == 0)
      break;
  }
  if (check != node) {
    fprintf(stderr, "memprof: stack node %u, walked whole: %u\n",
	    node, check);
    abort();
  }
}
#endif

/* -- The last stack, a few calls or returns on ---------------------- */

/* The top frame of the event at loc, and in *key what runs there: a
** trace's call site, or the PC the interpreter saved (a Lua function's
** line; for C, the line that called out). With the frame's function and
** the frames below, that is the whole stack. NULL: no top to compare. */
static LJ_AINLINE cTValue *stack_top(MemProf *mp, const MemLoc *loc,
				     lua_State **pL, uintptr_t *key)
{
  global_State *g = mp->g;
  lua_State *L;
  void *cf;
#if LJ_HASJIT
  if (lj_prof_intrace(g->vmstate)) {
    TValue *base = tvref(g->jit_base);
    if (loc->site == NULL || base == NULL)
      return NULL;
    *pL = gco2th(gcref(g->cur_L));
    *key = loc->site->ra;
    return base-1;
  }
#endif
  L = gco2th(gcref(g->prof.mem_L));
  if (L == NULL || loc->source == ASOURCE_INT)
    return NULL;
  cf = cframe_raw(L->cframe);
  *pL = L;
  *key = cf != NULL ? (uintptr_t)cframe_pc(cf) : 0;
  return L->base-1;
}

/* Is the last stack's i-th frame at frame, as it was, with the frames
** below it? What a walk asks of the frame it stops on (stack_land). */
static int stack_kept(MemProf *mp, int i, cTValue *frame)
{
  StackTab *t = &mp->stacks;
  const StackLast *e = &t->last[i];
  int good;
  uintptr_t low = mp->g->prof.ret_low;
  if (e->frame != frame || !stack_linked(e) ||
      stack_fnid(frame_func(frame)) != e->fnid)
    return 0;
  /* Mostly it, or the one below (a trace's frame is never watched), has
  ** not returned: it is below the mark (stack_trusted). */
  if (stack_belowmark(e, low) ||
      (i > 0 && stack_belowmark(e-1, low) && stack_linked(e-1)))
    return 1;
  good = stack_trusted(t, low);
  return good >= i || stack_unchanged(t->last, good, i) == i;
}

#if LJ_HASJIT
/* The frames of trace site ts, entered in pt, on the frames below (node
** below, depth of them); kept with the site for sites met in turn. */
static uint32_t stack_sitenode(StackTab *t, TraceSite *ts, const GCproto *pt,
			       uint32_t below, uint32_t depth)
{
  uint32_t node = below;
  int i;
  if (ts->n == 0 || ts->pt != pt || !stack_fits(t, depth + (uint32_t)ts->n))
    return STACK_NONE;
  if (ts->node != 0 && ts->below == below)
    return ts->node;
  ts->below = below;
  ts->node = 0;
  for (i = ts->n-1; i >= 0; i--)
    if ((node = stack_rawnode(t, node, &ts->f[i])) == 0)
      return STACK_NONE;
  return (ts->node = node);
}
#endif

/* The raw frames of the top frame, running Lua function fn at key, on the
** frames below (node below, depth of them), without a walk. STACK_NONE:
** they need one (a trace site not known yet, a line not from a PC, no
** room, too many frames). */
static uint32_t stack_newtop(MemProf *mp, const MemLoc *loc, GCfunc *fn,
			     uintptr_t key, uint32_t below, uint32_t depth)
{
  RawFrame r;
  uint32_t node;
#if LJ_HASJIT
  if (lj_prof_intrace(mp->g->vmstate))
    return stack_sitenode(&mp->stacks, loc->site, funcproto(fn), below,
			  depth);
#else
  UNUSED(loc);
#endif
  if (!lj_proftrace_inproto(funcproto(fn), (const BCIns *)key) ||
      !stack_fits(&mp->stacks, depth + 1))
    return STACK_NONE;
  r.addr = (uintptr_t)funcproto(fn);
  r.at = (uint64_t)key;
  node = stack_rawnode(&mp->stacks, below, &r);
  return node != 0 ? node : STACK_NONE;
}

#define STACK_CALLS	4	/* Frames called since the last stack, at most. */

/* The event's stack, node, is the last one's up to its i-th frame, top,
** where the event runs at key: kept as a walk would keep it. */
static void stack_settop(MemProf *mp, int i, cTValue *top, uintptr_t key,
			 uint32_t node)
{
  StackTab *t = &mp->stacks;
  StackLast *e = &t->last[i];
  /* A trace's frame is the trace's, never taken as unchanged (stack_trace);
  ** the interpreter's top its function slot (stack_lua). */
  e->check = lj_prof_intrace(mp->g->vmstate) ? LAST_NEVER : LAST_SLOTS;
  e->watched = e->check != LAST_NEVER && frame_islua(top);
  t->nlast = i+1;
  t->topframe = top;
  t->topkey = key;
  t->topnode = node;
}

/* The event's stack is the last one's up to its i-th frame, then the
** frames fr[n-1] down to fr[0], the top, each called from bytecode by the
** one below: their lines are those of the calls. Kept as a walk would
** keep them, once all are looked up. */
static uint32_t stack_called(MemProf *mp, const MemLoc *loc, int i,
			     cTValue **fr, int n, GCfunc *fn, uintptr_t key)
{
  StackTab *t = &mp->stacks;
  StackLast *e = &t->last[i];
  uint32_t below[STACK_CALLS], node = e->below;
  uint64_t caller = e->fnid;  /* A proto: lj_prof_framebelow found it. */
  int k;
  if (i+n+1 > STACK_MAXLAST)
    return STACK_NONE;
  for (k = 0; k < n; k++) {
    cTValue *f = fr[n-1-k];
    RawFrame r;
    r.addr = caller;
    r.at = (uint64_t)(uintptr_t)frame_pc(f);
    if ((node = stack_rawnode(t, node, &r)) == 0)
      return STACK_NONE;
    below[k] = node;
    caller = stack_fnid(frame_func(f));
  }
  node = stack_newtop(mp, loc, fn, key, node, e->depth + (uint32_t)n);
  if (node == STACK_NONE)
    return STACK_NONE;
  for (k = 0; k < n; k++, e++) {
    cTValue *f = fr[n-1-k];
    e->check = LAST_LINK;
    e->watched = frame_islua(e->frame);
    e[1].frame = f;
    e[1].fslot = (f - LJ_FR2)->u64;
    e[1].link = f->u64;
    e[1].fnid = stack_fnid(frame_func(f));
    e[1].below = below[k];
    e[1].depth = e->depth + 1;
  }
  stack_settop(mp, i+n, fr[0], key, node);
  return node;
}

/* The node of the event's stack if it is the last one's up to a frame of
** it, as it was, and then at most STACK_CALLS frames, each called from
** bytecode by the one below: no walk. Mostly an event runs where the last
** one did, or a few calls or returns on. STACK_NONE: it needs one. */
static LJ_AINLINE uint32_t stack_again(MemProf *mp, const MemLoc *loc)
{
  StackTab *t = &mp->stacks;
  lua_State *L;
  uintptr_t key;
  cTValue *top = stack_top(mp, loc, &L, &key), *fr[STACK_CALLS];
  GCfunc *fn;
  uint32_t node;
  int i, n;
  if (top == NULL || t->nlast == 0 || t->L != L ||
      t->stack != tvref(L->stack) || t->stack == mp->gone)
    return STACK_NONE;
  for (i = t->nlast-1; i > 0 && t->last[i].frame > top; i--)
    ;
  if (stack_kept(mp, i, top)) {
    if (top == t->topframe && key == t->topkey)
      return t->topnode;  /* (Only the top frame is kept as top.) */
    fn = frame_func(top);
    if (!isluafunc(fn))
      return STACK_NONE;
    node = stack_newtop(mp, loc, fn, key, t->last[i].below,
			t->last[i].depth);
    if (node != STACK_NONE)
      stack_settop(mp, i, top, key, node);
    return node;
  }
  if ((fn = lj_prof_framefunc(L, top)) == NULL || !isluafunc(fn))
    return STACK_NONE;
  for (fr[0] = top, n = 1; ; n++) {
    cTValue *caller;
    if (!frame_islua(fr[n-1]) ||
	(caller = lj_prof_framebelow(L, fr[n-1], 0)) == NULL)
      return STACK_NONE;
    for (; i > 0 && t->last[i].frame > caller; i--)
      ;
    if (stack_kept(mp, i, caller))
      return stack_called(mp, loc, i, fr, n, fn, key);
    if (n == STACK_CALLS)
      return STACK_NONE;
    fr[n] = caller;
  }
}

/* The node of the event's stack, walked. Its top frame is kept to compare
** the next event's with if the walk went through it; not if its line was
** not from a PC or a trace's site (it may come from elsewhere). */
static LJ_NOINLINE uint32_t stack_walked(MemProf *mp, const MemLoc *loc)
{
  StackTab *t = &mp->stacks;
  StackWalk w;
  uint32_t nodeat[STACK_MAXDEPTH+2];  /* Of the frames from k out. */
  uint32_t node;
  lua_State *L = NULL;
  uintptr_t key = 0;
  cTValue *top = mp->cfg.native ? NULL : stack_top(mp, loc, &L, &key);
  t->topframe = NULL;
  if (!stack_walk(mp, loc, &w, 1))
    return STACK_NONE;
  t->trunc = w.basedepth + (uint32_t)w.n > STACK_MAXDEPTH;
  node = stack_nodeof(t, &w, nodeat);
  if (node == 0) {
    t->nlast = 0;
  } else {
    stack_keep(t, &w, nodeat);
    if (top != NULL && w.whole && w.L == L &&
	t->nlast > 0 && t->last[t->nlast-1].frame == top &&
	(t->last[t->nlast-1].check != LAST_NEVER ||
	 lj_prof_intrace(mp->g->vmstate))) {
      t->topframe = top;
      t->topkey = key;
      t->topnode = node;
    }
  }
#ifdef LJ_MEMPROF_CHECKSTACKS
  stack_check(mp, loc, &w, node);
#endif
  return node;
}

/* The id of the event's stack; STACK_NONE: it has none. */
static LJ_AINLINE uint32_t memprof_stack(MemProf *mp, const MemLoc *loc)
{
  uint32_t node = mp->cfg.native ? STACK_NONE : stack_again(mp, loc);
  if (node != STACK_NONE) {
#ifdef LJ_MEMPROF_CHECKSTACKS
    stack_check(mp, loc, NULL, node);
#endif
  } else if ((node = stack_walked(mp, loc)) == STACK_NONE) {
    return STACK_NONE;
  }
  if (mp->g->prof.ret_watch)
    stack_watchreset(mp->g);
  if (mp->stacks.trunc)  /* (One found without a walk is cut as the last.) */
    mp->stats.truncated++;
  return stack_id(mp, node);
}

/* -- Sampled blocks ------------------------------------------------------ */

static void *memprof_map(size_t sz)
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
      (n.slots = memprof_map(2*(s->mask+1)*sizeof(uintptr_t))) == NULL)
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
static void sampled_add(MemProf *mp, void *p)
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
static int sampled_del(MemProf *mp, uintptr_t a)
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

static uint64_t sample_rand(MemProf *mp)
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
static void sample_next(MemProf *mp)
{
  double u = ((double)(sample_rand(mp) >> 11) + 1.0) *
	     (1.0/9007199254740992.0);  /* In (0, 1]. */
  double d = -log(u) * (double)mp->cfg.sample;
  mp->g->prof.mem_left = d < 1.0 ? 1 : d > 4e18 ? (int64_t)4e18 :
					 (int64_t)d;
}

/* The bytes a sampled allocation of n bytes stands for: n divided by the
** chance it had to be sampled. */
static uint64_t sample_weight(MemProf *mp, size_t n)
{
  double p = -expm1(-(double)n / (double)mp->cfg.sample);
  double w = p > 0.0 ? (double)n / p : (double)mp->cfg.sample;
  return w < (double)n ? (uint64_t)n : (uint64_t)(w + 0.5);
}

/* -- Event stream -------------------------------------------------------- */

static void memprof_halt(MemProf *mp);
static void memprof_mark(MemProf *mp);

/* Header, location and stack id of an event; returns where its payload
** goes. */
static LJ_AINLINE uint8_t *memprof_event(MemProf *mp, uint8_t aevent,
					 const MemLoc *loc, uint32_t stack)
{
  struct lj_wbuf *out = &mp->out;
  uint8_t *p;
  if (loc->source == ASOURCE_CFUNC)  /* New objects are named first. */
    lj_symtab_newobjs(out, &mp->objs, AEVENT_SYMTAB | ASOURCE_CFUNC);
  lj_wbuf_reserve(out, MEMPROF_EVENT_MAX);
  p = out->pos;
  if (stack != STACK_NONE)
    aevent |= AFLAG_STACK;
  *p++ = aevent | loc->source;
  if (loc->source != ASOURCE_INT)
    p = lj_wbuf_uleb(p, loc->addr);
  if (loc->source == ASOURCE_LFUNC)
    p = lj_wbuf_uleb(p, loc->line);
  if (stack != STACK_NONE)
    p = lj_wbuf_uleb(p, stack);
  return p;
}

/* Write one event. Allocations carry their stack when stacks are on; a
** sampled one (weight > 0) the bytes it stands for. Inlined in the
** allocator wrapper: as a call, with its spills, it cost 40 instructions
** more an event (of about 180). */
static LJ_AINLINE void memprof_write(MemProf *mp, uint8_t aevent,
				     void *ptr, size_t osize, void *nptr,
				     size_t nsize, uint64_t weight)
{
  uint32_t stack = STACK_NONE;
  uint8_t *p;
  MemLoc loc;
  memprof_locate(mp, &loc);
  if (mp->cfg.stacks && (aevent & AEVENT_ALLOC))
    stack = memprof_stack(mp, &loc);
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
  mp->out.pos = p;
  if (LJ_UNLIKELY(--mp->mark_left <= 0))
    memprof_mark(mp);
  if (LJ_UNLIKELY(lj_wbuf_failed(&mp->out)))
    memprof_halt(mp);
}

static void *memprof_allocf(void *ud, void *ptr, size_t osize, size_t nsize)
{
  MemProf *mp = (MemProf *)ud;
  void *nptr = mp->allocf(mp->allocd, ptr, osize, nsize);
  if (nsize != 0 && nptr == NULL)
    return NULL;  /* Out of memory: nothing happened. */
  mp->allocra = (uintptr_t)__builtin_return_address(0);
  mp->gone = ptr;
  memprof_write(mp, nsize == 0 ? AEVENT_FREE :
		    ptr == NULL ? AEVENT_ALLOC : AEVENT_REALLOC,
		ptr, osize, nptr, nsize, 0);
  return nptr;
}

/* Sampled (lj_profmem.h): the VM's allocation path counts the bytes and
** comes here only when the count ran out, or for a block that may be a
** sampled one. The VM's own allocator, then what is recorded: a sampled
** block's free, and the allocation sampled. A realloc is both: the old
** block's weight stood for blocks of its size, not of the new one (an
** array sampled at 16 bytes and grown to 256 KB would stand for a
** thousand of those); its new bytes were counted like any others. */
void *lj_memprof_sampled(global_State *g, void *ptr, GCSize osize,
			 GCSize nsize)
{
  MemProf *mp = memprof_of(g);
  void *nptr = g->allocf(g->allocd, ptr, osize, nsize);
  if (mp == NULL || mp->state != MPS_PROFILE || mp->cfg.sample == 0) {
    g->prof.mem_left = INT64_MAX;  /* No sampled profile: a new VM. */
    return nptr;
  }
  if (nsize != 0 && nptr == NULL)
    return NULL;  /* Out of memory: nothing happened. */
  mp->allocra = (uintptr_t)__builtin_return_address(0);
  mp->gone = ptr;
  if (ptr != NULL && lj_profmem_insample(g, ptr) &&
      sampled_del(mp, (uintptr_t)ptr))
    memprof_write(mp, AEVENT_FREE, ptr, osize, NULL, 0, 0);
  if (nsize != 0 && g->prof.mem_left < 0) {
    uint64_t weight = sample_weight(mp, nsize);
    sample_next(mp);
    mp->stats.samples++;
    sampled_add(mp, nptr);
    memprof_write(mp, AEVENT_ALLOC, NULL, 0, nptr, nsize, weight);
  }
  return nptr;
}

/* -- Start and stop ------------------------------------------------------ */

static void memprof_freetables(MemProf *mp)
{
  if (mp->stacks.slots != NULL)
    munmap(mp->stacks.slots, STACK_SLOTS*sizeof(uint32_t));
  if (mp->stacks.nodes != NULL)
    munmap(mp->stacks.nodes, STACK_NODES*sizeof(StackNode));
  if (mp->sampled.slots != NULL)
    munmap(mp->sampled.slots, (mp->sampled.mask+1)*sizeof(uintptr_t));
  if (mp->cfg.native && mp->walk.g != NULL)
    walk_closeprobe(&mp->walk);
  mp->walk.g = NULL;
  memset(&mp->stacks, 0, sizeof(mp->stacks));
  memset(&mp->sampled, 0, sizeof(mp->sampled));
}

/* The tables stacks and sampling need: 0 if they cannot be had. */
static int memprof_newtables(MemProf *mp)
{
  memset(&mp->stacks, 0, sizeof(mp->stacks));
  memset(&mp->sampled, 0, sizeof(mp->sampled));
  memset(&mp->stats, 0, sizeof(mp->stats));
  memset(mp->filter, 0, sizeof(mp->filter));
  if (mp->cfg.stacks &&
      ((mp->stacks.slots = memprof_map(STACK_SLOTS*sizeof(uint32_t))) ==
       NULL ||
       (mp->stacks.nodes = memprof_map(STACK_NODES*sizeof(StackNode))) ==
       NULL))
    return 0;
  mp->stacks.nnodes = 1;  /* The root. */
  if (mp->cfg.native && !stack_nativeinit(mp))
    return 0;
  if (mp->cfg.sample) {
    if ((mp->sampled.slots = memprof_map(SAMPLED_SLOTS*sizeof(uintptr_t))) ==
	NULL)
      return 0;
    mp->sampled.mask = SAMPLED_SLOTS-1;
    mp->rng = ((uint64_t)time(NULL) << 20) ^ (uintptr_t)mp ^
	      (uintptr_t)&mp ^ 0x853c49e6748fea9bull;
  }
  return 1;
}

static void memprof_release(MemProf *mp)
{
  mp->g->allocf = mp->allocf;
  mp->g->allocd = mp->allocd;
  mp->g->prof.mem_filter = NULL;
  mp->g->prof.mem_left = INT64_MAX;
  stack_watchoff(mp);
  lj_symtab_freeobjs(&mp->objs);
  memprof_freetables(mp);
}

/* The writer failed or ended the stream: stop, keep the program running. */
static void memprof_halt(MemProf *mp)
{
  memprof_release(mp);
  mp->saved_errno = mp->out.saved_errno;
  mp->opt.on_stop(mp->opt.ctx, mp->out.buf);
  mp->state = MPS_HALT;
}

/* Version 5: what the profile records, after the prologue; what it
** counted, before the end. */
static void memprof_info(MemProf *mp, uint64_t kind, const uint64_t *v,
			 int n)
{
  struct lj_wbuf *out = &mp->out;
  int i;
  lj_wbuf_addbyte(out, AEVENT_SYMTAB | ASOURCE_INFO);
  lj_wbuf_adduleb(out, kind);
  for (i = 0; i < n; i++)
    lj_wbuf_adduleb(out, v[i]);
}

static void memprof_config(MemProf *mp)
{
  uint64_t v[2];
  v[0] = (mp->cfg.stacks ? 1 : 0) | (mp->cfg.native ? 2 : 0);
  v[1] = mp->cfg.sample;
  memprof_info(mp, LJM_INFO_CONFIG, v, 2);
}

static uint64_t memprof_clock(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec*1000000000u + (uint64_t)ts.tv_nsec;
}

static void memprof_writemark(MemProf *mp, uint64_t now)
{
  uint64_t t = now - mp->t0;
  mp->tmark = now;
  memprof_info(mp, LJM_INFO_MARK, &t, 1);
}

/* Every LJM_MARK_EVENTS events, or every event when sampled: a time mark,
** if LJM_MARK_NS passed. Version 3 and 4 have none: never reached there. */
static void memprof_mark(MemProf *mp)
{
  uint64_t now = memprof_clock();
  mp->mark_left = mp->cfg.sample ? 1 : LJM_MARK_EVENTS;
  if (now - mp->tmark >= LJM_MARK_NS)
    memprof_writemark(mp, now);
}

static void memprof_stats(MemProf *mp)
{
  uint64_t v[5];
  v[0] = mp->stacks.nstacks;
  v[1] = mp->stats.full;
  v[2] = mp->stats.truncated;
  v[3] = mp->stats.samples;
  v[4] = mp->stats.untracked;
  memprof_info(mp, LJM_INFO_STATS, v, 5);
}

/* What the C API's next profile records (luaM_memprof_set_*). */
static MemprofConfig next_cfg = { LJM_VERSION_REFERENCE, 0, 0, 0 };

LUA_API int luaM_memprof_set_format(int format)
{
  if (format != LUAM_MEMPROF_V3 && format != LUAM_MEMPROF_V4)
    return PROFILE_ERRUSE;
  if (lj_memprof_busy(NULL))
    return PROFILE_ERRRUN;
  next_cfg.version = format;
  return PROFILE_SUCCESS;
}

LUA_API int luaM_memprof_set_stacks(int stacks)
{
  if (lj_memprof_busy(NULL))
    return PROFILE_ERRRUN;
  next_cfg.stacks = stacks != 0;
  return PROFILE_SUCCESS;
}

LUA_API int luaM_memprof_set_native(int native)
{
  if (lj_memprof_busy(NULL))
    return PROFILE_ERRRUN;
  next_cfg.native = native != 0;
  return PROFILE_SUCCESS;
}

LUA_API int luaM_memprof_set_sample(uint64_t bytes)
{
  if (bytes > LJM_SAMPLE_MAX)
    return PROFILE_ERRUSE;
  if (lj_memprof_busy(NULL))
    return PROFILE_ERRRUN;
  next_cfg.sample = bytes;
  return PROFILE_SUCCESS;
}

LUA_API int luaM_memprof_start(lua_State *L,
			       const struct luam_Memprof_Options *opt)
{
  MemprofConfig cfg = next_cfg;
  if (cfg.stacks || cfg.native || cfg.sample)
    cfg.version = LJM_VERSION_STACKS;
  return lj_memprof_start(L, opt, &cfg);
}

int lj_memprof_start(lua_State *L, const struct luam_Memprof_Options *opt,
		     const MemprofConfig *cfg)
{
  uint8_t prologue[] = { 'l', 'j', 'm', 0, 0, 0, 0 };
  global_State *g = G(L);
  MemProf *mp;
  if (opt == NULL || opt->writer == NULL || opt->on_stop == NULL ||
      opt->buf == NULL || opt->len < 1024 || cfg->sample > LJM_SAMPLE_MAX ||
      ((cfg->stacks || cfg->native || cfg->sample) &&
       cfg->version < LJM_VERSION_STACKS))
    return PROFILE_ERRUSE;
  if (memprof_of(g) != NULL || (mp = memprof_claim()) == NULL)
    return PROFILE_ERRRUN;
  mp->g = g;
  mp->opt = *opt;
  mp->saved_errno = 0;
  mp->cfg = *cfg;
  /* Samples carry stacks; native frames are in stacks. */
  mp->cfg.stacks = cfg->stacks || cfg->native || cfg->sample;
  mp->version = cfg->version;
  memprof_emptysites(mp);
  mp->ntraceloc = 0;
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
  stack_watchon(mp, L);
  mp->allocf = g->allocf;
  mp->allocd = g->allocd;
  if (mp->cfg.sample) {  /* The VM's allocation path counts (lj_profmem.h). */
    sample_next(mp);
    g->prof.mem_filter = mp->filter;
  } else {
    g->allocf = memprof_allocf;
    g->allocd = mp;
  }
  mp->state = MPS_PROFILE;
  lj_prof_forkguard();
  return PROFILE_SUCCESS;
}

static int memprof_stop(MemProf *mp)
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
  MemProf *mp = memprof_of(G(L));
  return mp != NULL ? memprof_stop(mp) : PROFILE_ERRRUN;
}

/* -- Hooks for the VM ---------------------------------------------------- */

static LJ_AINLINE MemProf *memprof_running(global_State *g)
{
  MemProf *mp = memprof_of(g);
  return mp != NULL && mp->state == MPS_PROFILE ? mp : NULL;
}

void lj_memprof_addproto(global_State *g, const GCproto *pt)
{
  MemProf *mp = memprof_running(g);
  if (mp != NULL) {
    /* It may sit where a proto of the last stack was. */
    mp->stacks.nlast = mp->stacks.nraw = 0;
    mp->stacks.topframe = NULL;
    memset(mp->stacks.memo, 0, sizeof(mp->stacks.memo));
    lj_symtab_writeproto(&mp->out, AEVENT_SYMTAB | ASOURCE_LFUNC, pt);
    if (LJ_UNLIKELY(lj_wbuf_failed(&mp->out)))
      memprof_halt(mp);
  }
}

#if LJ_HASJIT
void lj_memprof_addtrace(global_State *g, const GCtrace *T)
{
  MemProf *mp = memprof_running(g);
  if (mp != NULL) {
    memprof_emptysites(mp);
    mp->stacks.topframe = NULL;  /* Its call sites are other code. */
    lj_symtab_writetrace(&mp->out, AEVENT_SYMTAB | ASOURCE_TRACE, T);
    if (LJ_UNLIKELY(lj_wbuf_failed(&mp->out)))
      memprof_halt(mp);
  }
}
#endif

void lj_memprof_close(global_State *g)
{
  MemProf *mp = memprof_of(g);
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

/* No profile ever samples: the VM's count ran out (lj_profmem.h). */
void *lj_memprof_sampled(global_State *g, void *ptr, GCSize osize,
			 GCSize nsize)
{
  g->prof.mem_left = INT64_MAX;
  return g->allocf(g->allocd, ptr, osize, nsize);
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

#endif
