/*
** The sampler: all that runs in sysprof's signal handler, included by
** lj_sysprof.c (its state and stream constants are defined there).
**
** It may only read memory it has checked (frames through lj_prof_framefunc
** and the bounds of L's stack, PCs against their proto's bytecode, traces
** through J->trace[] and their maps, lj_proftrace_*, the native stack
** between the interrupted SP and the thread's stack top, the unwind tables
** of objects registered by the drain thread, lj_profunwind_*; anything
** else through probe_readable: write(2) and read(2) on a pipe), call a
** host's backtracer, ioctl(2) to re-arm the perf event,
** syscall(SYS_gettid) and the atomics of the ring. It never allocates,
** locks or writes a stream.
*/

/* -- Sample encoding (signal handler) ------------------------------------ */

typedef struct Sample {
  uint8_t *p;
  int nframes;
  int maxframes;	/* Frames beyond this are left out. */
  unsigned keep;	/* FRBIT()s of the frames written; others are left out. */
  int v2;		/* The reference's encoding (see sample_v2). */
} Sample;

static void sample_uleb(Sample *s, uint64_t v)
{
  for (; v >= 0x80; v >>= 7)
    *s->p++ = (uint8_t)(v | 0x80);
  *s->p++ = (uint8_t)v;
}

/* Starts a frame; 0 when it is left out: the sample is full, or takes no
** such frame. v2's native frames are bare addresses. */
static int sample_frame(Sample *s, int tag)
{
  if (s->nframes >= s->maxframes || !(s->keep & FRBIT(tag)))
    return 0;
  s->nframes++;
  if (!s->v2 || tag < FR_NATIVE)
    *s->p++ = (uint8_t)tag;
  return 1;
}

static void sample_lua(Sample *s, const GCproto *pt, BCLine line)
{
  if (sample_frame(s, FR_LUA)) {
    sample_uleb(s, (uintptr_t)pt);
    if (s->v2)  /* v2 names the function only: its first line. */
      sample_uleb(s, (uint64_t)(int64_t)pt->firstline);
    else
      sample_uleb(s, line >= 0 ? (uint64_t)line : LJP_LINE_UNKNOWN);
  }
}

static void sample_addr(Sample *s, int tag, uintptr_t addr)
{
  if (sample_frame(s, tag))
    sample_uleb(s, addr);
}

/* -- Checks the handler makes before it follows anything ----------------- */

/* Is [p, p+n) readable? Asks the kernel, which answers EFAULT, not SIGSEGV.
** Whatever went into the pipe comes out again, also after a partial write
** (p readable up to a page boundary): a pipe left with bytes in it would
** fill up and fail every later probe. */
static int probe_readable(SysProf *sp, const void *p, size_t n)
{
  uint8_t sink[64];
  ssize_t w;
  if (n > sizeof(sink) || (uintptr_t)p < 4096 ||
      (uintptr_t)p >= ((uintptr_t)1 << 47))
    return 0;
  w = write(sp->probe[1], p, n);
  if (w > 0 && read(sp->probe[0], sink, (size_t)w) != w)
    return 0;
  return w == (ssize_t)n;
}

static int in_code(SysProf *sp, uintptr_t ip)
{
  return lj_profunwind_known(&sp->unw, ip);
}

static int unw_probe(void *sp, const void *p, size_t n)
{
  return probe_readable((SysProf *)sp, p, n);
}

/* The native stack a walk may read: from the interrupted SP up. On another
** stack (a host's own, an alternate signal stack) every read is probed. */
static void unw_begin(SysProf *sp, const ucontext_t *uc, ProfUnwStack *stk,
		      ProfUnwRegs *r)
{
  r->ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  r->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
  r->bp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
  r->bx = (uintptr_t)uc->uc_mcontext.gregs[REG_RBX];
  r->exact = 1;
  stk->probe = unw_probe;
  stk->ctx = sp;
  if (r->sp >= sp->stack_lo && r->sp < sp->stack_hi) {
    stk->lo = r->sp;
    stk->hi = sp->stack_hi;
  } else {
    stk->lo = stk->hi = 0;
  }
}

static int in_vm(SysProf *sp, uintptr_t ip)
{
  return ip >= sp->vm_lo && ip < sp->vm_hi;
}

/* The PC a frame returns to in the frame below it, if it is a Lua one. */
static const BCIns *frame_retpc(cTValue *frame)
{
  if (frame_islua(frame))
    return frame_pc(frame);
  if (frame_iscont(frame))
    return frame_contpc(frame);
  return NULL;
}

/* -- Lua frames ---------------------------------------------------------- */

#define TOPPC_MAX	4

/* Where the walk of a coroutine's frames stands. */
typedef struct LuaCursor {
  lua_State *L;
  cTValue *frame;	/* Next frame to write; NULL: done. */
  /* If that frame is the innermost one: where its PC may be, best first.
  ** The first that lies in its function's bytecode is taken. */
  const BCIns *toppc[TOPPC_MAX];
  int ntoppc;
  int unsure;		/* That frame may be changing under us. */
} LuaCursor;

static void cursor_addpc(LuaCursor *c, const BCIns *pc)
{
  if (pc != NULL && c->ntoppc < TOPPC_MAX)
    c->toppc[c->ntoppc++] = pc;
}

/* A candidate better than those known: it goes first. */
static void cursor_bestpc(LuaCursor *c, const BCIns *pc)
{
  int i;
  if (c->ntoppc == TOPPC_MAX)
    c->ntoppc--;
  for (i = c->ntoppc; i > 0; i--)
    c->toppc[i] = c->toppc[i-1];
  c->toppc[0] = pc;
  c->ntoppc++;
}

/* The innermost frame's PC, if a candidate is one of pt's. A candidate
** that is the frame's own return PC says the frame is returning: *ret. */
static const BCIns *cursor_toppc(const LuaCursor *c, const GCproto *pt,
				 cTValue *frame, int *ret)
{
  int i;
  for (i = 0; i < c->ntoppc; i++)
    if (lj_proftrace_inproto(pt, c->toppc[i]))
      return c->toppc[i];
  for (i = 0; i < c->ntoppc; i++)
    if (frame_islua(frame) && c->toppc[i] == frame_pc(frame))
      *ret = 1;
  return NULL;
}

/* Write the frames of one interpreter activation: from the cursor down to
** the frame the VM was entered with from C. C functions are written only
** when their native frames are not (withc). */
static void activation_frames(SysProf *sp, Sample *s, LuaCursor *c, int withc)
{
  cTValue *frame = c->frame, *next = NULL;
  int steps = SAMPLE_FRAMES, dup = 0;
  while (frame != NULL && steps-- > 0) {
    GCfunc *fn = lj_prof_framefunc(c->L, frame);
    int boundary;
    if (fn == NULL)
      break;
    /* Entered from C: by lua_call & co., or as an FFI callback. */
    boundary = frame_typep(frame) == FRAME_C || frame_typep(frame) == FRAME_CP ||
	       (frame_iscont(frame) && frame_iscont_fficb(frame));
    if (!dup) {
      if (isluafunc(fn)) {
	int ret = 0;
	const BCIns *pc = next != NULL ? frame_retpc(next) :
			  cursor_toppc(c, funcproto(fn), frame, &ret);
	if (!ret)  /* A returning frame is gone: its caller runs on. */
	  sample_lua(s, funcproto(fn), lj_proftrace_line(funcproto(fn), pc));
      } else if (isffunc(fn)) {
	sample_addr(s, FR_FFUNC, fn->c.ffid);
      } else if (withc) {
	sample_addr(s, FR_CFUNC, (uintptr_t)fn->c.f);
      }
    }
    /* A vararg function's frame sits above the one it was called with. */
    dup = frame_isvarg(frame);
    next = frame;
    frame = lj_prof_framebelow(c->L, frame, c->unsure);
    c->unsure = 0;
    if (boundary)
      break;
  }
  c->frame = (next != NULL && frame != NULL) ? frame : NULL;
  c->ntoppc = 0;
}

/* The cursor's frames, C functions among them, down to the coroutine's
** first or until the sample holds max frames. Also when the sample takes
** none of them, a damaged frame chain cannot hold the walk. */
static void cursor_frames(SysProf *sp, Sample *s, LuaCursor *c, int max)
{
  int n;
  for (n = 0; c->frame != NULL && s->nframes < max && n < SAMPLE_FRAMES; n++)
    activation_frames(sp, s, c, 1);
}

/* The innermost frame of the coroutine running, from what the VM publishes:
** the state, the base of a Lua or fast function, L->base for C. */
static void cursor_top(SysProf *sp, LuaCursor *c, int32_t st,
		       const ucontext_t *uc)
{
  global_State *g = sp->g;
  lua_State *L = gco2th(gcref(g->cur_L));
  TValue *base;
  c->L = NULL;
  c->frame = NULL;
  c->ntoppc = 0;
  c->unsure = 1;
  if (L == NULL || L->gct != ~LJ_TTHREAD || mref(L->glref, global_State) != g)
    return;
  c->L = L;
  if (st == ~LJ_VMST_LFUNC || st == ~LJ_VMST_FFUNC)
    base = mref(g->prof.vmbase, TValue);
  else if (lj_prof_intrace(st))
    base = tvref(g->jit_base);  /* The frame a trace started in. */
  else
    base = L->base;
  if (base == NULL || lj_prof_framefunc(L, base-1) == NULL)
    return;
  c->frame = base-1;
  /* The interpreter keeps the PC in a register (also for an instruction
  ** after a fast function returned: the base is published, the state not
  ** yet). Calling a function, it has loaded the callee's PC there already,
  ** but has stored its own in the link of the new frame, at BASE. C code
  ** saved the PC it called from in the C frame. */
  if ((st == ~LJ_VMST_LFUNC || st == ~LJ_VMST_FFUNC) &&
      in_vm(sp, (uintptr_t)uc->uc_mcontext.gregs[REG_RIP])) {
    cTValue *nb = (cTValue *)uc->uc_mcontext.gregs[CFRAME_GREG_BASE];
    cursor_addpc(c, (const BCIns *)uc->uc_mcontext.gregs[CFRAME_GREG_PC]);
    if (nb-1 > c->frame && lj_prof_framefunc(L, nb-1) != NULL &&
	frame_islua(nb-1))
      cursor_addpc(c, frame_pc(nb-1));
  }
#if LJ_HASJIT
  /* The compiler at work: the instruction it records (one ahead, as the
  ** VM keeps PCs). L->cframe is then the compiler's own C frame. */
  if (st == ~LJ_VMST_RECORD || st == ~LJ_VMST_OPT || st == ~LJ_VMST_ASM)
    cursor_addpc(c, G2J(g)->pc + 1);
#endif
  /* Not while Lua or a fast function runs: the interpreter updates that
  ** slot only before some of its calls, so it may be stale and yet lie in
  ** the function's bytecode. */
  if (L->cframe != NULL && st != ~LJ_VMST_LFUNC && st != ~LJ_VMST_FFUNC)
    cursor_addpc(c, cframe_pc(cframe_raw(L->cframe)));
}

/* Unwinding C code the interpreter called directly (libm for `^`, its
** helpers) has reached the interpreter: the unwinder restored the PC's
** register, the best candidate for the innermost frame. */
static void cursor_vmreturn(LuaCursor *c, const ProfUnwRegs *r)
{
  LJ_STATIC_ASSERT(CFRAME_GREG_PC == REG_RBX);
  cursor_bestpc(c, (const BCIns *)r->bx);
}

/* The trace of that number, unless it is gone. */
static GCtrace *trace_get(SysProf *sp, TraceNo traceno)
{
  jit_State *J = G2J(sp->g);
  return traceno < J->sizetrace ? traceref(J, traceno) : NULL;
}

/* The trace running at ip, the frames it inlined, and (through c) the
** frames below it. The trace's frame says how many of the Lua frames that
** follow its code runs: those it inlined and the one it was entered in,
** the cursor's, with its PC. */
static void sample_trace(SysProf *sp, Sample *s, LuaCursor *c,
			 int32_t traceno, uintptr_t ip)
{
  GCtrace *T = trace_get(sp, (TraceNo)traceno), *root;
  if (T != NULL && sample_frame(s, FR_TRACE_LUA)) {
    GCproto *pt = &gcref(T->startpt)->pt;
    const BCIns *startpc = mref(T->startpc, const BCIns) + 1;
    const GCproto *pts[LJ_PROFTRACE_MAXFRAMES];
    const BCIns *pcs[LJ_PROFTRACE_MAXFRAMES];
#if LJ_HASJIT
    int n = lj_proftrace_frames(T, ip, pts, pcs), i, nlua;
#else
    int n = 0, i, nlua;
#endif
    sample_uleb(s, (uint64_t)traceno);
    sample_uleb(s, (uintptr_t)pt);
    sample_uleb(s, (uint64_t)lj_proftrace_line(pt, startpc));
    nlua = n > 0 ? n : 1;
    sample_uleb(s, (uint64_t)(nlua < s->maxframes - s->nframes ? nlua :
			      s->maxframes - s->nframes));
    if (n > 0) {
      for (i = 0; i < n-1; i++)
	sample_lua(s, pts[i], lj_proftrace_line(pts[i], pcs[i]));
      c->ntoppc = 0;
      cursor_addpc(c, pcs[n-1]);
      return;
    }
    /* Outside the trace's snapshots (exit stubs, a walk that got lost):
    ** where the trace started, or, for a side trace that started in a
    ** deeper frame, where its root did, in the frame it was entered from. */
    c->ntoppc = 0;
    cursor_addpc(c, startpc);
    if (T->root != 0 && (root = trace_get(sp, T->root)) != NULL)
      cursor_addpc(c, mref(root->startpc, const BCIns) + 1);
  }
}

/* The trace whose machine code holds ip, or 0: C code called from a
** trace (the collector, table helpers) returns there. */
#if LJ_HASJIT
static int trace_holds(GCtrace *T, uintptr_t ip)
{
  return T != NULL && ip >= (uintptr_t)T->mcode &&
	 ip < (uintptr_t)T->mcode + T->szmcode;
}
#endif

static int32_t trace_at(SysProf *sp, uintptr_t ip)
{
#if LJ_HASJIT
  jit_State *J = G2J(sp->g);
  TraceNo i;
  /* The trace found last, first: samples in C code a trace calls come in
  ** runs. Not trusted by its number alone: traces are freed and reused. */
  if (sp->lasttrace < J->sizetrace &&
      trace_holds(traceref(J, sp->lasttrace), ip))
    return (int32_t)sp->lasttrace;
  for (i = 1; i < J->sizetrace; i++)
    if (trace_holds(traceref(J, i), ip))
      return (int32_t)(sp->lasttrace = i);
#else
  UNUSED(sp); UNUSED(ip);
#endif
  return 0;
}

/* -- Native frames ------------------------------------------------------- */

/* Leave an interpreter activation: its C frame holds the callee-saved
** registers and the return address of whoever called the VM. The VM's
** own unwind entry cannot be trusted inside its helpers or in traces. */
static int native_vmcaller(const char *cf, const ProfUnwStack *stk,
			   ProfUnwRegs *r)
{
  uintptr_t at = (uintptr_t)cf;
  if (cf == NULL || !lj_profunwind_read(stk, at + CFRAME_OFS_RET, &r->ip) ||
      !lj_profunwind_read(stk, at + CFRAME_OFS_RBP, &r->bp) ||
      !lj_profunwind_read(stk, at + CFRAME_OFS_RBX, &r->bx))
    return 0;
  r->sp = at + CFRAME_SIZE;
  r->exact = 0;
  return 1;
}

/* The coroutine whose activation owns an interpreter frame further out on
** the native stack: the frame's SAVE_L says. */
static LuaCursor *cursor_for(SysProf *sp, LuaCursor *cur, int *ncur,
			     const char *cf, const ProfUnwStack *stk)
{
  uintptr_t at;
  lua_State *L;
  int i;
  if (!lj_profunwind_read(stk, (uintptr_t)cf + CFRAME_OFS_L, &at))
    return NULL;
  L = (lua_State *)at;
  for (i = 0; i < *ncur; i++)
    if (cur[i].L == L)
      return &cur[i];
  if (*ncur == MAX_THREADS || !probe_readable(sp, L, 64) ||
      L->gct != ~LJ_TTHREAD || mref(L->glref, global_State) != sp->g)
    return NULL;
  cur[*ncur].L = L;
  cur[*ncur].frame = lj_prof_framefunc(L, L->base-1) ? L->base-1 : NULL;
  cur[*ncur].ntoppc = 0;
  cur[*ncur].unsure = 0;
  return &cur[(*ncur)++];
}

/* Mode C: unwind from the interrupted context; each interpreter activation
** met on the way is replaced by its Lua frames. */
static void sample_callgraph(SysProf *sp, Sample *s, int32_t st,
			     ucontext_t *uc)
{
  LuaCursor cur[MAX_THREADS];
  int ncur = 1, i, innermost = 1, lost = 0, stepped = 0;
  int32_t traceno = lj_prof_intrace(st) ? st : 0;
  ProfUnwStack stk;
  ProfUnwRegs r;
  cTValue *top;
  cursor_top(sp, &cur[0], st, uc);
  top = cur[0].frame;
  unw_begin(sp, uc, &stk, &r);
  while (s->nframes < SAMPLE_FRAMES) {
    uintptr_t ip = lost ? 0 : r.ip;
    const char *cf;
    /* C code called from a trace returns into it, in any VM state. */
    if (!traceno && innermost && stepped && !lost && !in_vm(sp, ip) &&
	!in_code(sp, ip))
      traceno = trace_at(sp, (uintptr_t)ip);
    /* Compiled code has no unwind entries: a trace, or what it called,
    ** ends the walk, or leads out of the code we know. */
    if (in_vm(sp, ip) ||
	(traceno && innermost && (lost || !in_code(sp, ip)))) {
      /* An interpreter activation (or a trace, which runs in one). */
      LuaCursor *c = &cur[0];
      if (in_vm(sp, ip))  /* Only v2 keeps it: v3 has the Lua frames. */
	sample_addr(s, FR_VMCODE, (uintptr_t)ip);
      if (innermost) {
	if (traceno)
	  sample_trace(sp, s, c, traceno, lost ?
		       (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] :
		       (uintptr_t)ip - (stepped != 0));  /* In the call. */
	cf = cur[0].L != NULL ? (const char *)cframe_raw(cur[0].L->cframe) : NULL;
      } else {
	cf = (const char *)r.sp;
	c = cursor_for(sp, cur, &ncur, cf, &stk);
      }
      if (c == &cur[0] && stepped && c->frame == top && top != NULL)
	cursor_vmreturn(c, &r);
      innermost = lost = 0;
      if (c != NULL)
	activation_frames(sp, s, c, 0);
      if (!native_vmcaller(cf, &stk, &r))
	break;
      continue;
    }
    if (!in_code(sp, ip))
      break;  /* Not code we know: the walk went astray. */
    sample_addr(s, FR_NATIVE, ip);
    lost = !lj_profunwind_step(&sp->unw, &sp->unwcache, &stk, &r);
    stepped = 1;
    if (lost && !(traceno && innermost))
      break;
  }
  /* Frames of activations the native walk did not reach. */
  for (i = 0; i < ncur; i++)
    cursor_frames(sp, s, &cur[i], SAMPLE_FRAMES);
}

#define LEAF_STEPS	16

/* Mode L, a sample in C code: a few unwind steps find what called it, the
** interpreter (and the PC it runs) or a trace. */
static int32_t leaf_caller(SysProf *sp, LuaCursor *c, ucontext_t *uc,
			   int32_t traceno, uintptr_t *tip)
{
  ProfUnwStack stk;
  ProfUnwRegs r;
  int steps;
  unw_begin(sp, uc, &stk, &r);
  for (steps = 0; steps < LEAF_STEPS &&
		  lj_profunwind_step(&sp->unw, &sp->unwcache, &stk, &r); steps++) {
    uintptr_t ip = r.ip;
    if (in_vm(sp, ip)) {
      cursor_vmreturn(c, &r);
      break;
    }
    if (!in_code(sp, ip)) {  /* Returns into a trace, after its call. */
      *tip = (uintptr_t)ip - 1;
      return traceno ? traceno : trace_at(sp, (uintptr_t)ip);
    }
  }
  return traceno;
}

/* Mode L: the innermost Lua frame and the innermost native frame. */
static void sample_leaf(SysProf *sp, Sample *s, int32_t st, ucontext_t *uc)
{
  LuaCursor c;
  int32_t traceno = lj_prof_intrace(st) ? st : 0;
  uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  cursor_top(sp, &c, st, uc);
  if (!in_vm(sp, ip) && in_code(sp, ip))
    traceno = leaf_caller(sp, &c, uc, traceno, &ip);
  /* The trace, if one runs, and one frame of Lua: the innermost. */
  s->maxframes = traceno ? 2 : 1;
  if (traceno)
    sample_trace(sp, s, &c, traceno, ip);
  cursor_frames(sp, s, &c, s->maxframes);  /* A vararg frame writes nothing. */
  s->maxframes = s->nframes + 1;
  sample_addr(s, FR_NATIVE, (uintptr_t)uc->uc_mcontext.gregs[REG_RIP]);
}

static Sample *backtrace_sample;

static void *backtrace_frame(int frame_no, void *addr)
{
  UNUSED(frame_no);
  sample_addr(backtrace_sample, FR_NATIVE, (uintptr_t)addr);
  return addr;
}

/* A host's backtracer: Lua frames first, then its native frames. */
static void sample_hostbacktrace(SysProf *sp, Sample *s, int32_t st,
				 ucontext_t *uc)
{
  LuaCursor c;
  cursor_top(sp, &c, st, uc);
  if (lj_prof_intrace(st))
    sample_trace(sp, s, &c, st, (uintptr_t)uc->uc_mcontext.gregs[REG_RIP]);
  cursor_frames(sp, s, &c, SAMPLE_FRAMES);
  backtrace_sample = s;
  sp->backtracer(backtrace_frame);
}

/* The frames of a sample, as the mode and the host want them. */
static void sample_stack(SysProf *sp, Sample *s, int32_t st, ucontext_t *uc)
{
  if (sp->backtracer != NULL)
    sample_hostbacktrace(sp, s, st, uc);
  else if (sp->cfg.mode == LUAM_SYSPROF_LEAF)
    sample_leaf(sp, s, st, uc);
  else
    sample_callgraph(sp, s, st, uc);
}

/* -- Version 2 samples (the reference's) --------------------------------- */

/* After the VM state: a trace is its number, start proto and that proto's
** first line, nothing else. A Lua, fast or C function running gives every
** Lua frame of the coroutine, innermost first (tags as in v3, a Lua frame
** at its function's first line), then 0x80. Then, but for a trace, the
** native frames, the interpreter's among them, as bare addresses up to a
** zero: in mode L the innermost only. The walks are v3's, each part of the
** sample keeping its kind of frame. 0 when the trace is gone. */
static int sample_v2(SysProf *sp, Sample *s, uint32_t vs, int32_t st,
		     ucontext_t *uc)
{
  s->v2 = 1;
  if (vs == LJ_VMST_TRACE) {
    GCtrace *T = trace_get(sp, (TraceNo)st);
    GCproto *pt;
    if (T == NULL)
      return 0;
    pt = &gcref(T->startpt)->pt;
    sample_uleb(s, (uint64_t)st);
    sample_uleb(s, (uintptr_t)pt);
    sample_uleb(s, (uint64_t)(int64_t)pt->firstline);
    return 1;
  }
  if (vs == LJ_VMST_LFUNC || vs == LJ_VMST_FFUNC || vs == LJ_VMST_CFUNC) {
    LuaCursor c;
    s->keep = FRBIT(FR_LUA) | FRBIT(FR_CFUNC) | FRBIT(FR_FFUNC);
    cursor_top(sp, &c, st, uc);
    cursor_frames(sp, s, &c, SAMPLE_FRAMES);
    *s->p++ = LJP_END;
  }
  s->keep = FRBIT(FR_NATIVE) | FRBIT(FR_VMCODE);
  sample_stack(sp, s, st, uc);
  *s->p++ = 0;
  return 1;
}

/* The profile a signal is for: a timer's names it, a perf event's comes
** with its descriptor; one sent by hand is for a profile of this thread.
** NULL if none runs here: the signal is ignored. */
static SysProf *sysprof_slotof(const siginfo_t *info)
{
  pid_t tid = (pid_t)syscall(SYS_gettid);
  SysProf *sp = NULL;
  int i;
  if (info->si_code == SI_TIMER) {
    sp = &sysprof[info->si_value.sival_int & (SYSPROF_SLOTS-1)];
    if (sp->sigtag != info->si_value.sival_int)
      return NULL;
  } else {
    for (i = 0; i < SYSPROF_SLOTS && sp == NULL; i++)
      if (atomic_load_explicit(&sysprof[i].state, memory_order_acquire) ==
	  SPS_PROFILE && sysprof[i].tid == tid &&
	  (info->si_code <= 0 || sysprof[i].perf_fd == info->si_fd))
	sp = &sysprof[i];
  }
  return sp != NULL && atomic_load_explicit(&sp->state, memory_order_acquire)
	 == SPS_PROFILE && sp->tid == tid ? sp : NULL;
}

/* The VM runs nothing on this thread (no call into it is under way): the
** thread runs its host, or another VM. Such a tick is not the VM's time:
** no sample, no count, and no other VM's work in its profile. */
static int sysprof_idle(SysProf *sp)
{
  lua_State *L = gco2th(gcref(sp->g->cur_L));
  return L == NULL || L->cframe == NULL;
}

/* A sample: its VM state counted and, but in mode D, its stack written. */
static void sysprof_sample(SysProf *sp, ucontext_t *uc)
{
  int32_t st = sp->g->vmstate;
  uint32_t vs = lj_prof_intrace(st) ? LJ_VMST_TRACE : (uint32_t)~st;
  Sample s;
  int ok = 1;
  if (vs > LJ_VMST_TRACE)
    vs = LJ_VMST_INTERP;
  sp->counts[vs]++;
  sp->samples++;
  if (sp->cfg.mode == LUAM_SYSPROF_DEFAULT)
    return;
  if (sp->updating) {
    sp->dropped++;  /* Counted, but its stack cannot be written now. */
    return;
  }
  s.p = sp->sample;
  s.nframes = 0;
  s.maxframes = SAMPLE_FRAMES;
  s.keep = FRAMES_V3;
  s.v2 = 0;
  *s.p++ = (uint8_t)vs;
  if (sp->cfg.format == LUAM_SYSPROF_V2) {
    ok = sample_v2(sp, &s, vs, st, uc);
  } else {
    sample_stack(sp, &s, st, uc);
    *s.p++ = LJP_END;
  }
  if (!ok || !ring_put(sp, sp->sample, (size_t)(s.p - sp->sample)))
    sp->dropped++;
}

static void sysprof_signal(int sig, siginfo_t *info, void *context)
{
  int saved_errno = errno;
  SysProf *sp = sysprof_slotof(info);
  UNUSED(sig);
  if (sp != NULL) {
    if (info->si_code == SI_TIMER)
      sp->overruns += (uint64_t)info->si_overrun;
    else if (sp->perf_fd >= 0 && atomic_load(&sp->timer_alive))
      ioctl(sp->perf_fd, PERF_EVENT_IOC_REFRESH, 1);  /* The next one. */
    if (sysprof_idle(sp))
      sp->idle++;
    else
      sysprof_sample(sp, (ucontext_t *)context);
  }
  errno = saved_errno;
}
