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
#include "lj_ir.h"
#include "lj_jit.h"

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
int lj_proftrace_frames(const GCtrace *T, uintptr_t ip,
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

/* A trace runs with the stack pointer below the interpreter's C frame by
** what the JIT adds to it (CFRAME_SIZE_JIT) and the trace's own spill
** area; a call pushes the return address just below that. */
uintptr_t lj_proftrace_retaddr(const GCtrace *T, const void *cframe)
{
  const char *sp = (const char *)cframe - (CFRAME_SIZE_JIT - CFRAME_SIZE) -
		   T->spadjust;
  uintptr_t ra = ((const uintptr_t *)sp)[-1];
  return ra >= (uintptr_t)T->mcode && ra < (uintptr_t)T->mcode + T->szmcode ?
	 ra : 0;
}

#endif
