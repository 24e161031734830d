/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Where in Lua code the profilers are: PCs, and the frames of traces from
** the map each trace keeps of its machine code.
*/

#define lj_proftrace_c
#define LUA_CORE

#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "lj_proftrace.h"

#if LJ_HASJIT

#include "lj_bc.h"
#include "lj_dispatch.h"
#include "lj_frame.h"
#include "lj_gc.h"
#include "lj_ir.h"
#include "lj_jit.h"
#include "lj_wbuf.h"

#define NOPOS	LJ_PROFTRACE_NOPOS

/* -- The map of a trace -------------------------------------------------- */

/*
** One block, freed with its trace: the functions its positions name, then
** bytes. First the positions, parents before children, each ULEB128: the
** function's index, the PC (one ahead) as an index into its bytecode and
** how many positions back its parent is (0: none). Then the code ranges in
** ascending order, each ULEB128: MCode units from the start of the one
** before (of the code, for the first) and its position + 1 (0: none).
** Lookups scan: a few hundred bytes, read once per sample or new call site.
**
** Code offsets, here as in the snapshots' mcofs, count MCode units, as
** the assembler's pointers do: bytes on x86-64, instructions on ARM64.
*/
typedef struct TraceMap {
  uint32_t size;	/* Bytes of the block. */
  uint32_t nbytes;	/* Bytes of positions and ranges. */
  uint32_t ranges;	/* Where the ranges start in them. */
  uint16_t npt, npos;
} TraceMap;

#define map_pt(m)	((const GCproto *const *)((m) + 1))
#define map_bytes(m)	((const uint8_t *)(map_pt(m) + (m)->npt))

static const uint8_t *map_uleb(const uint8_t *p, const uint8_t *end,
			       uint32_t *v)
{
  uint32_t x = 0;
  int sh;
  for (sh = 0; p < end && sh < 35; sh += 7) {
    x |= (uint32_t)(*p & 0x7f) << sh;
    if (!(*p++ & 0x80)) {
      *v = x;
      return p;
    }
  }
  return NULL;
}

/* The position whose code holds ofs, or NOPOS. The tail, the last range,
** runs no instruction of its own: it leaves the trace (a link, the loop
** back, the stores and jump of a stitched call) from the last position. */
static uint32_t map_find(const TraceMap *m, MSize ofs)
{
  const uint8_t *p = map_bytes(m) + m->ranges, *end = map_bytes(m) + m->nbytes;
  const uint8_t *q;
  uint32_t start = 0, delta, pos1, pos = NOPOS, last = NOPOS;
  while ((q = map_uleb(p, end, &delta)) != NULL &&
	 (q = map_uleb(q, end, &pos1)) != NULL) {
    if ((start += delta) > ofs)
      return pos;
    p = q;
    pos = pos1 ? pos1-1 : NOPOS;
    if (pos != NOPOS)
      last = pos;
  }
  return pos != NOPOS || p != end ? pos : last;
}

/* Function, PC and parent of position p. */
static int map_pos(const TraceMap *m, uint32_t p, const GCproto **pt,
		   const BCIns **pc, uint32_t *parent)
{
  const uint8_t *b = map_bytes(m), *end = b + m->ranges;
  uint32_t i, ipt, ofs, back;
  for (i = 0; i <= p; i++)
    if ((b = map_uleb(b, end, &ipt)) == NULL ||
	(b = map_uleb(b, end, &ofs)) == NULL ||
	(b = map_uleb(b, end, &back)) == NULL)
      return 0;
  if (ipt >= m->npt || back > p)
    return 0;
  *pt = map_pt(m)[ipt];
  *pc = proto_bc(*pt) + ofs;
  *parent = back ? p - back : NOPOS;
  return 1;
}

/* The frames of position p, innermost first. */
static int map_frames(const TraceMap *m, uint32_t p,
		      const GCproto **pts, const BCIns **pcs)
{
  int n = 0;
  for (; p != NOPOS; n++)
    if (p >= m->npos || n >= LJ_PROFTRACE_MAXFRAMES ||
	!map_pos(m, p, &pts[n], &pcs[n], &p))
      return 0;
  return n;
}

MSize lj_proftrace_mapsize(const GCtrace *T)
{
  const TraceMap *m = mref(T->linemap, const TraceMap);
  return m ? m->size : 0;
}

void lj_proftrace_freemap(global_State *g, GCtrace *T)
{
  TraceMap *m = mref(T->linemap, TraceMap);
  if (m) {
    setmref(T->linemap, NULL);
    lj_mem_free(g, m, m->size);
  }
}

/* -- Positions the recorder sees ----------------------------------------- */

/* Bytes of the positions' arrays, one block. */
#define POS_BYTES(n) \
  ((n)*(MSize)(sizeof(GCproto *) + sizeof(uint32_t) + sizeof(uint16_t)))

static void pos_grow(ProfTraceRec *r, lua_State *L)
{
  MSize n = r->npos, sz = r->sizepos ? 2*r->sizepos : 64;
  char *p;
  if (sz > LJ_PROFTRACE_MAXPOS) sz = LJ_PROFTRACE_MAXPOS;
  p = (char *)lj_mem_new(L, POS_BYTES(sz));
  memcpy(p, (void *)r->pospt, n*sizeof(GCproto *));
  memcpy(p + sz*sizeof(GCproto *), r->posofs, n*sizeof(uint32_t));
  memcpy(p + sz*(sizeof(GCproto *) + sizeof(uint32_t)), r->posparent,
	 n*sizeof(uint16_t));
  if (r->pospt != NULL)
    lj_mem_free(G(L), (void *)r->pospt, POS_BYTES(r->sizepos));
  r->pospt = (const GCproto **)p;
  r->posofs = (uint32_t *)(p + sz*sizeof(GCproto *));
  r->posparent = (uint16_t *)(r->posofs + sz);
  r->sizepos = sz;
}

static LJ_AINLINE uint16_t pos_new(ProfTraceRec *r, lua_State *L,
				   const GCproto *pt, uint32_t ofs,
				   uint16_t parent)
{
  MSize n = r->npos;
  if (n >= r->sizepos) {
    if (n >= LJ_PROFTRACE_MAXPOS)
      return NOPOS;
    pos_grow(r, L);
  }
  r->pospt[n] = pt;
  r->posofs[n] = ofs;
  r->posparent[n] = parent;
  r->npos = n+1;
  return (uint16_t)n;
}

void lj_proftrace_recstart(jit_State *J)
{
  ProfTraceRec *r = J->ptrec;
  if (r == NULL) {
    r = J->ptrec = lj_mem_newt(J->L, sizeof(ProfTraceRec), ProfTraceRec);
    memset(r, 0, sizeof(ProfTraceRec));
  }
  r->npos = 0;
  r->nchain = 0;
  r->curpos = r->linepos = NOPOS;
}

/* The caller of the Lua frame at frame, and the PC it called from (one
** ahead); NULL when that is not plain Lua. A function called by pcall or
** xpcall, which a trace inlines, is the calling line's: the fast
** function's frame is left out, as its own frame is not the trace's. */
static cTValue *frame_caller(cTValue *frame, const BCIns **pc)
{
  cTValue *prev;
  if (frame_ispcall(frame) && frame_islua(frame_prevd(frame)))
    frame = frame_prevd(frame);
  if (frame_islua(frame)) {
    *pc = frame_pc(frame);
    prev = frame_prevl(frame);
  } else if (frame_iscont(frame)) {  /* A metamethod, from an instruction. */
    *pc = frame_contpc(frame);
    prev = frame_prevd(frame);
  } else {
    return NULL;
  }
  if (!isluafunc(frame_func(prev)) ||
      !lj_proftrace_inproto(funcproto(frame_func(prev)), *pc))
    return NULL;
  return prev;
}

/* The position of the bytecode recorded now. The frames the trace inlined
** are on the real stack while it records, as the snapshots see them: above
** the slot it started in. Those still the same as for the last position
** made keep theirs. */
static uint16_t pos_make(ProfTraceRec *r, lua_State *L)
{
  const BCIns *pcs[LJ_PROFTRACE_MAXFRAMES];
  const GCproto *pts[LJ_PROFTRACE_MAXFRAMES];
  cTValue *frame = L->base - 1;
  cTValue *lim = L->base - r->baseslot + LJ_FR2;
  uint16_t parent = NOPOS;
  BCLine line;
  int n = 0, i;
  while (frame > lim) {
    if (frame_isvarg(frame)) {
      frame = frame_prevd(frame);
      continue;
    }
    if (n == LJ_PROFTRACE_MAXFRAMES ||
	(frame = frame_caller(frame, &pcs[n])) == NULL)
      return NOPOS;
    pts[n++] = funcproto(frame_func(frame));
  }
  for (i = 0; i < n; i++) {  /* Outermost first. */
    const GCproto *pt = pts[n-1-i];
    uint32_t ofs = (uint32_t)(pcs[n-1-i] - proto_bc(pt));
    uint16_t p = i < r->nchain ? r->chainpos[i] : NOPOS;
    if (p == NOPOS || r->posofs[p] != ofs || r->pospt[p] != pt ||
	r->posparent[p] != parent) {
      if ((p = pos_new(r, L, pt, ofs, parent)) == NOPOS)
	return NOPOS;
      r->nchain = (uint16_t)i;
    }
    r->chainpos[i] = parent = p;
  }
  r->nchain = (uint16_t)n;
  if (r->pc == NULL)
    return parent;  /* A fast or C function runs at the line of its call. */
  /* Profilers name lines: the bytecodes of one line share a position. */
  line = lj_proftrace_line(r->pt, r->pc);
  if (r->linepos != NOPOS && line == r->line &&
      r->pospt[r->linepos] == r->pt && r->posparent[r->linepos] == parent)
    return r->linepos;
  r->line = line;
  return (r->linepos = pos_new(r, L, r->pt,
			       (uint32_t)(r->pc - proto_bc(r->pt)), parent));
}

void lj_proftrace_irslow(ProfTraceRec *r, lua_State *L, MSize i)
{
  if (i >= r->sizeirpos) {
    MSize sz = r->sizeirpos ? r->sizeirpos : LJ_MIN_IRSZ;
    while (sz <= i) sz <<= 1;
    r->irpos = (uint16_t *)lj_mem_realloc(L, r->irpos,
      r->sizeirpos*sizeof(uint16_t), sz*sizeof(uint16_t));
    r->sizeirpos = sz;
  }
  if (r->curpos == LJ_PROFTRACE_LAZY)
    r->curpos = pos_make(r, L);
}

/* -- Code ranges the assembler emits ------------------------------------- */

/* Every instruction below ins was made by lj_ir_nextins: it has a
** position. The tail of the code (links, loop back, exits) runs none; the
** head (entry, stack check) has no range: offsets before the first one. */
void lj_proftrace_asmstart(jit_State *J, MSize dist, IRRef ins)
{
  ProfTraceRec *r = J->ptrec;
  MSize need = (MSize)(ins - REF_BIAS) + 1;  /* One per instruction + tail. */
  if (r->sizerange < need) {  /* One block: rdist, then rpos. */
    r->rdist = (uint16_t *)lj_mem_realloc(J->L, r->rdist,
      2*r->sizerange*sizeof(uint16_t), 2*need*sizeof(uint16_t));
    r->rpos = r->rdist + need;
    r->sizerange = need;
  }
  /* An empty tail starts at the end of the code: nothing is looked up. */
  r->rdist[0] = (uint16_t)dist;
  r->rpos[0] = NOPOS;
  r->nrange = 1;
}

/* Mark p and the frames below it to be kept, counting the new ones. */
static MSize map_keep(ProfTraceRec *r, uint16_t p)
{
  MSize n = 0;
  for (; p != NOPOS && !r->poskeep[p]; p = r->posparent[p], n++)
    r->poskeep[p] = 1;
  return n;
}

/* The index of pt in the map's functions, added if new; -1 if full. */
static int map_ptindex(const GCproto **pts, MSize *npt, const GCproto *pt)
{
  MSize i;
  for (i = *npt; i > 0; i--)
    if (pts[i-1] == pt)
      return (int)i-1;
  if (*npt == LJ_PROFTRACE_MAXPT)
    return -1;
  pts[*npt] = pt;
  return (int)(*npt)++;
}

/* Positions with code and the frames below them, numbered anew in order
** (parents still first), then the ranges; the bytes go to r->enc. */
static MSize map_encode(ProfTraceRec *r, MSize sz, const GCproto **pts,
			MSize *npt, MSize *npos, MSize *ranges)
{
  uint8_t *p = r->enc;
  MSize i, n = 0, start = 0;
  memset(r->poskeep, 0, r->npos*sizeof(uint16_t));
  for (i = 0; i < r->nrange; i++)
    if (r->rpos[i] != NOPOS)
      map_keep(r, r->rpos[i]);
  for (i = 0; i < r->npos; i++) {
    uint16_t parent = r->posparent[i];
    int ipt;
    if (!r->poskeep[i])
      continue;
    if ((ipt = map_ptindex(pts, npt, r->pospt[i])) < 0)
      return 0;
    r->poskeep[i] = (uint16_t)++n;  /* Now: the new index + 1. */
    p = lj_wbuf_uleb(p, (uint64_t)ipt);
    p = lj_wbuf_uleb(p, r->posofs[i]);
    p = lj_wbuf_uleb(p, parent == NOPOS ? 0 : n - r->poskeep[parent]);
  }
  *npos = n;
  *ranges = (MSize)(p - r->enc);
  for (i = r->nrange; i > 0; i--) {  /* Assembled backwards: reverse. */
    MSize ofs = sz - r->rdist[i-1];
    uint16_t pos = r->rpos[i-1];
    p = lj_wbuf_uleb(p, ofs - start);
    p = lj_wbuf_uleb(p, pos == NOPOS ? 0 : r->poskeep[pos]);
    start = ofs;
  }
  return (MSize)(p - r->enc);
}

void lj_proftrace_asmdone(jit_State *J, GCtrace *T, MSize sz)
{
  ProfTraceRec *r = J->ptrec;
  const GCproto *pts[LJ_PROFTRACE_MAXPT];
  MSize npt = 0, npos, ranges, nbytes, need;
  TraceMap *m;
  if (r->nrange <= 1 || sz > 0xffff)
    return;  /* Offsets are 16 bit, as the snapshots' are. */
  need = r->npos*(2*5+3) + r->nrange*2*3;  /* ULEB128s at most. */
  if (r->sizeenc < need) {
    r->enc = (uint8_t *)lj_mem_realloc(J->L, r->enc, r->sizeenc, need);
    r->sizeenc = need;
  }
  if (r->sizekeep < r->sizepos) {
    r->poskeep = (uint16_t *)lj_mem_realloc(J->L, r->poskeep,
      r->sizekeep*sizeof(uint16_t), r->sizepos*sizeof(uint16_t));
    r->sizekeep = r->sizepos;
  }
  if ((nbytes = map_encode(r, sz, pts, &npt, &npos, &ranges)) == 0)
    return;
  m = (TraceMap *)lj_mem_new(J->L, sizeof(TraceMap) +
			     npt*sizeof(GCproto *) + nbytes);
  m->size = (uint32_t)(sizeof(TraceMap) + npt*sizeof(GCproto *) + nbytes);
  m->nbytes = nbytes;
  m->ranges = ranges;
  m->npt = (uint16_t)npt;
  m->npos = (uint16_t)npos;
  memcpy((void *)map_pt(m), pts, npt*sizeof(GCproto *));
  memcpy((void *)map_bytes(m), r->enc, nbytes);
  setmref(T->linemap, m);
  setmref(J->curfinal->linemap, m);
}

void lj_proftrace_freerec(global_State *g, ProfTraceRec *r)
{
  if (r == NULL)
    return;
  lj_mem_freevec(g, r->irpos, r->sizeirpos, uint16_t);
  if (r->pospt != NULL)
    lj_mem_free(g, (void *)r->pospt, POS_BYTES(r->sizepos));
  lj_mem_freevec(g, r->rdist, 2*r->sizerange, uint16_t);
  lj_mem_freevec(g, r->poskeep, r->sizekeep, uint16_t);
  lj_mem_freevec(g, r->enc, r->sizeenc, uint8_t);
  lj_mem_free(g, r, sizeof(ProfTraceRec));
}

/* -- Frames at an address ------------------------------------------------ */

/* The offset of ip in T's code, in MCode units (see TraceMap); -1 if ip
** lies outside it. */
static int32_t trace_ofs(const GCtrace *T, uintptr_t ip)
{
  uintptr_t ofs = ip - (uintptr_t)T->mcode;
  if (ip < (uintptr_t)T->mcode || ofs >= T->szmcode)
    return -1;
  return (int32_t)(ofs / sizeof(MCode));
}

/* Instructions searched back for a function header. */
#define PROTO_SCAN_MAX	65536

/* The snapshot in force at ip in T's machine code: the last one whose
** code starts at or before ip (the assembler keeps snap->mcofs). The
** head, before the first (the entry's stack and GC checks), exits to the
** first: the state the trace was entered in. */
static const SnapShot *trace_snap(const GCtrace *T, uintptr_t ip)
{
  int32_t ofs = trace_ofs(T, ip);
  SnapNo lo = 0, hi = T->nsnap;
  if (ofs < 0)
    return NULL;
  while (lo < hi) {
    SnapNo mid = (lo + hi) >> 1;
    if (ofs < (int32_t)T->snap[mid].mcofs) hi = mid; else lo = mid + 1;
  }
  return T->nsnap > 0 ? &T->snap[lo > 0 ? lo-1 : 0] : NULL;
}

/* mincore is a plain system call, safe in a signal handler. A PC that is
** no longer in a proto makes the scan below leave the heap's pages: it
** stops there instead of faulting. */
int lj_proftrace_mapped(const void *p)
{
  uintptr_t size = (uintptr_t)getauxval(AT_PAGESZ);
  unsigned char v;
  if (size == 0)
    size = 4096;
  return mincore((void *)((uintptr_t)p & ~(size - 1)), 1, &v) == 0;
}

#define PAGE_EDGE	4096	/* Checked at every such boundary crossed. */

/* The proto of pc (one ahead), an instruction of a function a live trace
** holds: its header is the first function header at or before it. */
static const GCproto *pc_proto(const BCIns *pc)
{
  const BCIns *p = pc - 1;
  int n;
  if (!lj_proftrace_mapped(p))
    return NULL;
  for (n = 0; n < PROTO_SCAN_MAX; n++, p--) {
    BCOp op;
    if (((uintptr_t)(p + 1) & (PAGE_EDGE - 1)) == 0 &&
	!lj_proftrace_mapped(p))
      return NULL;  /* p entered a page below the last one read. */
    op = bc_op(*p);
    if (op >= BC_FUNCF && op <= BC_JFUNCV) {
      const GCproto *pt = (const GCproto *)((const char *)p - sizeof(GCproto));
      return lj_proftrace_mapped(pt) && pt->gct == ~LJ_TPROTO &&
	     lj_proftrace_inproto(pt, pc) ? pt : NULL;
    }
  }
  return NULL;
}

/* The snapshot's PC is that of the innermost frame; each frame the trace
** inlined has its return PC in the snapshot as a constant frame link. */
static int snap_frames(const GCtrace *T, const SnapShot *snap,
		       const GCproto **pts, const BCIns **pcs)
{
  const SnapEntry *map;
  uint64_t pcbase;
  MSize n;
  int m = 0;
  if (snap == NULL)
    return 0;
  map = &T->snapmap[snap->mapofs];
  memcpy(&pcbase, &map[snap->nent], sizeof(pcbase));
  pcs[m++] = (const BCIns *)(uintptr_t)(pcbase >> 8) + 1;
  for (n = snap->nent; n > 0; n--) {
    SnapEntry sn = map[n-1];
    IRRef ref = snap_ref(sn);
    uint64_t link;
    if (!(sn & (SNAP_FRAME|SNAP_CONT)) || snap_slot(sn) <= 1)
      continue;
    if (!irref_isk(ref) || !ir_isk64(&T->ir[ref]) ||
	m >= LJ_PROFTRACE_MAXFRAMES)
      return 0;
    link = ir_k64(&T->ir[ref])->u64;
    if ((link & FRAME_TYPEP) == FRAME_VARG)
      continue;  /* A vararg function's moved base: its link is below. */
    if ((link & FRAME_TYPE) != FRAME_LUA)
      return 0;  /* A continuation: its frames are not plain Lua ones. */
    if ((pts[m-1] = pc_proto(pcs[m-1])) == NULL)
      return 0;
    pcs[m++] = (const BCIns *)(uintptr_t)link;
  }
  pts[m-1] = NULL;  /* The frame's own slot says. */
  return m;
}

int lj_proftrace_frames(const GCtrace *T, uintptr_t ip,
			const GCproto **pts, const BCIns **pcs)
{
  const TraceMap *m = mref(T->linemap, const TraceMap);
  int32_t ofs = trace_ofs(T, ip);
  int n;
  if (m != NULL && ofs >= 0 &&
      (n = map_frames(m, map_find(m, (MSize)ofs), pts, pcs)) > 0)
    return n;
  return snap_frames(T, trace_snap(T, ip), pts, pcs);
}

int lj_proftrace_exitframes(const GCtrace *T, ExitNo exitno,
			    const GCproto **pts, const BCIns **pcs)
{
  /* An exit's number is its snapshot's (lj_snap_restore). */
  return exitno < T->nsnap ? snap_frames(T, &T->snap[exitno], pts, pcs) : 0;
}

/* -- The traces of a VM -------------------------------------------------- */

void lj_proftrace_each(global_State *g,
		       void (*f)(void *ud, const GCtrace *T), void *ud)
{
  jit_State *J = G2J(g);
  TraceNo i;
  for (i = 1; i < J->sizetrace; i++) {
    GCtrace *T = traceref(J, i);
    if (T != NULL && T->traceno == i)  /* Skips the one being recorded. */
      f(ud, T);
  }
}

#endif
