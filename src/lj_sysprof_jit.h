/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** What the trace compiler does, in a sysprof stream: included by
** lj_sysprof.c (its state is defined there, the records' numbers in
** lj_profstream.h).
**
** The VM's thread writes the events into the ring, between samples, as
** the compiler makes them (lj_prof.h): a trace started, finished,
** aborted, a start blacklisted, the traces flushed. Exits are too many
** for a record each: they are counted by trace and exit, and the counts
** written now and then (each REC_EXITS holds what was counted since the
** last), always before the number of a trace with counts is given again.
*/

#if LJ_HASJIT

#include "lj_trace.h"

/* Exits counted before they are written; a trace and exit is a key. */
#define EXIT_SLOTS		1024	/* Power of two. */
#define EXIT_WRITE_NS		(100*1000*1000)	/* Counts this old: out. */

typedef struct SysprofExit {
  uint32_t key;			/* Trace << 16 | exit; 0: a free slot. */
  uint32_t line;		/* Where it resumes, or LJP_LINE_UNKNOWN. */
  uint64_t count;
  uintptr_t pt;			/* The proto it resumes in, or 0. */
} SysprofExit;

static const char *const trace_errfmt[] = {
#define TREDEF(name, msg)	msg,
#include "lj_traceerr.h"
};

/* Bytecode names, for a tree whose NYIBC says "%s": -jv pads them to 6. */
static const char *const trace_bcname[] = {
#define BCNAME(name, ma, mb, mc, mt)	#name,
BCDEF(BCNAME)
#undef BCNAME
};

/* The profile of J's VM if it records the compiler's events. */
static Sysprof *jit_profile(jit_State *J)
{
  Sysprof *sp = sysprof_of(J2G(J));
  return sp != NULL && atomic_load(&sp->state) == SPS_PROFILE &&
	 sp->exits != NULL ? sp : NULL;
}

static void jit_putloc(struct lj_wbuf *out, const GCproto *pt,
		       const BCIns *pc)
{
  BCLine line = lj_proftrace_line(pt, pc+1);  /* pc is the instruction. */
  lj_wbuf_adduleb(out, (uintptr_t)pt);
  lj_wbuf_adduleb(out, line >= 0 ? (uint64_t)line : LJP_LINE_UNKNOWN);
}

/* -- Exit counts --------------------------------------------------------- */

static void exits_write(Sysprof *sp, struct lj_wbuf *out)
{
  uint32_t i;
  lj_wbuf_addbyte(out, REC_EXITS);
  lj_wbuf_adduleb(out, sp->nexits);
  for (i = 0; i < EXIT_SLOTS; i++) {
    SysprofExit *e = &sp->exits[i];
    if (e->key == 0)
      continue;
    lj_wbuf_adduleb(out, e->key >> 16);
    lj_wbuf_adduleb(out, e->key & 0xffff);
    lj_wbuf_adduleb(out, e->count);
    lj_wbuf_adduleb(out, e->pt);
    lj_wbuf_adduleb(out, e->line);
    sp->exittraces[e->key >> 19] = 0;
    e->key = 0;
  }
  sp->nexits = 0;
  atomic_store_explicit(&sp->exits_due, 0, memory_order_relaxed);
}

static void exits_flush(Sysprof *sp, struct lj_wbuf *out)
{
  if (sp->nexits != 0)
    exits_write(sp, out);
}

/* Whether exits of trace n are counted and not yet written. */
static int exits_pending(Sysprof *sp, TraceNo n)
{
  return (sp->exittraces[(n >> 3) & 0x1fff] >> (n & 7)) & 1;
}

/* The slot of key: its own, or the free one it takes. */
static SysprofExit *exits_slot(Sysprof *sp, uint32_t key)
{
  uint32_t i = (key * 0x9e3779b1u) >> 22;  /* 10 bits: EXIT_SLOTS. */
  while (sp->exits[i].key != 0 && sp->exits[i].key != key)
    i = (i + 1) & (EXIT_SLOTS-1);
  return &sp->exits[i];
}

/* The function that resumes at pc after the exit: the restored frame's. */
static void exit_where(jit_State *J, const BCIns *pc, SysprofExit *e)
{
  GCfunc *fn = curr_func(J->L);
  e->pt = 0;
  e->line = LJP_LINE_UNKNOWN;
  if (isluafunc(fn)) {
    BCLine line = lj_proftrace_line(funcproto(fn), pc+1);
    e->pt = (uintptr_t)funcproto(fn);
    if (line >= 0)
      e->line = (uint32_t)line;
  }
}

/* -- Events -------------------------------------------------------------- */

/* A record from the VM's thread. */
#define JIT_RECORD(sp, u, body) \
  { RingUpdate u; update_begin(sp, &u); body; update_end(sp, &u); }

void lj_sysprof_jitstart(jit_State *J)
{
  Sysprof *sp = jit_profile(J);
  if (sp != NULL) {
    BCOp op = bc_op(*J->pc);
    int kind = J->parent ? LJP_TRACE_SIDE :
	       (op == BC_CALLM || op == BC_CALL || op == BC_ITERC) ?
	       LJP_TRACE_STITCH : LJP_TRACE_ROOT;
    uint32_t from = kind == LJP_TRACE_SIDE ? J->parent :
		    kind == LJP_TRACE_STITCH ? J->exitno : 0;
    J2G(J)->prof.flushwhy = LJ_PROF_FLUSH_ASKED;
    sp->compiling = J->cur.traceno;
    JIT_RECORD(sp, u,
      if (exits_pending(sp, J->cur.traceno))  /* Counts of the old one. */
	exits_write(sp, &u.out);
      lj_wbuf_addbyte(&u.out, REC_TRACE_START);
      lj_wbuf_adduleb(&u.out, J->cur.traceno);
      lj_wbuf_adduleb(&u.out, (uint64_t)kind);
      lj_wbuf_adduleb(&u.out, from);
      lj_wbuf_adduleb(&u.out, kind == LJP_TRACE_SIDE ? J->exitno : 0);
      jit_putloc(&u.out, J->pt, J->pc);
    )
  }
}

void lj_sysprof_jitstop(jit_State *J, GCtrace *T)
{
  Sysprof *sp = jit_profile(J);
  if (sp != NULL)
    JIT_RECORD(sp, u,
      lj_wbuf_addbyte(&u.out, REC_TRACE_END);
      lj_wbuf_adduleb(&u.out, T->traceno);
      lj_wbuf_adduleb(&u.out, T->linktype);
      lj_wbuf_adduleb(&u.out, T->link);
      lj_wbuf_adduleb(&u.out, T->nins - REF_BIAS - 1);
      lj_wbuf_adduleb(&u.out, T->szmcode);
    )
}

/* The function named in a reason, as -jv names it. */
static size_t jit_fmtfunc(char *buf, size_t sz, GCfunc *fn)
{
  if (isluafunc(fn)) {
    GCproto *pt = funcproto(fn);
    const char *name = strdata(proto_chunkname(pt));
    if (*name == '@' || *name == '=')
      name++;
    return (size_t)snprintf(buf, sz, "%s:%d", name, (int)pt->firstline);
  } else if (fn->c.ffid > FF_C) {
    return ffname(fn->c.ffid, buf, sz);
  }
  return (size_t)snprintf(buf, sz, "C:%llx",
			  (unsigned long long)(uintptr_t)fn->c.f);
}

/* Why recording stopped, in -jv's words: the error's format with its
** argument, or the error itself when Lua code raised it. */
static size_t jit_reason(jit_State *J, int e, char *buf, size_t sz)
{
  cTValue *err = J->L->top - 1;
  cTValue *info = &J->errinfo;
  const char *fmt;
  char arg[128];
  size_t n;
  if (!tvisnumber(err)) {
    if (!tvisstr(err))
      return (size_t)snprintf(buf, sz, "%s", trace_errfmt[LJ_TRERR_RECERR]);
    n = strV(err)->len < sz ? strV(err)->len : sz-1;
    memcpy(buf, strVdata(err), n);
    return n;
  }
  if (e < 0 || e >= LJ_TRERR__MAX)
    return (size_t)snprintf(buf, sz, "trace error %d", e);
  fmt = trace_errfmt[e];
  if (strstr(fmt, "%d") != NULL)
    return (size_t)snprintf(buf, sz, fmt,
			    tvisnumber(info) ? (int)numberVint(info) : 0);
  if (strstr(fmt, "%s") == NULL)
    return (size_t)snprintf(buf, sz, "%s", fmt);
  if (tvisfunc(info))
    jit_fmtfunc(arg, sizeof(arg), funcV(info));
  else if (tvisnumber(info) && e == LJ_TRERR_NYIBC &&
	   (uint32_t)numberVint(info) < BC__MAX)
    snprintf(arg, sizeof(arg), "%-6s", trace_bcname[numberVint(info)]);
  else if (tvisstr(info))
    snprintf(arg, sizeof(arg), "%s", strVdata(info));
  else
    snprintf(arg, sizeof(arg), "?");
  return (size_t)snprintf(buf, sz, fmt, arg);
}

/* Where recording stopped: the innermost Lua function and its PC, as -jv
** names it. */
static void jit_stopped(jit_State *J, const GCproto **pt, const BCIns **pc)
{
  lua_State *L = J->L;
  cTValue *bot = tvref(L->stack) + LJ_FR2;
  cTValue *frame = L->base - 1;
  const BCIns *at = J->pc;
  while (frame > bot && !isluafunc(frame_func(frame))) {
    at = (frame_iscont(frame) ? frame_contpc(frame) : frame_pc(frame)) - 1;
    frame = frame_prev(frame);
  }
  *pt = isluafunc(frame_func(frame)) ? funcproto(frame_func(frame)) : NULL;
  *pc = at;
}

void lj_sysprof_jitabort(jit_State *J, int e)
{
  Sysprof *sp = jit_profile(J);
  char reason[256];
  const GCproto *pt;
  const BCIns *pc;
  size_t n;
  if (e == LJ_TRERR_MCODEAL)  /* Out of machine code: a flush follows. */
    J2G(J)->prof.flushwhy = LJ_PROF_FLUSH_MAXMCODE;
  if (sp == NULL)
    return;
  n = jit_reason(J, e, reason, sizeof(reason));
  if (n >= sizeof(reason))
    n = sizeof(reason)-1;
  jit_stopped(J, &pt, &pc);
  JIT_RECORD(sp, u,
    lj_wbuf_addbyte(&u.out, REC_TRACE_ABORT);
    lj_wbuf_adduleb(&u.out, J->cur.traceno);
    if (pt != NULL) {
      jit_putloc(&u.out, pt, pc);
    } else {
      lj_wbuf_adduleb(&u.out, 0);
      lj_wbuf_adduleb(&u.out, LJP_LINE_UNKNOWN);
    }
    lj_wbuf_adduleb(&u.out, (uint64_t)e);
    lj_wbuf_addstring(&u.out, reason, n);
  )
}

void lj_sysprof_jitblacklist(jit_State *J, GCproto *pt, const BCIns *pc)
{
  Sysprof *sp = jit_profile(J);
  if (sp != NULL)
    JIT_RECORD(sp, u,
      lj_wbuf_addbyte(&u.out, REC_BLACKLIST);
      jit_putloc(&u.out, pt, pc);
    )
}

void lj_sysprof_jitflush(jit_State *J)
{
  Sysprof *sp = jit_profile(J);
  int why = J2G(J)->prof.flushwhy;
  J2G(J)->prof.flushwhy = LJ_PROF_FLUSH_ASKED;
  if (sp != NULL)
    JIT_RECORD(sp, u,
      lj_wbuf_addbyte(&u.out, REC_FLUSH);
      lj_wbuf_adduleb(&u.out, (uint64_t)why);
    )
}

void lj_sysprof_jitexit(jit_State *J, const BCIns *pc)
{
  Sysprof *sp = jit_profile(J);
  SysprofExit *e;
  uint32_t key = (uint32_t)J->parent << 16 | (J->exitno & 0xffff);
  if (sp == NULL)
    return;
  e = exits_slot(sp, key);
  if (e->key == 0) {
    if (sp->nexits == EXIT_SLOTS/2) {  /* Half full: out with them. */
      JIT_RECORD(sp, u, exits_write(sp, &u.out))
      e = exits_slot(sp, key);
    }
    e->key = key;
    sp->exittraces[(key >> 19) & 0x1fff] |= (uint8_t)(1u << ((key >> 16) & 7));
    e->count = 0;
    exit_where(J, pc, e);
    sp->nexits++;
  }
  e->count++;
  if (atomic_load_explicit(&sp->exits_due, memory_order_relaxed))
    JIT_RECORD(sp, u, exits_write(sp, &u.out))
}

/* -- A profile's start and end ------------------------------------------- */

/* Whether the compiler runs, at the start: a profile of a VM whose JIT is
** off has no events, and says why. A profile asked without the events has
** no jit record: its stream reads as one written before they were. */
static void jit_begin(Sysprof *sp)
{
  jit_State *J = G2J(sp->g);
  if (!sp->cfg.jitev)
    return;
  lj_wbuf_addbyte(&sp->out, REC_JIT);
  lj_wbuf_adduleb(&sp->out, (J->flags & JIT_F_ON) ? 1 : 0);
  /* The bits of 65536 trace numbers after the slots: one allocation. */
  sp->exits = calloc(1, EXIT_SLOTS*sizeof(SysprofExit) + 65536/8);
  sp->exittraces = (uint8_t *)(sp->exits + EXIT_SLOTS);
  sp->nexits = 0;
  atomic_store(&sp->exits_due, 0);
  sp->compiling = J->cur.traceno;
}

static void jit_on(Sysprof *sp)
{
  sp->g->prof.flushwhy = LJ_PROF_FLUSH_ASKED;
  sp->g->prof.jitev = sp->exits != NULL;
}

static void jit_off(Sysprof *sp)
{
  sp->g->prof.jitev = 0;
}

/* The last counts, as the stream ends. */
static void jit_last(Sysprof *sp)
{
  if (sp->exits != NULL && !lj_wbuf_failed(&sp->out))
    exits_flush(sp, &sp->out);
}

/* The table, without a word: a fork's child has no stream to write. */
static void jit_end(Sysprof *sp)
{
  free(sp->exits);
  sp->exits = NULL;
}

#else

static void jit_begin(Sysprof *sp) { UNUSED(sp); }
static void jit_on(Sysprof *sp) { UNUSED(sp); }
static void jit_off(Sysprof *sp) { UNUSED(sp); }
static void jit_last(Sysprof *sp) { UNUSED(sp); }
static void jit_end(Sysprof *sp) { UNUSED(sp); }

#endif
