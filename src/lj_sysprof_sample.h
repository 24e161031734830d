/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The sampler: all that runs in sysprof's signal handler, included by
** lj_sysprof.c (its state is defined there, the stream's numbers in
** lj_profstream.h).
**
** It may only read memory as the walk does (lj_profwalk.h: the unwind
** tables are those of objects registered by the drain thread), call a
** host's backtracer, ioctl(2) to re-arm the perf event,
** syscall(SYS_gettid), the atomics of the ring and lj_proflabel's encoder
** (it reads the label set the VM published in lua_State.labels). It never
** allocates, locks or writes a stream.
*/

/* -- The VM's numbers in the stream -------------------------------------- */

/* A sample writes the VM state and the walk's frame tags as they are, the
** config record the API's mode and format and the timer's clock: each is
** the stream's number. */
/* (The VM's states as ints: two enums compared draw -Wenum-compare.) */
LJ_STATIC_ASSERT((int)LJ_VMST_INTERP == LJP_VMST_INTERP &&
		 (int)LJ_VMST_LFUNC == LJP_VMST_LFUNC &&
		 (int)LJ_VMST_FFUNC == LJP_VMST_FFUNC &&
		 (int)LJ_VMST_CFUNC == LJP_VMST_CFUNC &&
		 (int)LJ_VMST_GC == LJP_VMST_GC &&
		 (int)LJ_VMST_EXIT == LJP_VMST_EXIT &&
		 (int)LJ_VMST_RECORD == LJP_VMST_RECORD &&
		 (int)LJ_VMST_OPT == LJP_VMST_OPT &&
		 (int)LJ_VMST_ASM == LJP_VMST_ASM &&
		 (int)LJ_VMST_TRACE == LJP_VMST_TRACE);
LJ_STATIC_ASSERT(FR_LUA == LJP_FRAME_LUA && FR_CFUNC == LJP_FRAME_CFUNC &&
		 FR_FFUNC == LJP_FRAME_FFUNC && FR_NATIVE == LJP_FRAME_NATIVE &&
		 FR_TRACE == LJP_FRAME_TRACE &&
		 FR_TRACE_LUA == LJP_FRAME_TRACE_LUA);
LJ_STATIC_ASSERT(LUAM_SYSPROF_DEFAULT == LJP_MODE_DEFAULT &&
		 LUAM_SYSPROF_LEAF == LJP_MODE_LEAF &&
		 LUAM_SYSPROF_CALLGRAPH == LJP_MODE_CALLGRAPH);
LJ_STATIC_ASSERT(LUAM_SYSPROF_V2 == LJP_VERSION_REFERENCE &&
		 LUAM_SYSPROF_V3 == LJP_VERSION &&
		 LUAM_SYSPROF_V4 == LJP_VERSION_LABELS);
LJ_STATIC_ASSERT(SYSPROF_CLOCK_CPU == LJP_CLOCK_CPU &&
		 SYSPROF_CLOCK_WALL == LJP_CLOCK_WALL);
#if LJ_HASJIT
LJ_STATIC_ASSERT(LJ_PROF_FLUSH_ASKED == LJP_FLUSH_ASKED &&
		 LJ_PROF_FLUSH_MAXTRACE == LJP_FLUSH_MAXTRACE &&
		 LJ_PROF_FLUSH_MAXMCODE == LJP_FLUSH_MAXMCODE);
#endif

/* -- Sample encoding (signal handler) ------------------------------------ */

/* The walk's sink: frames go into the sample as they come. */
typedef struct Sample {
  ProfSink sink;
  uint8_t *p;
  int v2;		/* The reference's encoding (see sample_v2). */
} Sample;

static void sample_uleb(Sample *s, uint64_t v)
{
  for (; v >= 0x80; v >>= 7)
    *s->p++ = (uint8_t)(v | 0x80);
  *s->p++ = (uint8_t)v;
}

/* v2's native frames are bare addresses; its Lua frames name the function
** only: its first line. */
static void sample_put(ProfSink *sink, int tag, const uint64_t *v)
{
  Sample *s = (Sample *)sink;
  int i, n = tag == FR_TRACE_LUA ? 4 : 1;  /* A fast function: its id. */
  if (!s->v2 || tag < FR_NATIVE)
    *s->p++ = (uint8_t)tag;
  if (tag == FR_LUA) {
    const GCproto *pt = (const GCproto *)(uintptr_t)v[0];
    BCLine line = (BCLine)(int64_t)v[1];
    sample_uleb(s, v[0]);
    if (s->v2)
      sample_uleb(s, (uint64_t)(int64_t)pt->firstline);
    else
      sample_uleb(s, line >= 0 ? (uint64_t)line : LJP_LINE_UNKNOWN);
    return;
  }
  for (i = 0; i < n; i++)
    sample_uleb(s, v[i]);
}

/* The interrupted context's registers, on the stack they may be read. */
static void unw_begin(Sysprof *sp, const ucontext_t *uc, ProfUnwStack *stk,
		      ProfUnwRegs *r)
{
  r->ip = LJ_PROFUNW_UCPC(uc);
  r->sp = LJ_PROFUNW_UCSP(uc);
  r->bp = LJ_PROFUNW_UCFP(uc);
  r->bx = LJ_PROFUNW_UCREG(uc, CFRAME_GREG_PC);
  r->lr = LJ_PROFUNW_UCLR(uc);
  r->exact = 1;
  lj_profwalk_stack(&sp->walk, r, stk);
}

/* Mode C: unwind from the interrupted context (lj_profwalk.h). */
static void sample_callgraph(Sysprof *sp, Sample *s, int32_t st,
			     ucontext_t *uc)
{
  ProfUnwStack stk;
  ProfUnwRegs r;
  unw_begin(sp, uc, &stk, &r);
  lj_profwalk_callgraph(&sp->walk, &s->sink, st, &stk, &r, uc);
}

#define LEAF_STEPS	16

/* Mode L, a sample in C code: a few unwind steps find what called it, the
** interpreter (and the PC it runs) or a trace. */
static int32_t leaf_caller(Sysprof *sp, LuaCursor *c, ucontext_t *uc,
			   int32_t traceno, uintptr_t *tip)
{
  ProfUnwStack stk;
  ProfUnwRegs r;
  int steps;
  unw_begin(sp, uc, &stk, &r);
  for (steps = 0; steps < LEAF_STEPS &&
		  lj_profunwind_step(&sp->walk.unw, &sp->walk.unwcache,
				     &stk, &r); steps++) {
    uintptr_t ip = r.ip;
    if (lj_profwalk_invm(&sp->walk, ip)) {
      lj_profwalk_vmreturn(c, &r);
      break;
    }
    if (!lj_profwalk_incode(&sp->walk, ip)) {
      /* Returns into a trace, after its call. */
      *tip = (uintptr_t)ip - 1;
      return traceno ? traceno : lj_profwalk_traceat(&sp->walk, ip);
    }
  }
  return traceno;
}

/* Mode L: the innermost Lua frame and the innermost native frame. */
static void sample_leaf(Sysprof *sp, Sample *s, int32_t st, ucontext_t *uc)
{
  LuaCursor c;
  int32_t traceno = lj_prof_intrace(st) ? st : 0;
  int exiting = st == ~LJ_VMST_EXIT;
  uintptr_t ip = LJ_PROFUNW_UCPC(uc);
  lj_profwalk_top(&sp->walk, &c, st, uc);
  if (traceno && lj_profwalk_leftrace(&sp->walk, &c, uc))
    traceno = 0;
  if (!exiting && !lj_profwalk_invm(&sp->walk, ip) &&
      lj_profwalk_incode(&sp->walk, ip))
    traceno = leaf_caller(sp, &c, uc, traceno, &ip);
  /* The trace, if one runs or exits, and one frame of Lua: the
  ** innermost. */
  s->sink.maxframes = traceno || exiting ? 2 : 1;
  if (traceno)
    lj_profwalk_trace(&sp->walk, &s->sink, &c, traceno,
		      lj_profwalk_traceip(&sp->walk, traceno, ip,
					  LJ_PROFUNW_UCLR(uc)));
  else if (exiting)
    lj_profwalk_exit(&sp->walk, &s->sink, &c);
  /* A vararg frame writes nothing. */
  lj_profwalk_frames(&s->sink, &c, s->sink.maxframes);
  s->sink.maxframes = s->sink.nframes + 1;
  lj_profwalk_addr(&s->sink, FR_NATIVE, LJ_PROFUNW_UCPC(uc));
}

static Sample *backtrace_sample;

static void *backtrace_frame(int frame_no, void *addr)
{
  UNUSED(frame_no);
  lj_profwalk_addr(&backtrace_sample->sink, FR_NATIVE, (uintptr_t)addr);
  return addr;
}

/* A host's backtracer: Lua frames first, then its native frames. */
static void sample_hostbacktrace(Sysprof *sp, Sample *s, int32_t st,
				 ucontext_t *uc)
{
  LuaCursor c;
  lj_profwalk_top(&sp->walk, &c, st, uc);
  if (st == ~LJ_VMST_EXIT)
    lj_profwalk_exit(&sp->walk, &s->sink, &c);
  else if (lj_prof_intrace(st) && !lj_profwalk_leftrace(&sp->walk, &c, uc))
    lj_profwalk_trace(&sp->walk, &s->sink, &c, st,
		      lj_profwalk_traceip(&sp->walk, st, LJ_PROFUNW_UCPC(uc),
					  LJ_PROFUNW_UCLR(uc)));
  lj_profwalk_frames(&s->sink, &c, SAMPLE_FRAMES);
  backtrace_sample = s;
  sp->backtracer(backtrace_frame);
}

/* A sample in a trace exit or in the compiler says which trace exits, or
** is being compiled: the exit handler publishes the trace and exit just
** after the state, the compiler has its trace number from the start (and
** once the trace is saved or aborted, sp->compiling has it). */
static void sample_jit(Sysprof *sp, Sample *s, uint32_t vs)
{
#if LJ_HASJIT
  jit_State *J = G2J(sp->g);
  if (sp->exits == NULL)
    return;  /* No events: the compiler's traces are not named. */
  if (vs == LJ_VMST_EXIT) {
    s->p[-1] |= LJP_SAMPLE_JIT;
    sample_uleb(s, J->parent);
    sample_uleb(s, J->exitno);
  } else if (vs == LJ_VMST_RECORD || vs == LJ_VMST_OPT ||
	     vs == LJ_VMST_ASM) {
    s->p[-1] |= LJP_SAMPLE_JIT;
    sample_uleb(s, J->cur.traceno ? J->cur.traceno : sp->compiling);
    sample_uleb(s, 0);
  }
#else
  UNUSED(sp); UNUSED(s); UNUSED(vs);
#endif
}

/* The frames of a sample, as the mode and the host want them. */
static void sample_stack(Sysprof *sp, Sample *s, int32_t st, ucontext_t *uc)
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
static int sample_v2(Sysprof *sp, Sample *s, uint32_t vs, int32_t st,
		     ucontext_t *uc)
{
  s->v2 = 1;
  if (vs == LJ_VMST_TRACE) {
    GCtrace *T = lj_profwalk_gettrace(&sp->walk, (TraceNo)st);
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
    s->sink.keep = FRBIT(FR_LUA) | FRBIT(FR_CFUNC) | FRBIT(FR_FFUNC);
    lj_profwalk_top(&sp->walk, &c, st, uc);
    lj_profwalk_frames(&s->sink, &c, SAMPLE_FRAMES);
    *s->p++ = LJP_END;
  }
  s->sink.keep = FRBIT(FR_NATIVE) | FRBIT(FR_VMCODE);
  sample_stack(sp, s, st, uc);
  *s->p++ = 0;
  return 1;
}

/* The profile a signal is for: a timer's names it, a perf event's comes
** with its descriptor; one sent by hand is for a profile of this thread.
** NULL if none runs here: the signal is ignored. */
static Sysprof *sysprof_slotof(const siginfo_t *info)
{
  pid_t tid = (pid_t)syscall(SYS_gettid);
  Sysprof *sp = NULL;
  int i;
  if (info->si_code == SI_TIMER) {
    sp = &sysprof[info->si_value.sival_int & (SYSPROF_SLOTS-1)];
    if (sysprof_sigtag(sp) != info->si_value.sival_int)
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
** no sample, no count, and no other VM's work in its profile. A coroutine
** that yields has no C frame any more before the VM switches back to the
** one that resumed it: while the main coroutine is in a call, the VM
** runs. */
static int sysprof_idle(Sysprof *sp)
{
  global_State *g = sp->g;
  lua_State *L = gco2th(gcref(g->cur_L));
  return (L == NULL || L->cframe == NULL) &&
	 mainthread(g)->cframe == NULL;
}


/* -- Labels (v4) --------------------------------------------------------- */

static const ProfLabelRecs sample_labelrecs = {
  { REC_LABELSET }, { REC_LABELS }, 1, 1
};
static const ProfLabelRecs count_labelrecs = {  /* Mode D: by number. */
  { REC_LABELSET }, { REC_LABELS }, 1, 0
};

/* Mode D counts a sample by the set it ran under, announced first. */
static void sample_labelcount(Sysprof *sp, const lua_State *L)
{
  ProfLabels *pl = &sp->labels;
  uint32_t no = pl->inforceno;
  if (LJ_UNLIKELY(lj_proflabel_id(L) != pl->inforce)) {
    ProfLabelSwitch sw;
    uint8_t *p = lj_proflabel_switch(pl, &count_labelrecs, L, sp->sample,
				      &sw);
    if (p != sp->sample &&
	(sp->updating || !ring_put(sp, sp->sample, (size_t)(p - sp->sample)))) {
      sp->dropped++;  /* Counted, but its set cannot be written now. */
      return;
    }
    lj_proflabel_taken(pl, &sw);
    no = sw.no;
  }
  sp->labelcounts[no != LJ_LABELS_OTHER ? no : LJ_LABELSETS_MAX+1]++;
}

/* -- Samples ------------------------------------------------------------- */

/* A sample: its VM state counted and, but in mode D, its stack written,
** after what its label set needs (v4). */
static void sysprof_sample(Sysprof *sp, ucontext_t *uc)
{
  int32_t st = lj_profwalk_state(&sp->walk, sp->g->vmstate,
				 LJ_PROFUNW_UCPC(uc));
  uint32_t vs = lj_prof_intrace(st) ? LJ_VMST_TRACE : (uint32_t)~st;
  const lua_State *L = gco2th(gcref(sp->g->cur_L));
  int labelled = sp->cfg.format >= LUAM_SYSPROF_V4;
  ProfLabelSwitch sw;
  Sample s;
  int ok = 1;
  if (vs > LJ_VMST_TRACE)
    vs = LJ_VMST_INTERP;
  sp->counts[vs]++;
  sp->samples++;
  if (sp->cfg.mode == LUAM_SYSPROF_DEFAULT) {
    if (labelled)
      sample_labelcount(sp, L);
    return;
  }
  if (sp->updating) {
    sp->dropped++;  /* Counted, but its stack cannot be written now. */
    return;
  }
  s.p = sp->sample;
  labelled = labelled && lj_proflabel_id(L) != sp->labels.inforce;
  if (LJ_UNLIKELY(labelled))
    s.p = lj_proflabel_switch(&sp->labels, &sample_labelrecs, L, s.p, &sw);
  s.sink.nframes = 0;
  s.sink.maxframes = SAMPLE_FRAMES;
  s.sink.keep = FRAMES_V3;
  s.sink.put = sample_put;
  s.v2 = 0;
  *s.p++ = (uint8_t)vs;
  if (sp->cfg.format == LUAM_SYSPROF_V2) {
    ok = sample_v2(sp, &s, vs, st, uc);
  } else {
    sample_jit(sp, &s, vs);
    sample_stack(sp, &s, st, uc);
    *s.p++ = LJP_END;
  }
  if (!ok || !ring_put(sp, sp->sample, (size_t)(s.p - sp->sample)))
    sp->dropped++;
  else if (LJ_UNLIKELY(labelled))
    lj_proflabel_taken(&sp->labels, &sw);
}

static void sysprof_signal(int sig, siginfo_t *info, void *context)
{
  int saved_errno = errno;
  Sysprof *sp = sysprof_slotof(info);
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
