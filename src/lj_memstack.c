/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Memory profiler: the call stack of each allocation (stream version 5).
**
** Each allocation names its call stack: the Lua frames, and with native
** frames the C frames walked from the allocator as sysprof walks a sample
** (lj_profwalk.h). Stacks are kept as a tree, each announced once. Most of
** a stack is usually the last one's: the walk stops on the first frame of
** it whose link and frames below are unchanged, and only the frames above
** are looked up; an event a few calls or returns on from the last one is
** not walked at all. The VM marks the lowest frame returned from between
** two events: the frames below it are not checked.
*/

#define _GNU_SOURCE
#define lj_memstack_c
#define LUA_CORE

#include <string.h>
#include <sys/mman.h>
#ifdef LJ_MEMPROF_CHECKSTACKS
#include <stdio.h>
#include <stdlib.h>
#endif

#include "lj_memprof.h"

#if LJ_HASMEMPROF

#include "lj_memstack.h"
#include "lj_debug.h"
#include "lj_frame.h"
#include "lj_dispatch.h"
#include "lj_profframe.h"
#include "lj_proftrace.h"
#if LJ_HASJIT
#include "lj_jit.h"
#include "lj_trace.h"
#endif
#include "lj_profwalk.h"
#include "lj_symtab.h"
#include "lj_wbuf.h"

/* -- Tables -------------------------------------------------------------- */

#define STACK_MAXDEPTH	64		/* Frames of a stack, then a marker. */
#define STACK_MAXLAST	(2*STACK_MAXDEPTH+2)	/* Lua frames walked through
					** for them: two a vararg function. */
/* The tables grow as the program needs, within the profile's budget of
** address space (stack_budget): the nodes in half of it, reserved at the
** start, pages touched as used; the hash table doubled when half full, up
** to the other half. */
#define STACK_SLOTS0	(1u << 16)	/* The hash table's first size, */
#define STACK_MAXSLOTS	(1u << 31)	/* and its largest: 2^30 nodes. */

/* A raw frame's at: for a Lua frame, the PC the VM keeps (one ahead,
** 4-aligned), whose line is looked up only when the frame is new to the
** stack; else RAW_TAG(tag, line). */
#define RAW_TAG(tag, line) \
  ((uint64_t)(uint32_t)(line) << 32 | (uint64_t)(tag) << 1 | 1)

/* A frame: LJM_FRAME_* << 32 | line, and the proto or C function. */
typedef struct MemFrame {
  uint64_t info;
  uint64_t addr;
} MemFrame;

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
** that calls us. Past the budget, events name LJM_STACK_FULL. */
typedef struct MemStackTab {
  global_State *g;	/* Profiled VM. */
  int native;		/* Stacks have their C frames (stack_native). */
  struct lj_wbuf *out;	/* Where stacks are announced, */
  struct lj_symtab_objs *objs;	/* the C functions in them named first. */
  size_t half;		/* Half the budget: the nodes', the slots'. */
  uint32_t *slots;	/* Node by (parent, frame); 0: empty. */
  uint32_t nslots;	/* A power of two, at least twice nnodes. */
  StackNode *nodes;	/* nodes[0]: the root. */
  uint32_t nnodes, maxnodes;
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
  ProfWalk walk;	/* Native stacks: the walk. */
  /* The event's, as lj_memstack_id is told: the VM's own, or at a site. */
  int internal;
  MemStackSite *site;
} MemStackTab;

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

/* -- Frames -------------------------------------------------------------- */

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
static int stack_trusted(const MemStackTab *t, uintptr_t low)
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
static void stack_watchon(MemStackTab *t, lua_State *L)
{
  global_State *g = t->g;
  if (t->native)  /* Walked whole from the allocator: nothing to skip. */
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

static void stack_watchoff(MemStackTab *t)
{
  global_State *g = t->g;
  if (g->prof.ret_watch) {
    g->prof.ret_watch = 0;
    lj_dispatch_profupdate(g);
  }
}

/* -- Walking the stack --------------------------------------------------- */

/* The walk is to go through L's frames: those of the last stack it may
** stop on, if they are L's; those below the mark are as they were. */
static void stack_begin(MemStackTab *t, StackWalk *w, lua_State *L)
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
static LJ_AINLINE int stack_fits(const MemStackTab *t, uint32_t depth)
{
  return t->trunc ? depth == STACK_MAXDEPTH+1 : depth <= STACK_MAXDEPTH;
}

/* The walk went through frame, of function fn, its raw frame added: it
** stops there (1) if the frames below are those of the last stack, the
** same link leading to them, and the stack is what a walk to the bottom
** would keep (the last one may be far below a deep one). -1: too many
** frames to keep them. */
static int stack_land(MemStackTab *t, StackWalk *w, cTValue *frame, GCfunc *fn,
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
static void stack_lua(MemStackTab *t, StackWalk *w, lua_State *L,
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
static void stack_trace(MemStacks *s, StackWalk *w, int32_t traceno,
			MemStackSite *ts)
{
  MemStackTab *t = s->t;
  global_State *g = t->g;
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
      tvref(L->stack) == s->gone)
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
    if (ts != NULL && w->n <= MEMSTACK_SITEFRAMES) {
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
  stack_begin(t, w, L);
  if (stack_land(t, w, frame, fn, LAST_NEVER) == 0)
    stack_lua(t, w, L, lj_prof_framebelow(L, frame, 0), frame,
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

static LJ_AINLINE uint32_t stack_hash(uint32_t parent, const MemFrame *f)
{
  uint64_t h = (f->addr ^ (f->info << 17) ^ ((uint64_t)parent << 40)) *
	       0xff51afd7ed558ccdull;
  return (uint32_t)(h >> 32);
}

/* The first free slot for node nd, from its home on. */
static LJ_AINLINE uint32_t *stack_freeslot(uint32_t *slots, uint32_t mask,
					   const StackNode *nd)
{
  uint32_t i = stack_hash(nd->parent, &nd->f) & mask;
  while (slots[i] != 0)
    i = (i+1) & mask;
  return &slots[i];
}

/* Twice the slots, the nodes put in again; 0 if the budget or the system
** has no more. */
static LJ_NOINLINE int stack_grow(MemStackTab *t)
{
  uint32_t n = 2*t->nslots, k;
  uint32_t *slots;
  if (t->nslots >= STACK_MAXSLOTS ||
      (size_t)n*sizeof(uint32_t) > t->half ||
      (slots = lj_memprof_map((size_t)n*sizeof(uint32_t))) == NULL)
    return 0;
  for (k = 1; k < t->nnodes; k++)
    *stack_freeslot(slots, n-1, &t->nodes[k]) = k;
  munmap(t->slots, (size_t)t->nslots*sizeof(uint32_t));
  t->slots = slots;
  t->nslots = n;
  return 1;
}

/* The node of frame f on the stack of node parent, made if new; 0 (the
** root) when the tables have no room for it. */
static uint32_t stack_node(MemStackTab *t, uint32_t parent, const MemFrame *f)
{
  uint32_t mask = t->nslots-1, i = stack_hash(parent, f) & mask, k;
  StackNode *nd;
  for (;; i = (i+1) & mask) {
    if ((k = t->slots[i]) == 0)
      break;
    nd = &t->nodes[k];
    if (nd->parent == parent && nd->f.addr == f->addr &&
	nd->f.info == f->info)
      return k;
  }
  if (t->nnodes >= t->maxnodes)
    return 0;
  if (2*(t->nnodes+1) > t->nslots) {  /* Half full: more slots. */
    if (!stack_grow(t))
      return 0;
    return stack_node(t, parent, f);
  }
  k = t->slots[i] = t->nnodes++;
  nd = &t->nodes[k];
  nd->f = *f;
  nd->parent = parent;
  nd->id = 0;
  return k;
}

/* A new stack is announced with its frames, before the first event that
** names it; C functions in it are named first, as for an event. */
static void stack_announce(MemStacks *s, uint32_t node)
{
  MemStackTab *t = s->t;
  const StackNode *nodes = t->nodes;
  const MemFrame *f[STACK_MAXDEPTH+1];
  struct lj_wbuf *out = t->out;
  uint8_t *p;
  int n = 0, named = 0, i;
  for (; node != 0; node = nodes[node].parent) {
    uint32_t tag = (uint32_t)(nodes[node].f.info >> 32);
    f[n++] = &nodes[node].f;
    if (!named && (tag == LJM_FRAME_CFUNC || tag == LJM_FRAME_NATIVE)) {
      lj_symtab_newobjs(out, t->objs, AEVENT_SYMTAB | ASOURCE_CFUNC);
      named = 1;
    }
  }
  lj_wbuf_reserve(out, 1 + 2*LJ_WBUF_ULEB_MAX);
  p = out->pos;
  *p++ = AEVENT_SYMTAB | ASOURCE_STACK;
  p = lj_wbuf_uleb(p, s->nstacks);
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
static LJ_NOINLINE uint32_t stack_memonode(MemStackTab *t, StackMemo *m,
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
static LJ_AINLINE uint32_t stack_rawnode(MemStackTab *t, uint32_t parent,
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
static uint32_t stack_nodeof(MemStackTab *t, const StackWalk *w,
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
static void stack_keep(MemStackTab *t, const StackWalk *w,
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
static uint32_t stack_newid(MemStacks *s, uint32_t node)
{
  MemStackTab *t = s->t;
  if (LJ_LIKELY(node != 0 && t->nodes[node].id != 0)) {
    t->lastnode = node;
    return (t->lastid = t->nodes[node].id);
  }
  if (node == 0) {
    s->full++;
    return LJM_STACK_FULL;
  }
  t->nodes[node].id = ++s->nstacks;
  stack_announce(s, node);
  return s->nstacks;
}

/* Mostly the last event's stack: the table's node is far in memory. */
static LJ_AINLINE uint32_t stack_id(MemStacks *s, uint32_t node)
{
  MemStackTab *t = s->t;
  if (LJ_LIKELY(node == t->lastnode && node != 0))
    return t->lastid;
  return stack_newid(s, node);
}

/* -- Native call stacks -------------------------------------------------- */

#define NATIVE_OWNFRAMES	8	/* The profiler's, at most. */

/* The walk's frames, as those of a stack. A fast function is named by its
** entry, as in stacks without native frames, if that is the interpreter's
** code: one written in C has its native frame. */
static void stack_put(ProfSink *sink, int tag, const uint64_t *v)
{
  StackWalk *w = (StackWalk *)sink;
  if (tag == FR_LUA)
    stack_add(w, v[0], RAW_TAG(LJM_FRAME_LUA, (BCLine)(int64_t)v[1]));
  else if (tag == FR_NATIVE)
    stack_add(w, v[0], RAW_TAG(LJM_FRAME_NATIVE, 0));
  else if (tag == FR_FFUNC && lj_profwalk_invm(w->pw, (uintptr_t)v[1]))
    stack_add(w, v[1], RAW_TAG(LJM_FRAME_CFUNC, 0));
}

/* The stack from the code that called the allocator, as sysprof's mode C
** walks it: the registers here, then steps out of the profiler's own
** frames until the allocator's return address. 0 if they do not lead
** there. */
static int stack_native(MemStacks *s, StackWalk *w)
{
  MemStackTab *t = s->t;
  ProfWalk *pw = &t->walk;
  ProfUnwStack stk;
  ProfUnwRegs r;
  int i;
  lj_profunwind_here(&r);
  lj_profwalk_stack(pw, &r, &stk);
  for (i = 0; r.ip != s->allocra; i++)
    if (i == NATIVE_OWNFRAMES ||
	!lj_profunwind_step(&pw->unw, &pw->unwcache, &stk, &r))
      return 0;
  w->sink.nframes = 0;
  w->sink.maxframes = STACK_MAXDEPTH+1;  /* The last: the marker. */
  w->sink.keep = FRBIT(FR_LUA) | FRBIT(FR_CFUNC) | FRBIT(FR_FFUNC) |
		 FRBIT(FR_NATIVE);
  w->sink.put = stack_put;
  w->pw = pw;
  pw->gone = s->gone;
  lj_profwalk_callgraph(pw, &w->sink, t->g->vmstate, &stk, &r, NULL);
  return w->n > 0;
}

/* The stack of the event: the coroutine that allocates, or the trace at
** its site and what lies below it; with native frames, the walk from the
** allocator (also for an internal event). 0: no stack, for an internal
** event otherwise. uselast: the walk may stop on the last stack. */
static int stack_walk(MemStacks *s, StackWalk *w, int uselast)
{
  MemStackTab *t = s->t;
  global_State *g = t->g;
  w->n = w->nwalked = w->kept = w->whole = 0;
  w->base = w->basedepth = 0;
  w->L = NULL;
  w->uselast = uselast;
  w->retlow = g->prof.ret_low;
  if (t->native && stack_native(s, w))
    return 1;
  w->n = 0;
  if (t->internal)
    return 0;
#if LJ_HASJIT
  if (lj_prof_intrace(g->vmstate)) {
    stack_trace(s, w, g->vmstate, t->site);
  } else
#endif
  {
    lua_State *L = gco2th(gcref(g->prof.mem_L));
    if (L != NULL && tvref(L->stack) != s->gone) {
      stack_begin(t, w, L);
      stack_lua(t, w, L, L->base-1, NULL, 0);
    }
  }
  /* (It may have stopped on a frame of the last stack with no raw one.) */
  return w->n > 0 || w->base != 0;
}

#ifdef LJ_MEMPROF_CHECKSTACKS
/* Test builds: each stack looked up again frame by frame, from the root,
** must be the same node; walked again whole, unless it is native (a walk
** from here is not the one from the allocator). */
static void stack_check(MemStacks *s, const StackWalk *w, uint32_t node)
{
  StackWalk again;
  uint32_t check = 0;
  int k;
  if (node == 0)
    return;
  if (!s->t->native) {  /* (w is NULL: found without a walk.) */
    stack_walk(s, &again, 0);
    w = &again;
  }
  for (k = w->n-1; k >= 0; k--) {
    MemFrame f;
    stack_frame(&f, &w->f[k]);
    if ((check = stack_node(s->t, check, &f)) == 0)
      break;
  }
  if (check != node) {
    fprintf(stderr, "memprof: stack node %u, walked whole: %u\n",
	    node, check);
    abort();
  }
}
#endif

/* -- The last stack, a few calls or returns on --------------------------- */

/* The top frame of the event, and in *key what runs there: a
** trace's call site, or the PC the interpreter saved (a Lua function's
** line; for C, the line that called out). With the frame's function and
** the frames below, that is the whole stack. NULL: no top to compare. */
static LJ_AINLINE cTValue *stack_top(MemStackTab *t, lua_State **pL,
				     uintptr_t *key)
{
  global_State *g = t->g;
  lua_State *L;
  void *cf;
#if LJ_HASJIT
  if (lj_prof_intrace(g->vmstate)) {
    TValue *base = tvref(g->jit_base);
    if (t->site == NULL || base == NULL)
      return NULL;
    *pL = gco2th(gcref(g->cur_L));
    *key = t->site->ra;
    return base-1;
  }
#endif
  L = gco2th(gcref(g->prof.mem_L));
  if (L == NULL || t->internal)
    return NULL;
  cf = cframe_raw(L->cframe);
  *pL = L;
  *key = cf != NULL ? (uintptr_t)cframe_pc(cf) : 0;
  return L->base-1;
}

/* The last stack's frames from the first to the i-th, as they were? Those
** up to the highest watched one below the mark are; the others checked. */
static LJ_NOINLINE int stack_keptto(MemStackTab *t, int i, uintptr_t low)
{
  int good = stack_trusted(t, low);
  return good >= i || stack_unchanged(t->last, good, i) == i;
}

/* Is the last stack's i-th frame at frame, as it was, with the frames
** below it? What a walk asks of the frame it stops on (stack_land). Most
** events ask it of the last top: inline, and nothing called then. */
static LJ_AINLINE int stack_kept(MemStackTab *t, int i, cTValue *frame)
{
  const StackLast *e = &t->last[i];
  uintptr_t low = t->g->prof.ret_low;
  if (e->frame != frame || !stack_linked(e) ||
      stack_fnid(frame_func(frame)) != e->fnid)
    return 0;
  /* Mostly it, or the one below (a trace's frame is never watched), has
  ** not returned: it is below the mark (stack_trusted). */
  if (stack_belowmark(e, low) ||
      (i > 0 && stack_belowmark(e-1, low) && stack_linked(e-1)))
    return 1;
  return stack_keptto(t, i, low);
}

#if LJ_HASJIT
/* The frames of trace site ts, entered in pt, on the frames below (node
** below, depth of them); kept with the site for sites met in turn. */
static uint32_t stack_sitenode(MemStackTab *t, MemStackSite *ts,
			       const GCproto *pt, uint32_t below,
			       uint32_t depth)
{
  uint32_t node = below;
  int i;
  if (ts->n == 0 || ts->pt != pt || !stack_fits(t, depth + (uint32_t)ts->n))
    return MEMSTACK_NONE;
  if (ts->node != 0 && ts->below == below)
    return ts->node;
  ts->below = below;
  ts->node = 0;
  for (i = ts->n-1; i >= 0; i--)
    if ((node = stack_rawnode(t, node, &ts->f[i])) == 0)
      return MEMSTACK_NONE;
  return (ts->node = node);
}
#endif

/* The raw frames of the top frame, running Lua function fn at key, on the
** frames below (node below, depth of them), without a walk. MEMSTACK_NONE:
** they need one (a trace site not known yet, a line not from a PC, no
** room, too many frames). */
static uint32_t stack_newtop(MemStackTab *t, GCfunc *fn, uintptr_t key,
			     uint32_t below, uint32_t depth)
{
  RawFrame r;
  uint32_t node;
#if LJ_HASJIT
  if (lj_prof_intrace(t->g->vmstate))
    return stack_sitenode(t, t->site, funcproto(fn), below, depth);
#endif
  if (!lj_proftrace_inproto(funcproto(fn), (const BCIns *)key) ||
      !stack_fits(t, depth + 1))
    return MEMSTACK_NONE;
  r.addr = (uintptr_t)funcproto(fn);
  r.at = (uint64_t)key;
  node = stack_rawnode(t, below, &r);
  return node != 0 ? node : MEMSTACK_NONE;
}

#define STACK_CALLS	4	/* Frames called since the last stack, at most. */

/* The event's stack, node, is the last one's up to its i-th frame, top,
** where the event runs at key: kept as a walk would keep it. */
static void stack_settop(MemStackTab *t, int i, cTValue *top, uintptr_t key,
			 uint32_t node)
{
  StackLast *e = &t->last[i];
  /* A trace's frame is the trace's, never taken as unchanged (stack_trace);
  ** the interpreter's top its function slot (stack_lua). */
  e->check = lj_prof_intrace(t->g->vmstate) ? LAST_NEVER : LAST_SLOTS;
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
static uint32_t stack_called(MemStackTab *t, int i, cTValue **fr, int n,
			     GCfunc *fn, uintptr_t key)
{
  StackLast *e = &t->last[i];
  uint32_t below[STACK_CALLS], node = e->below;
  uint64_t caller = e->fnid;  /* A proto: lj_prof_framebelow found it. */
  int k;
  if (i+n+1 > STACK_MAXLAST)
    return MEMSTACK_NONE;
  for (k = 0; k < n; k++) {
    cTValue *f = fr[n-1-k];
    RawFrame r;
    r.addr = caller;
    r.at = (uint64_t)(uintptr_t)frame_pc(f);
    if ((node = stack_rawnode(t, node, &r)) == 0)
      return MEMSTACK_NONE;
    below[k] = node;
    caller = stack_fnid(frame_func(f));
  }
  node = stack_newtop(t, fn, key, node, e->depth + (uint32_t)n);
  if (node == MEMSTACK_NONE)
    return MEMSTACK_NONE;
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
  stack_settop(t, i+n, fr[0], key, node);
  return node;
}

/* The event runs at key in top, the last stack's i-th frame, as it was:
** a new top on the frames below. */
static LJ_NOINLINE uint32_t stack_ontop(MemStackTab *t, int i, cTValue *top,
					uintptr_t key)
{
  GCfunc *fn = frame_func(top);
  uint32_t node;
  if (!isluafunc(fn))
    return MEMSTACK_NONE;
  node = stack_newtop(t, fn, key, t->last[i].below, t->last[i].depth);
  if (node != MEMSTACK_NONE)
    stack_settop(t, i, top, key, node);
  return node;
}

/* The event runs at key in top, not a frame of the last stack: at most
** STACK_CALLS frames called from bytecode on one of them (the i-th or
** below), as it was? */
static LJ_NOINLINE uint32_t stack_calls(MemStackTab *t, lua_State *L, int i,
				       cTValue *top, uintptr_t key)
{
  cTValue *fr[STACK_CALLS];
  GCfunc *fn;
  int n;
  if ((fn = lj_prof_framefunc(L, top)) == NULL || !isluafunc(fn))
    return MEMSTACK_NONE;
  for (fr[0] = top, n = 1; ; n++) {
    cTValue *caller;
    if (!frame_islua(fr[n-1]) ||
	(caller = lj_prof_framebelow(L, fr[n-1], 0)) == NULL)
      return MEMSTACK_NONE;
    for (; i > 0 && t->last[i].frame > caller; i--)
      ;
    if (stack_kept(t, i, caller))
      return stack_called(t, i, fr, n, fn, key);
    if (n == STACK_CALLS)
      return MEMSTACK_NONE;
    fr[n] = caller;
  }
}

/* The node of the event's stack if it is the last one's up to a frame of
** it, as it was, and then at most STACK_CALLS frames, each called from
** bytecode by the one below: no walk. Mostly an event runs where the last
** one did, or a few calls or returns on. MEMSTACK_NONE: it needs one. */
static LJ_AINLINE uint32_t stack_again(MemStacks *s)
{
  MemStackTab *t = s->t;
  lua_State *L;
  uintptr_t key;
  cTValue *top = stack_top(t, &L, &key);
  int i;
  if (top == NULL || t->nlast == 0 || t->L != L ||
      t->stack != tvref(L->stack) || t->stack == s->gone)
    return MEMSTACK_NONE;
  for (i = t->nlast-1; i > 0 && t->last[i].frame > top; i--)
    ;
  if (!stack_kept(t, i, top))
    return stack_calls(t, L, i, top, key);
  if (top == t->topframe && key == t->topkey)
    return t->topnode;  /* (Only the top frame is kept as top.) */
  return stack_ontop(t, i, top, key);
}

/* The event's stack found, node: its id. */
static LJ_AINLINE uint32_t stack_found(MemStacks *s, uint32_t node)
{
  MemStackTab *t = s->t;
  if (t->g->prof.ret_watch)
    stack_watchreset(t->g);
  if (t->trunc)  /* (One found without a walk is cut as the last.) */
    s->truncated++;
  return stack_id(s, node);
}

/* The id of the event's stack, walked. Its top frame is kept to compare
** the next event's with if the walk went through it; not if its line was
** not from a PC or a trace's site (it may come from elsewhere). Tail-called
** by lj_memstack_id: a native walk steps out of the profiler's frames,
** the fewer the better. */
static LJ_NOINLINE uint32_t stack_walked(MemStacks *s)
{
  MemStackTab *t = s->t;
  StackWalk w;
  uint32_t nodeat[STACK_MAXDEPTH+2];  /* Of the frames from k out. */
  uint32_t node;
  lua_State *L = NULL;
  uintptr_t key = 0;
  cTValue *top = t->native ? NULL : stack_top(t, &L, &key);
  t->topframe = NULL;
  if (!stack_walk(s, &w, 1))
    return MEMSTACK_NONE;
  t->trunc = w.basedepth + (uint32_t)w.n > STACK_MAXDEPTH;
  node = stack_nodeof(t, &w, nodeat);
  if (node == 0) {
    t->nlast = 0;
  } else {
    stack_keep(t, &w, nodeat);
    if (top != NULL && w.whole && w.L == L &&
	t->nlast > 0 && t->last[t->nlast-1].frame == top &&
	(t->last[t->nlast-1].check != LAST_NEVER ||
	 lj_prof_intrace(t->g->vmstate))) {
      t->topframe = top;
      t->topkey = key;
      t->topnode = node;
    }
  }
#ifdef LJ_MEMPROF_CHECKSTACKS
  stack_check(s, &w, node);
#endif
  return stack_found(s, node);
}

/* -- Entry points -------------------------------------------------------- */

int lj_memstack_init(MemStacks *s, global_State *g, int native,
		     uint64_t budget, struct lj_wbuf *out,
		     struct lj_symtab_objs *objs)
{
  MemStackTab *t;
  memset(s, 0, sizeof(*s));
  if ((t = s->t = lj_memprof_map(sizeof(MemStackTab))) == NULL)
    return 0;
  t->g = g;
  t->out = out;
  t->objs = objs;
  t->half = (size_t)(budget/2);
  t->maxnodes = t->half/sizeof(StackNode) < STACK_MAXSLOTS/2 ?
		(uint32_t)(t->half/sizeof(StackNode)) : STACK_MAXSLOTS/2;
  if ((t->slots = lj_memprof_map(STACK_SLOTS0*sizeof(uint32_t))) ==
      NULL || (t->nodes = lj_memprof_map(t->half)) == NULL)
    return 0;
  t->nslots = STACK_SLOTS0;
  t->nnodes = 1;  /* The root. */
  if (native) {
    if (!lj_profwalk_openprobe(&t->walk))
      return 0;
    t->native = 1;  /* (Only then is the probe closed.) */
    lj_profwalk_setcode(&t->walk, g, 1);
  }
  return 1;
}

void lj_memstack_free(MemStacks *s)
{
  MemStackTab *t = s->t;
  if (t == NULL)
    return;
  if (t->slots != NULL)
    munmap(t->slots, (size_t)t->nslots*sizeof(uint32_t));
  if (t->nodes != NULL)
    munmap(t->nodes, t->half);
  if (t->native)
    lj_profwalk_closeprobe(&t->walk);
  munmap(t, sizeof(MemStackTab));
  s->t = NULL;
}

uint32_t lj_memstack_id(MemStacks *s, int internal, MemStackSite *site)
{
  MemStackTab *t = s->t;
  uint32_t node;
  t->internal = internal;
  t->site = site;
  if (t->native || (node = stack_again(s)) == MEMSTACK_NONE)
    return stack_walked(s);  /* (A tail call.) */
#ifdef LJ_MEMPROF_CHECKSTACKS
  stack_check(s, NULL, node);
#endif
  return stack_found(s, node);
}

void lj_memstack_forget(MemStacks *s, int what)
{
  MemStackTab *t = s->t;
  if (t == NULL)
    return;
  if (what == MEMSTACK_PROTO) {  /* Frames named by a dead proto. */
    t->nlast = t->nraw = 0;
    memset(t->memo, 0, sizeof(t->memo));
  }
  t->topframe = NULL;  /* Its key, a trace's site, may be other code. */
}

void lj_memstack_watch(MemStacks *s, lua_State *L, int on)
{
  if (s->t == NULL)
    return;
  if (on)
    stack_watchon(s->t, L);
  else
    stack_watchoff(s->t);
}

#endif
