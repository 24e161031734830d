/*
** Where in Lua code the profilers are: PCs, and the frames of traces.
*/

#define lj_proftrace_c
#define LUA_CORE

#include <string.h>

#include "lj_proftrace.h"

#if LJ_HASJIT

#include "lj_bc.h"
#include "lj_frame.h"
#include "lj_gc.h"
#include "lj_ir.h"
#include "lj_jit.h"

#define NOPOS	LJ_PROFTRACE_NOPOS

/* -- The map of a trace --------------------------------------------------- */

/*
** One block, freed with its trace: code ranges ascending (offset of their
** start, position), then positions (proto, bytecode index one ahead, the
** position of the call of its frame). A position's parent comes before it.
*/
typedef struct TraceMap {
  MSize size;		/* Bytes of the block. */
  uint16_t nrange, npos;
} TraceMap;

#define map_pt(m)	((const GCproto **)((m) + 1))
#define map_bcofs(m)	((uint32_t *)(map_pt(m) + (m)->npos))
#define map_parent(m)	((uint16_t *)(map_bcofs(m) + (m)->npos))
#define map_rofs(m)	(map_parent(m) + (m)->npos)
#define map_rpos(m)	(map_rofs(m) + (m)->nrange)

static MSize map_size(MSize npos, MSize nrange)
{
  return (MSize)sizeof(TraceMap) +
	 npos*(MSize)(sizeof(GCproto *) + sizeof(uint32_t) + sizeof(uint16_t)) +
	 nrange*2*(MSize)sizeof(uint16_t);
}

/* The position whose code holds ofs, or NOPOS. */
static uint16_t map_find(const TraceMap *m, MSize ofs)
{
  const uint16_t *rofs = map_rofs(m);
  MSize lo = 0, hi = m->nrange;
  while (lo < hi) {
    MSize mid = (lo + hi) >> 1;
    if (ofs < rofs[mid]) hi = mid; else lo = mid + 1;
  }
  return lo > 0 ? map_rpos(m)[lo-1] : NOPOS;
}

/* The frames of position p, innermost first. */
static int map_frames(const TraceMap *m, uint16_t p,
		      const GCproto **pts, const BCIns **pcs)
{
  int n = 0;
  for (; p != NOPOS; p = map_parent(m)[p]) {
    if (n >= LJ_PROFTRACE_MAXFRAMES || p >= m->npos)
      return 0;
    pts[n] = map_pt(m)[p];
    pcs[n] = proto_bc(pts[n]) + map_bcofs(m)[p];
    n++;
  }
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

/* -- Positions the recorder sees ------------------------------------------ */

void lj_proftrace_growirpos(ProfTraceRec *r, lua_State *L, MSize n)
{
  MSize sz = r->sizeirpos ? r->sizeirpos : LJ_MIN_IRSZ;
  while (sz < n) sz <<= 1;
  r->irpos = (uint16_t *)lj_mem_realloc(L, r->irpos,
    r->sizeirpos*sizeof(uint16_t), sz*sizeof(uint16_t));
  r->sizeirpos = sz;
}

static uint16_t pos_new(jit_State *J, const GCproto *pt, const BCIns *pc,
			uint16_t parent)
{
  ProfTraceRec *r = &J->ptrec;
  ProfTracePos *p;
  if (r->npos >= NOPOS)
    return NOPOS;
  if (r->npos >= r->sizepos)
    lj_mem_growvec(J->L, r->pos, r->sizepos, NOPOS, ProfTracePos);
  p = &r->pos[r->npos];
  p->pt = pt;
  p->pc = pc;
  p->parent = parent;
  p->keep = 0;
  return (uint16_t)r->npos++;
}

void lj_proftrace_recstart(jit_State *J)
{
  ProfTraceRec *r = &J->ptrec;
  r->npos = 0;
  r->nchain = 0;
  r->curpos = NOPOS;
}

/* The caller of the Lua frame at frame, and the PC it called from (one
** ahead); NULL when that is not plain Lua. */
static cTValue *frame_caller(cTValue *frame, const BCIns **pc)
{
  cTValue *prev;
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

/* The frames the trace inlined are on the real stack while it records, as
** the snapshots see them: above the slot it started in. Those still the
** same as for the last bytecode keep their positions. */
void lj_proftrace_record(jit_State *J)
{
  ProfTraceRec *r = &J->ptrec;
  const BCIns *pcs[LJ_PROFTRACE_MAXFRAMES];
  const GCproto *pts[LJ_PROFTRACE_MAXFRAMES];
  cTValue *frame = J->L->base - 1;
  cTValue *lim = J->L->base - J->baseslot + LJ_FR2;
  uint16_t parent = NOPOS;
  int n = 0, i;
  r->curpos = NOPOS;
  while (frame > lim) {
    if (frame_isvarg(frame)) {
      frame = frame_prevd(frame);
      continue;
    }
    if (n == LJ_PROFTRACE_MAXFRAMES ||
	(frame = frame_caller(frame, &pcs[n])) == NULL)
      return;
    pts[n++] = funcproto(frame_func(frame));
  }
  for (i = 0; i < n; i++) {  /* Outermost first. */
    const BCIns *pc = pcs[n-1-i];
    uint16_t p = i < r->nchain ? r->chainpos[i] : NOPOS;
    if (p == NOPOS || r->pos[p].pc != pc || r->pos[p].parent != parent) {
      if ((p = pos_new(J, pts[n-1-i], pc, parent)) == NOPOS)
	return;
      r->nchain = (uint16_t)i;
    }
    r->chainpos[i] = parent = p;
  }
  r->nchain = (uint16_t)n;
  /* A fast or C function runs at the line of its call. */
  r->curpos = J->pt ? pos_new(J, J->pt, J->pc + 1, parent) : parent;
}

void lj_proftrace_inherit(jit_State *J, IRRef ins)
{
  ProfTraceRec *r = &J->ptrec;
  MSize i = (MSize)(ins - REF_BIAS);
  r->curpos = i < r->sizeirpos ? r->irpos[i] : NOPOS;
}

/* -- Code ranges the assembler emits -------------------------------------- */

static void range_add(ProfTraceRec *r, MSize dist, uint16_t pos)
{
  ProfTraceRange *last = r->nrange > 0 ? &r->range[r->nrange-1] : NULL;
  if (last != NULL && dist <= last->dist)
    return;  /* No code. */
  if (last != NULL && last->pos == pos) {
    last->dist = dist;  /* Same position: its code extends down. */
  } else if (r->nrange < r->sizerange) {
    r->range[r->nrange].dist = dist;
    r->range[r->nrange++].pos = pos;
  }
}

void lj_proftrace_asmstart(jit_State *J, MSize dist, IRRef ins)
{
  ProfTraceRec *r = &J->ptrec;
  MSize need = (MSize)(ins - REF_BIAS) + 2;  /* One per instruction + tail. */
  if (r->sizerange < need) {
    r->range = (ProfTraceRange *)lj_mem_realloc(J->L, r->range,
      r->sizerange*sizeof(ProfTraceRange), need*sizeof(ProfTraceRange));
    r->sizerange = need;
  }
  r->nrange = 0;
  if (dist > 0)
    range_add(r, dist, NOPOS);  /* The tail: links, loop back, exits. */
}

void lj_proftrace_asmins(jit_State *J, MSize dist, IRRef ins)
{
  ProfTraceRec *r = &J->ptrec;
  MSize i = (MSize)(ins - REF_BIAS);
  range_add(r, dist, i < r->sizeirpos ? r->irpos[i] : NOPOS);
}

/* Mark p and the frames below it to be kept; then number the kept ones in
** order, so parents still come first. */
static void map_keep(ProfTraceRec *r, uint16_t p)
{
  for (; p != NOPOS && !r->pos[p].keep; p = r->pos[p].parent)
    r->pos[p].keep = 1;
}

void lj_proftrace_asmdone(jit_State *J, GCtrace *T, MSize sz)
{
  ProfTraceRec *r = &J->ptrec;
  TraceMap *m;
  MSize i, npos = 0, nrange = r->nrange;
  if (nrange == 0 || sz > 0xffff)
    return;  /* Offsets are 16 bit, as the snapshots' are. */
  for (i = 0; i < nrange; i++)
    if (r->range[i].pos < r->npos)
      map_keep(r, r->range[i].pos);
  for (i = 0; i < r->npos; i++)
    if (r->pos[i].keep)
      r->pos[i].keep = (uint16_t)++npos;
  m = (TraceMap *)lj_mem_new(J->L, map_size(npos, nrange));
  m->size = map_size(npos, nrange);
  m->npos = (uint16_t)npos;
  m->nrange = (uint16_t)nrange;
  for (i = 0; i < r->npos; i++) {
    ProfTracePos *p = &r->pos[i];
    if (p->keep) {
      uint16_t k = p->keep - 1;
      map_pt(m)[k] = p->pt;
      map_bcofs(m)[k] = (uint32_t)(p->pc - proto_bc(p->pt));
      map_parent(m)[k] = p->parent == NOPOS ? NOPOS :
			 (uint16_t)(r->pos[p->parent].keep - 1);
    }
  }
  for (i = 0; i < nrange; i++) {  /* Assembled backwards: reverse. */
    uint16_t p = r->range[nrange-1-i].pos;
    map_rofs(m)[i] = (uint16_t)(sz - r->range[nrange-1-i].dist);
    map_rpos(m)[i] = p < r->npos ? (uint16_t)(r->pos[p].keep - 1) : NOPOS;
  }
  setmref(T->linemap, m);
  setmref(J->curfinal->linemap, m);
}

void lj_proftrace_freerec(global_State *g, ProfTraceRec *r)
{
  lj_mem_freevec(g, r->irpos, r->sizeirpos, uint16_t);
  lj_mem_freevec(g, r->pos, r->sizepos, ProfTracePos);
  lj_mem_freevec(g, r->range, r->sizerange, ProfTraceRange);
}

/* -- Frames at an address ------------------------------------------------- */

/* Instructions searched back for a function header. */
#define PROTO_SCAN_MAX	65536

/* The snapshot in force at ip in T's machine code: the last one whose
** code starts at or before ip (the assembler keeps snap->mcofs). */
static const SnapShot *trace_snap(const GCtrace *T, uintptr_t ip)
{
  uintptr_t ofs = ip - (uintptr_t)T->mcode;
  SnapNo lo = 0, hi = T->nsnap;
  if (ip < (uintptr_t)T->mcode || ofs >= T->szmcode)
    return NULL;
  while (lo < hi) {
    SnapNo mid = (lo + hi) >> 1;
    if (ofs < T->snap[mid].mcofs) hi = mid; else lo = mid + 1;
  }
  return lo > 0 ? &T->snap[lo-1] : NULL;
}

/* The proto of pc (one ahead), an instruction of a function a live trace
** holds: its header is the first function header at or before it. */
static const GCproto *pc_proto(const BCIns *pc)
{
  const BCIns *p = pc - 1;
  int n;
  for (n = 0; n < PROTO_SCAN_MAX; n++, p--) {
    BCOp op = bc_op(*p);
    if (op >= BC_FUNCF && op <= BC_JFUNCV) {
      const GCproto *pt = (const GCproto *)((const char *)p - sizeof(GCproto));
      return pt->gct == ~LJ_TPROTO && lj_proftrace_inproto(pt, pc) ? pt : NULL;
    }
  }
  return NULL;
}

/* The snapshot's PC is that of the innermost frame; each frame the trace
** inlined has its return PC in the snapshot as a constant frame link. */
static int snap_frames(const GCtrace *T, uintptr_t ip,
		       const GCproto **pts, const BCIns **pcs)
{
  const SnapShot *snap = trace_snap(T, ip);
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
    if ((link & FRAME_TYPE) != FRAME_LUA)
      return 0;  /* A continuation: its frames are not plain Lua ones. */
    if ((pts[m-1] = pc_proto(pcs[m-1])) == NULL)
      return 0;
    pcs[m++] = (const BCIns *)(uintptr_t)link;
  }
  return m;
}

int lj_proftrace_frames(const GCtrace *T, uintptr_t ip,
			const GCproto **pts, const BCIns **pcs)
{
  const TraceMap *m = mref(T->linemap, const TraceMap);
  int n;
  if (m != NULL && ip >= (uintptr_t)T->mcode &&
      ip < (uintptr_t)T->mcode + T->szmcode &&
      (n = map_frames(m, map_find(m, (MSize)(ip - (uintptr_t)T->mcode)),
		      pts, pcs)) > 0)
    return n;
  return snap_frames(T, ip, pts, pcs);
}

#endif
