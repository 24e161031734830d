/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Heap snapshots: every live object of a VM and every reference between
** them, each named.
**
** The walk runs on the VM's thread between two instructions of the
** program, so nothing moves under it: it only reads. It starts at the
** GC's roots and goes breadth-first through what each object references,
** as the GC marks, so it finds what the GC would keep and never an object
** the GC may have freed (weak tables are cleared of those before they
** are). Objects are numbered in the order they are first named; the queue
** of the walk is the table of objects by number, and a hash table finds an
** object's number by its address. Both live off the Lua heap (mmap'd): no
** GC object is made, no GC step runs, and the GC's marks stay its own.
*/

#define lj_heapsnap_c
#define LUA_CORE

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include "lj_heapsnap.h"
#include "lj_memprof.h"
#include "lj_profstream.h"
#include "lj_proffile.h"
#include "lj_profframe.h"
#include "lj_debug.h"
#include "lj_meta.h"
#include "lj_tab.h"
#include "lj_frame.h"
#include "lj_bc.h"
#include "lj_str.h"
#if LJ_HASJIT
#include "lj_jit.h"
#include "lj_ir.h"
#include "lj_trace.h"
#endif
#if LJ_HASFFI
#include "lj_ctype.h"
#endif
#include "lmisclib.h"

#define NO_BCPOS	(~(BCPos)0)

typedef struct HeapSnap {
  global_State *g;
  lua_State *L;			/* The thread that takes the snapshot. */
  struct lj_wbuf *wb;
  const HeapSnapConfig *cfg;
  GCobj **obj;			/* Objects by number: the walk's queue. */
  uint32_t *slot;		/* Number + 1 by address hash; 0: empty. */
  uint32_t nobj, cap;		/* The hash table has 2*cap slots. */
  int shift;			/* 64 - log2(2*cap). */
  int nomem;
  uintptr_t lastaddr;		/* Of the last object written. */
  uint64_t nedges, nbytes;
  TValue **frames;		/* A thread's frames, innermost first. */
  MSize nframes, capframes;
  uint8_t *named;		/* By number: a string that names (a key). */
  uint32_t *later;		/* Names met after their string was written. */
  uint32_t nlater, caplater;
  uint32_t scan;		/* Number of the object being written. */
  uint8_t *ctseen;		/* Ctype ids announced. */
  MSize nctseen;
} HeapSnap;

#define HS_CAP0		(1u << 14)
#define HS_CAPMAX	(1u << 30)
/* A first guess of the objects from the heap's bytes: most live objects
** take 32 to 100 bytes. Too low, the tables double as the walk goes (a
** rehash each time: over half of a large snapshot's pause); too high,
** they take more memory while the walk runs (its hash table: at most 16
** bytes for each 64 of the heap). */
#define HS_GUESSBYTES	64
#define HS_GUESSMAX	(1u << 26)

/* -- Object numbers ------------------------------------------------------ */

static LJ_AINLINE uint32_t hs_hash(const HeapSnap *hs, const GCobj *o)
{
  return (uint32_t)(((uint64_t)(uintptr_t)o * U64x(9e3779b9,7f4a7c15)) >>
		    hs->shift);
}

static void hs_insert(HeapSnap *hs, uint32_t id)
{
  uint32_t mask = 2*hs->cap - 1, h = hs_hash(hs, hs->obj[id]);
  while (hs->slot[h] != 0)
    h = (h + 1) & mask;
  hs->slot[h] = id + 1;
}

/* The walk's tables are mapped, as huge pages where the kernel has them:
** a large heap's lookups land anywhere in them, and with small pages
** each first touch is a page fault and most lookups a TLB miss (at a
** million objects, a third of the pause was the kernel's). */
static void *hs_map(size_t size)
{
  void *p = mmap(NULL, size, PROT_READ|PROT_WRITE,
		 MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, size, MADV_HUGEPAGE);
#endif
  return p;
}

static void hs_unmap(void *p, size_t size)
{
  if (p != NULL)
    munmap(p, size);
}

#define HS_OBJSIZE(cap)		((size_t)(cap) * sizeof(GCobj *))
#define HS_SLOTSIZE(cap)	(2 * (size_t)(cap) * sizeof(uint32_t))

static void hs_freetables(HeapSnap *hs)
{
  hs_unmap(hs->obj, HS_OBJSIZE(hs->cap));
  hs_unmap(hs->named, hs->cap);
  hs_unmap(hs->slot, HS_SLOTSIZE(hs->cap));
}

/* Room for cap objects (a power of two above the present one): the queue
** and the names are copied, the hash table built anew. */
static int hs_grow(HeapSnap *hs, uint32_t cap)
{
  HeapSnap old = *hs;
  uint32_t i;
  if (cap > HS_CAPMAX)
    return 0;
  hs->obj = (GCobj **)hs_map(HS_OBJSIZE(cap));
  hs->named = (uint8_t *)hs_map(cap);
  hs->slot = (uint32_t *)hs_map(HS_SLOTSIZE(cap));
  hs->cap = cap;
  if (hs->obj == NULL || hs->named == NULL || hs->slot == NULL) {
    hs_freetables(hs);
    hs->obj = old.obj; hs->named = old.named; hs->slot = old.slot;
    hs->cap = old.cap;
    return 0;
  }
  if (old.cap) {
    memcpy(hs->obj, old.obj, HS_OBJSIZE(old.nobj));
    memcpy(hs->named, old.named, old.nobj);
    hs_freetables(&old);
  }
  hs->shift = 64 - (int)lj_fls(2*cap);
  for (i = 0; i < hs->nobj; i++)
    hs_insert(hs, i);
  return 1;
}

/* The first room: for as many objects as the heap's size suggests. */
static int hs_firstgrow(HeapSnap *hs)
{
  uint64_t guess = hs->g->gc.total / HS_GUESSBYTES;
  uint32_t cap = HS_CAP0;
  while (cap < guess && cap < HS_GUESSMAX)
    cap *= 2;
  return hs_grow(hs, cap);
}

/* The target that names o: its number, or new (it joins the queue). */
static uint64_t hs_ref(HeapSnap *hs, GCobj *o)
{
  uint32_t mask = 2*hs->cap - 1, h = hs_hash(hs, o), s;
  while ((s = hs->slot[h]) != 0) {
    if (hs->obj[s-1] == o)
      return LJH_TARGET_ID + s - 1;
    h = (h + 1) & mask;
  }
  if (hs->nobj == hs->cap) {
    if (!hs_grow(hs, 2*hs->cap)) {
      hs->nomem = 1;
      hs->wb->flags |= LJ_WBUF_STOP;  /* The numbers would go wrong. */
      return LJH_TARGET_NEW;
    }
    return hs_ref(hs, o);
  }
  hs->obj[hs->nobj] = o;
  hs->slot[h] = ++hs->nobj;
  return LJH_TARGET_NEW;
}

/* -- Writing ------------------------------------------------------------- */

#define hs_uleb(hs, v)	lj_wbuf_adduleb((hs)->wb, (uint64_t)(v))
#define hs_byte(hs, b)	lj_wbuf_addbyte((hs)->wb, (uint8_t)(b))

static void hs_target(HeapSnap *hs, GCobj *o)
{
  hs_uleb(hs, hs_ref(hs, o));
  hs->nedges++;
}

static void hs_tvtarget(HeapSnap *hs, cTValue *o)
{
  if (tvisgcv(o))
    hs_target(hs, gcV(o));
  else
    hs_uleb(hs, LJH_TARGET_NONE);
}

static void hs_edge(HeapSnap *hs, int kind, GCobj *o)
{
  if (o != NULL) {
    hs_byte(hs, kind);
    hs_target(hs, o);
  }
}

static void hs_edgeidx(HeapSnap *hs, int kind, uint64_t idx, GCobj *o)
{
  if (o != NULL) {
    hs_byte(hs, kind);
    hs_uleb(hs, idx);
    hs_target(hs, o);
  }
}

static void hs_root(HeapSnap *hs, int kind, uint64_t arg, GCobj *o)
{
  if (o != NULL) {
    hs_byte(hs, LJH_E_ROOT);
    hs_uleb(hs, kind);
    hs_uleb(hs, arg);
    hs_target(hs, o);
  }
}

/* A string that names something (a key, a chunk): its contents are
** written whatever the config says, in its record or, if that is written
** already, in a name record after the object being written. */
static uint64_t hs_nameref(HeapSnap *hs, GCobj *o)
{
  uint64_t ref = hs_ref(hs, o);
  uint32_t id = ref == LJH_TARGET_NEW ? hs->nobj - 1 :
				       (uint32_t)(ref - LJH_TARGET_ID);
  if (o->gch.gct != ~LJ_TSTR || hs->nomem || hs->named[id])
    return ref;
  hs->named[id] = 1;
  if (id < hs->scan) {
    if (hs->nlater == hs->caplater) {
      uint32_t cap = hs->caplater ? 2*hs->caplater : 64;
      uint32_t *later = (uint32_t *)realloc(hs->later, cap*sizeof(uint32_t));
      if (later == NULL) {
	hs->named[id] = 0;
	return ref;
      }
      hs->later = later;
      hs->caplater = cap;
    }
    hs->later[hs->nlater++] = id;
  }
  return ref;
}

static void hs_content(HeapSnap *hs, GCstr *s, uint64_t max)
{
  lj_wbuf_addstring(hs->wb, strdata(s), s->len < max ? s->len : (size_t)max);
}

static uint64_t hs_zigzag(int64_t v)
{
  return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* An object's header, its address and the bytes it takes. */
static void hs_head(HeapSnap *hs, int type, const void *o, uint64_t size)
{
  uintptr_t a = (uintptr_t)o;
  hs_byte(hs, type);
  hs_uleb(hs, hs_zigzag((int64_t)(a - hs->lastaddr)));
  hs->lastaddr = a;
  hs->nbytes += size;
}

/* -- Tables -------------------------------------------------------------- */

#if LJ_HASFFI
/* The table of cdata finalizers: a GC root in the newer trees (patch
** ffi-fin-root/0013 says so), CTState's before. */
static GCtab *hs_ffifin(global_State *g)
{
#ifdef LJ_PROF_FFIFIN_ROOT
  return tabref(g->gcroot[GCROOT_FFI_FIN]);
#else
  CTState *cts = ctype_ctsG(g);
  return cts != NULL ? cts->finalizer : NULL;
#endif
}
#endif

/* A table's weak parts, as the GC sees them (gc_traverse_tab). */
static int hs_weak(HeapSnap *hs, GCtab *t, GCtab *mt)
{
  cTValue *mode = lj_meta_fastg(hs->g, mt, MM_mode);
  const char *s;
  int weak = 0;
  if (mode == NULL || !tvisstr(mode))
    return 0;
  for (s = strVdata(mode); *s; s++) {
    if (*s == 'k') weak |= LJH_WEAKKEY;
    else if (*s == 'v') weak |= LJH_WEAKVAL;
  }
#if LJ_HASFFI
  /* The finalizers of cdata: weak keys, strong values, whatever its mode. */
  if (weak && hs_ffifin(hs->g) == t)
    weak = LJH_WEAKKEY;
#else
  UNUSED(t);
#endif
  return weak;
}

/* A number key: whole numbers as such, others by their bits. */
static void hs_numkey(HeapSnap *hs, cTValue *k)
{
  lua_Number n = numberVnum(k);
  if (n >= -9007199254740992.0 && n <= 9007199254740992.0 &&
      n == (lua_Number)(int64_t)n) {
    hs_byte(hs, LJH_E_HINT);
    hs_uleb(hs, hs_zigzag((int64_t)n));
  } else {
    TValue tv;
    setnumV(&tv, n);
    hs_byte(hs, LJH_E_HNUM);
    hs_uleb(hs, tv.u64);
  }
}

/* A hash slot: a GC key is named by its object (and held by the table
** even when the value is no object); other keys name the value only. */
static void hs_node(HeapSnap *hs, const Node *n)
{
  cTValue *k = &n->key, *v = &n->val;
  if (tvisgcv(k)) {
    hs_byte(hs, tvisstr(k) ? LJH_E_HSTR : LJH_E_HOBJ);
    hs_uleb(hs, hs_nameref(hs, gcV(k)));
    hs->nedges++;
    hs_tvtarget(hs, v);
    return;
  }
  if (!tvisgcv(v))
    return;
  if (tvisnumber(k)) {
    hs_numkey(hs, k);
  } else if (tvisbool(k)) {
    hs_byte(hs, LJH_E_HBOOL);
    hs_byte(hs, boolV(k));
  } else {
    hs_byte(hs, LJH_E_HLIGHT);
    hs_uleb(hs, (uintptr_t)lightudV(hs->g, k));
  }
  hs_target(hs, gcV(v));
}

static void hs_tab(HeapSnap *hs, GCtab *t)
{
  GCtab *mt = tabref(t->metatable);
  MSize i, hsize = t->hmask ? t->hmask + 1 : 0;
  uint64_t size = sizeof(GCtab) + sizeof(TValue) * t->asize +
		  sizeof(Node) * hsize;
  hs_head(hs, LJH_OBJ_TAB | hs_weak(hs, t, mt), t, size);
  hs_uleb(hs, size);
  hs_uleb(hs, t->asize);
  hs_uleb(hs, hsize);
  hs_edge(hs, LJH_E_META, obj2gco(mt));
  for (i = 0; i < t->asize; i++) {
    cTValue *o = arrayslot(t, i);
    if (tvisgcv(o))
      hs_edgeidx(hs, LJH_E_ARRAY, i, gcV(o));
  }
  for (i = 0; i < hsize; i++) {
    const Node *n = &noderef(t->node)[i];
    if (!tvisnil(&n->val))
      hs_node(hs, n);
  }
}

/* -- Functions and protos ------------------------------------------------ */

static void hs_func(HeapSnap *hs, GCfunc *fn)
{
  uint32_t i;
  if (isluafunc(fn)) {
    uint64_t size = sizeLfunc((MSize)fn->l.nupvalues);
    hs_head(hs, LJH_OBJ_LFUNC, fn, size);
    hs_uleb(hs, size);
    hs_edge(hs, LJH_E_PROTO, obj2gco(funcproto(fn)));
    hs_edge(hs, LJH_E_ENV, obj2gco(tabref(fn->l.env)));
    for (i = 0; i < fn->l.nupvalues; i++)
      hs_edgeidx(hs, LJH_E_UPVAL, i, gcref(fn->l.uvptr[i]));
  } else {
    uint64_t size = sizeCfunc((MSize)fn->c.nupvalues);
    hs_head(hs, LJH_OBJ_CFUNC, fn, size);
    hs_uleb(hs, size);
    hs_uleb(hs, (uintptr_t)fn->c.f);
    hs_uleb(hs, fn->c.ffid);
    hs_edge(hs, LJH_E_ENV, obj2gco(tabref(fn->c.env)));
    for (i = 0; i < fn->c.nupvalues; i++)
      if (tvisgcv(&fn->c.upvalue[i]))
	hs_edgeidx(hs, LJH_E_UPVAL, i, gcV(&fn->c.upvalue[i]));
  }
}

static void hs_proto(HeapSnap *hs, GCproto *pt)
{
  MSize i;
  hs_head(hs, LJH_OBJ_PROTO, pt, pt->sizept);
  hs_uleb(hs, pt->sizept);
  hs_uleb(hs, pt->firstline);
  hs_uleb(hs, pt->numline);
  hs_uleb(hs, pt->sizeuv);
  for (i = 0; i < pt->sizeuv; i++) {
    const char *name = lj_debug_uvname(pt, i);
    lj_wbuf_addstring(hs->wb, name, strlen(name));
  }
  hs_byte(hs, LJH_E_CHUNK);
  hs_uleb(hs, hs_nameref(hs, obj2gco(proto_chunkname(pt))));
  hs->nedges++;
  for (i = 0; i < pt->sizekgc; i++)
    hs_edgeidx(hs, LJH_E_KGC, i, proto_kgc(pt, ~(ptrdiff_t)i));
#if LJ_HASJIT
  if (pt->trace)
    hs_edge(hs, LJH_E_TRACE, obj2gco(traceref(G2J(hs->g), pt->trace)));
#endif
}

static void hs_upval(HeapSnap *hs, GCupval *uv)
{
  hs_head(hs, LJH_OBJ_UPVAL, uv, sizeof(GCupval));
  hs_byte(hs, uv->closed);
  if (tvisgcv(uvval(uv)))
    hs_edge(hs, LJH_E_VALUE, gcV(uvval(uv)));
}

/* -- Threads ------------------------------------------------------------- */

/* What coroutine.status() says, with the snapshot's thread running. */
static int hs_status(HeapSnap *hs, lua_State *th)
{
  if (th == hs->L) return LJH_THREAD_RUNNING;
  if (th->status == LUA_YIELD) return LJH_THREAD_SUSPENDED;
  if (th->status != LUA_OK) return LJH_THREAD_DEAD;
  if (th->base > tvref(th->stack)+1+LJ_FR2) return LJH_THREAD_NORMAL;
  if (th->top == th->base) return LJH_THREAD_DEAD;
  return LJH_THREAD_SUSPENDED;
}

/* th's frames, innermost first, as far as each checks out. */
static int hs_frames(HeapSnap *hs, lua_State *th)
{
  TValue *frame = th->base - 1;
  hs->nframes = 0;
  while (frame > tvref(th->stack) + LJ_FR2 &&
	 lj_prof_framefunc(th, frame) != NULL) {
    if (hs->nframes == hs->capframes) {
      MSize cap = hs->capframes ? 2*hs->capframes : 64;
      TValue **f = (TValue **)realloc(hs->frames, cap * sizeof(TValue *));
      if (f == NULL)
	return 0;
      hs->frames = f;
      hs->capframes = cap;
    }
    hs->frames[hs->nframes++] = frame;
    if ((frame = (TValue *)lj_prof_framebelow(th, frame, 0)) == NULL)
      break;
  }
  return 1;
}

/* The bytecode a Lua frame runs, from the frame above it or, for the
** innermost frame of the thread taking the snapshot, the PC the
** interpreter saved (a trace saves none); NO_BCPOS when it is not known. */
static BCPos hs_framepc(HeapSnap *hs, lua_State *th, GCproto *pt,
			cTValue *nextframe)
{
  const BCIns *ins;
  BCPos pos;
  if (nextframe == NULL) {
    void *cf = cframe_raw(th->cframe);
    if (th != hs->L || lj_prof_intrace(hs->g->vmstate) || cf == NULL ||
	(void *)cframe_pc(cf) == (void *)cframe_L(cf))
      return NO_BCPOS;
    ins = cframe_pc(cf);
  } else if (frame_islua(nextframe))
    ins = frame_pc(nextframe);
  else if (frame_iscont(nextframe))
    ins = frame_contpc(nextframe);
  else
    return NO_BCPOS;
  pos = proto_bcpos(pt, ins) - 1;
  if (pos >= pt->sizebc)
    return NO_BCPOS;
  /* A frame returning (a hook, the end of a script): its locals hold
  ** until it is gone, named as at the instruction before. */
  if (pos > 0 && bc_isret(bc_op(proto_bc(pt)[pos])))
    pos--;
  return pos;
}

/* The slots of th from the bottom up: each frame is a FRAME edge to its
** function, its slots follow it, each named by its local variable where
** the frame's bytecode tells. */
static void hs_stack(HeapSnap *hs, lua_State *th)
{
  TValue *o = tvref(th->stack) + 1 + LJ_FR2, *base = o;
  GCproto *pt = NULL;
  BCPos pos = NO_BCPOS;
  MSize k;
  if (!hs_frames(hs, th)) {
    hs->nomem = 1;
    hs->wb->flags |= LJ_WBUF_STOP;
    return;
  }
  k = hs->nframes;
  for (; o < th->top; o++) {
    while (k > 0 && hs->frames[k-1] - LJ_FR2 < o)
      k--;  /* Not where a frame should be: its slots go unnamed. */
    const char *name = NULL;
    size_t len;
    if (k > 0 && o == hs->frames[k-1] - LJ_FR2) {  /* A frame begins. */
      GCfunc *fn = frame_func(hs->frames[k-1]);
      BCLine line = 0;
      k--;
      pt = isluafunc(fn) ? funcproto(fn) : NULL;
      pos = pt ? hs_framepc(hs, th, pt, k > 0 ? hs->frames[k-1] : NULL) :
		 NO_BCPOS;
      if (pos != NO_BCPOS)
	line = lj_debug_line(pt, pos);
      hs_byte(hs, LJH_E_FRAME);
      hs_uleb(hs, line > 0 ? line : 0);
      hs_target(hs, obj2gco(fn));
      o += LJ_FR2;  /* The frame's link. */
      base = o + 1;
      continue;
    }
    if (!tvisgcv(o))
      continue;
    if (pos != NO_BCPOS) {
      const char *what = lj_debug_slotname(pt, proto_bc(pt) + pos,
					   (BCReg)(o - base), &name);
      if (what == NULL || strcmp(what, "local") != 0)
	name = NULL;
    }
    len = name ? strlen(name) : 0;
    hs_byte(hs, LJH_E_SLOT);
    hs_uleb(hs, o - base);
    lj_wbuf_addstring(hs->wb, name ? name : "", len);
    hs_target(hs, gcV(o));
  }
}

static void hs_thread(HeapSnap *hs, lua_State *th)
{
  uint64_t size = sizeof(lua_State) + sizeof(TValue) * th->stacksize;
  hs_head(hs, LJH_OBJ_THREAD, th, size);
  hs_uleb(hs, size);
  hs_byte(hs, hs_status(hs, th));
  hs_edge(hs, LJH_E_ENV, obj2gco(tabref(th->env)));
  hs_stack(hs, th);
}

/* -- Userdata, cdata, strings, traces ------------------------------------ */

static void hs_udata(HeapSnap *hs, GCudata *ud)
{
  hs_head(hs, LJH_OBJ_UDATA, ud, sizeudata(ud));
  hs_uleb(hs, sizeudata(ud));
  hs_uleb(hs, ud->udtype);
  hs_edge(hs, LJH_E_META, obj2gco(tabref(ud->metatable)));
  hs_edge(hs, LJH_E_ENV, obj2gco(tabref(ud->env)));
}

static void hs_str(HeapSnap *hs, GCstr *s)
{
  uint64_t size = lj_str_size(s->len);
  int named = hs->named[hs->scan];
  hs_head(hs, LJH_OBJ_STR | (named || hs->cfg->strings ? LJH_CONTENT : 0),
	  s, size);
  hs_uleb(hs, s->len);
  hs_uleb(hs, size - s->len);
  if (named)
    hs_content(hs, s, LJH_NAME_MAX > hs->cfg->strings ? LJH_NAME_MAX :
							hs->cfg->strings);
  else if (hs->cfg->strings)
    hs_content(hs, s, hs->cfg->strings);
}

/* Names met after their strings were written. */
static void hs_later(HeapSnap *hs)
{
  uint32_t i;
  for (i = 0; i < hs->nlater; i++) {
    GCstr *s = gco2str(hs->obj[hs->later[i]]);
    hs_byte(hs, LJH_REC_NAME);
    hs_uleb(hs, hs->later[i]);
    hs_content(hs, s, LJH_NAME_MAX > hs->cfg->strings ? LJH_NAME_MAX :
							hs->cfg->strings);
  }
  hs->nlater = 0;
}

#if LJ_HASFFI
/* A C name of ctype id in buf, without GC strings: the reader has only
** the id otherwise. Pointers, arrays and qualifiers are suffixes. */
static void hs_ctypename(CTState *cts, CTypeID id, char *buf, size_t sz)
{
  char suffix[64];
  size_t ns = 0;
  int depth;
  suffix[0] = '\0';
  for (depth = 0; depth < 16; depth++) {
    CType *ct = ctype_get(cts, id);
    CTInfo info = ct->info;
    GCstr *name = gcref(ct->name) ? strref(ct->name) : NULL;
    if (ctype_isptr(info) || ctype_isarray(info)) {
      if (ns + 3 < sizeof(suffix))
	ns += (size_t)sprintf(suffix + ns, ctype_isptr(info) ? "*" : "[]");
    } else if (ctype_isattrib(info) || ctype_type(info) == CT_CONSTVAL ||
	       ctype_type(info) == CT_FIELD) {
      /* Look through to the type. */
    } else if (ctype_isnum(info)) {
      if (info & CTF_BOOL)
	snprintf(buf, sz, "bool%s", suffix);
      else if (info & CTF_FP)
	snprintf(buf, sz, "%s%s", ct->size == 4 ? "float" : "double", suffix);
      else
	snprintf(buf, sz, "%sint%u_t%s", (info & CTF_UNSIGNED) ? "u" : "",
		 (unsigned)ct->size * 8, suffix);
      return;
    } else if (ctype_isvoid(info)) {
      snprintf(buf, sz, "void%s", suffix);
      return;
    } else if (ctype_isstruct(info) || ctype_isenum(info)) {
      const char *kw = ctype_isenum(info) ? "enum" :
		       (info & CTF_UNION) ? "union" : "struct";
      if (name)
	snprintf(buf, sz, "%s %s%s", kw, strdata(name), suffix);
      else
	snprintf(buf, sz, "%s %u%s", kw, (unsigned)id, suffix);
      return;
    } else if (ctype_isfunc(info)) {
      snprintf(buf, sz, "function%s", suffix);
      return;
    } else {
      break;
    }
    id = ctype_cid(info);
  }
  snprintf(buf, sz, "ctype %u%s", (unsigned)id, suffix);
}

/* A ctype's name before the first cdata of it. */
static void hs_ctype(HeapSnap *hs, CTypeID id)
{
  CTState *cts = ctype_ctsG(hs->g);
  char name[128];
  if (hs->nctseen < cts->top) {
    uint8_t *seen = (uint8_t *)realloc(hs->ctseen, cts->top);
    if (seen == NULL)
      return;
    memset(seen + hs->nctseen, 0, cts->top - hs->nctseen);
    hs->ctseen = seen;
    hs->nctseen = cts->top;
  }
  if (id >= hs->nctseen || hs->ctseen[id])
    return;
  hs->ctseen[id] = 1;
  hs_ctypename(cts, id, name, sizeof(name));
  hs_byte(hs, LJH_REC_CTYPE);
  hs_uleb(hs, id);
  lj_wbuf_addstring(hs->wb, name, strlen(name));
}

static void hs_cdata(HeapSnap *hs, GCcdata *cd)
{
  uint64_t size;
  if (cdataisv(cd)) {
    size = sizecdatav(cd);
  } else {
    CType *ct = ctype_raw(ctype_ctsG(hs->g), cd->ctypeid);
    size = sizeof(GCcdata) + (ctype_hassize(ct->info) ? ct->size :
							 CTSIZE_PTR);
  }
  hs_ctype(hs, cd->ctypeid);
  hs_head(hs, LJH_OBJ_CDATA, cd, size);
  hs_uleb(hs, size);
  hs_uleb(hs, cd->ctypeid);
}
#endif

#if LJ_HASJIT
/* The constants of a trace's IR (gc_traverse_trace). */
static void hs_irconst(HeapSnap *hs, GCtrace *T, int root)
{
  IRRef ref;
  for (ref = T->nk; ref < REF_TRUE; ref++) {
    IRIns *ir = &T->ir[ref];
    if (ir->o == IR_KGC) {
      if (root)
	hs_root(hs, LJH_ROOT_CURTRACE, REF_BIAS - ref, ir_kgc(ir));
      else
	hs_edgeidx(hs, LJH_E_KGC, REF_BIAS - ref, ir_kgc(ir));
    }
    if (irt_is64(ir->t) && ir->o != IR_KNULL)
      ref++;
  }
}

static void hs_trace(HeapSnap *hs, GCtrace *T)
{
  jit_State *J = G2J(hs->g);
  uint64_t size = ((sizeof(GCtrace)+7)&~7) + (T->nins-T->nk)*sizeof(IRIns) +
		  T->nsnap*sizeof(SnapShot) + T->nsnapmap*sizeof(SnapEntry);
  hs_head(hs, LJH_OBJ_TRACE, T, size);
  hs_uleb(hs, size);
  hs_uleb(hs, T->traceno);
  hs_edge(hs, LJH_E_PROTO, gcref(T->startpt));
  if (T->traceno == 0)
    return;
  hs_irconst(hs, T, 0);
  if (T->link) hs_edge(hs, LJH_E_TRACE, obj2gco(traceref(J, T->link)));
  if (T->nextroot)
    hs_edge(hs, LJH_E_TRACE, obj2gco(traceref(J, T->nextroot)));
  if (T->nextside)
    hs_edge(hs, LJH_E_TRACE, obj2gco(traceref(J, T->nextside)));
}
#endif

/* -- The walk ------------------------------------------------------------ */

static void hs_object(HeapSnap *hs, GCobj *o)
{
  switch (o->gch.gct) {
  case ~LJ_TSTR: hs_str(hs, gco2str(o)); return;  /* No edges. */
#if LJ_HASFFI
  case ~LJ_TCDATA: hs_cdata(hs, gco2cd(o)); return;
#endif
  case ~LJ_TTAB: hs_tab(hs, gco2tab(o)); break;
  case ~LJ_TFUNC: hs_func(hs, gco2func(o)); break;
  case ~LJ_TPROTO: hs_proto(hs, gco2pt(o)); break;
  case ~LJ_TUPVAL: hs_upval(hs, gco2uv(o)); break;
  case ~LJ_TTHREAD: hs_thread(hs, gco2th(o)); break;
  case ~LJ_TUDATA: hs_udata(hs, gco2ud(o)); break;
#if LJ_HASJIT
  case ~LJ_TTRACE: hs_trace(hs, gco2trace(o)); break;
#endif
  default: lj_assertG_(hs->g, 0, "bad GC type"); break;
  }
  hs_byte(hs, LJH_E_END);
}

/* The GC's roots (gc_mark_start, atomic), globals first: the shortest
** path to an object reachable from both names it from _G. */
static void hs_roots(HeapSnap *hs)
{
  global_State *g = hs->g;
  GCobj *u;
  int i;
  hs_byte(hs, LJH_REC_ROOTS);
  hs_root(hs, LJH_ROOT_GLOBALS, 0, obj2gco(tabref(mainthread(g)->env)));
  if (tvisgcv(&g->registrytv))
    hs_root(hs, LJH_ROOT_REGISTRY, 0, gcV(&g->registrytv));
  hs_root(hs, LJH_ROOT_MAINTHREAD, 0, obj2gco(mainthread(g)));
  hs_root(hs, LJH_ROOT_CURTHREAD, 0, obj2gco(hs->L));
  for (i = 0; i <= GCROOT_BASEMT_NUM - GCROOT_BASEMT; i++)
    hs_root(hs, LJH_ROOT_BASEMT, i, gcref(g->gcroot[GCROOT_BASEMT+i]));
  for (i = 0; i < MM__MAX; i++)
    hs_root(hs, LJH_ROOT_MMNAME, i, gcref(g->gcroot[GCROOT_MMNAME+i]));
  hs_root(hs, LJH_ROOT_IO, 0, gcref(g->gcroot[GCROOT_IO_INPUT]));
  hs_root(hs, LJH_ROOT_IO, 1, gcref(g->gcroot[GCROOT_IO_OUTPUT]));
  if ((u = gcref(g->gc.mmudata)) != NULL) {  /* A circular list. */
    GCobj *o = u;
    i = 0;
    do {
      o = gcnext(o);
      hs_root(hs, LJH_ROOT_FINALIZE, i++, o);
    } while (o != u);
  }
#if LJ_HASFFI
  if (hs_ffifin(g) != NULL)
    hs_root(hs, LJH_ROOT_CDATAFIN, 0, obj2gco(hs_ffifin(g)));
#endif
#if LJ_HASJIT
  if (G2J(g)->cur.traceno != 0)
    hs_irconst(hs, &G2J(g)->cur, 1);
#endif
  hs_byte(hs, LJH_E_END);
}

static uint64_t hs_nanotime(clockid_t clk)
{
  struct timespec ts;
  clock_gettime(clk, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int lj_heapsnap_write(lua_State *L, struct lj_wbuf *wb,
		      const HeapSnapConfig *cfg)
{
  static const char prologue[] = { 'l', 'j', 'h', LJH_VERSION, 0, 0, 0 };
  HeapSnap hs;
  uint64_t t0 = hs_nanotime(CLOCK_MONOTONIC);
  uint64_t id = hs_nanotime(CLOCK_REALTIME) | 1;  /* Never 0. */
  uint32_t i;
  memset(&hs, 0, sizeof(hs));
  hs.g = G(L);
  hs.L = L;
  hs.wb = wb;
  hs.cfg = cfg;
  if (!hs_firstgrow(&hs))
    return PROFILE_ERRMEM;
  lj_wbuf_addn(wb, prologue, sizeof(prologue));
  hs_uleb(&hs, cfg->strings ? LJH_CONFIG_STRINGS : 0);
  hs_uleb(&hs, cfg->strings);
  hs_uleb(&hs, sizeof(GCupval));
  /* A memory profile running gets the same mark: its events up to the
  ** mark are those of the heap written here (the walk allocates none). */
  if (lj_memprof_snapmark(hs.g, id)) {
    hs_byte(&hs, LJH_REC_MEMPROF);
    hs_uleb(&hs, id);
  }
  hs_roots(&hs);
  for (i = 0; i < hs.nobj && !lj_wbuf_failed(wb); i++) {
    hs.scan = i;
    hs_object(&hs, hs.obj[i]);
    if (hs.nlater)
      hs_later(&hs);
  }
  hs_byte(&hs, LJH_REC_INFO);
  hs_uleb(&hs, hs_nanotime(CLOCK_MONOTONIC) - t0);
  hs_uleb(&hs, hs.nobj);
  hs_uleb(&hs, hs.nedges);
  hs_uleb(&hs, hs.nbytes);
  hs_byte(&hs, LJH_END);
  lj_wbuf_flush(wb);
  hs_freetables(&hs);
  free(hs.frames);
  free(hs.ctseen);
  free(hs.later);
  if (hs.nomem)
    return PROFILE_ERRMEM;
  return (wb->flags & LJ_WBUF_ERRIO) ? PROFILE_ERRIO : PROFILE_SUCCESS;
}

int lj_heapsnap_file(lua_State *L, const char *path,
		     const HeapSnapConfig *cfg)
{
  struct lj_wbuf wb;
  ProfFile *pf = lj_proffile_open(path, LJ_PROFFILE_SYSBUF);
  int status;
  if (pf == NULL)
    return errno == ENOMEM ? PROFILE_ERRMEM : PROFILE_ERRIO;
  lj_wbuf_init(&wb, lj_proffile_write, pf, lj_proffile_buf(pf),
	       lj_proffile_bufsize(pf));
  status = lj_heapsnap_write(L, &wb, cfg);
  if (lj_proffile_close(pf, wb.buf) != 0 && status == PROFILE_SUCCESS)
    status = PROFILE_ERRIO;
  else if (status == PROFILE_ERRIO)
    errno = wb.saved_errno;
  return status;
}

LUA_API int luaM_heapsnapshot(lua_State *L, const char *path)
{
  HeapSnapConfig cfg;
  cfg.strings = 0;
  return lj_heapsnap_file(L, path, &cfg);
}
