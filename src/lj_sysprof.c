/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Platform profiler (sysprof).
**
** A timer aimed at the VM's thread raises a signal; its handler counts the
** VM state and, in modes L and C, encodes the sample into a ring buffer:
** the Lua frames the VM publishes and the native frames unwound from the
** interrupted context, interleaved where interpreter activations sit on
** the native stack. The handler allocates nothing, takes no lock and
** checks every frame it follows. A thread of the profiler's own drains
** the ring through the writer, after announcing newly loaded objects;
** protos and traces are announced by the VM's thread as they appear.
** The reference's stream, v2, is written by the same walks: its samples
** keep apart what v3 interleaves, and less of it. A profile per VM,
** several VMs at once, each sampling the thread that started it.
*/

#define _GNU_SOURCE
#define lj_sysprof_c
#define LUA_CORE

#include <errno.h>
#include <string.h>

#include "lj_sysprof.h"
#include "lj_prof.h"
#include "lmisclib.h"

/* -- Configuration ------------------------------------------------------- */

/* In every build: the entry points check options before they know it has
** no profiler. */

void lj_sysprof_defaults(SysprofConfig *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->mode = LUAM_SYSPROF_DEFAULT;
  cfg->format = LUAM_SYSPROF_V4;
  cfg->clock = SYSPROF_CLOCK_CPU;
  cfg->interval = 10000;  /* 10 ms. */
  cfg->jitev = 1;
}

uint64_t lj_sysprof_interval(double ms)
{
  double us = ms * 1000;
  if (!(us > 0))
    return 0;
  return us < 18446744073709551616.0 ? (uint64_t)us : UINT64_MAX;
}

const char *lj_sysprof_check(const SysprofConfig *cfg)
{
  if (cfg->mode < LUAM_SYSPROF_DEFAULT || cfg->mode > LUAM_SYSPROF_CALLGRAPH)
    return "mode must be \"D\", \"L\" or \"C\"";
  if (cfg->interval < SYSPROF_INTERVAL_MIN)
    return "interval must be a number of milliseconds above 0";
  if (cfg->interval > SYSPROF_INTERVAL_MAX)
    return "interval must be at most 1000000 milliseconds";
  if (cfg->clock != SYSPROF_CLOCK_CPU && cfg->clock != SYSPROF_CLOCK_WALL)
    return "clock must be \"cpu\" or \"wall\"";
  if (cfg->format < LUAM_SYSPROF_V2 || cfg->format > LUAM_SYSPROF_V4)
    return "format must be \"v2\", \"v3\" or \"v4\"";
  return NULL;
}

#if LJ_HASSYSPROF

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <time.h>
#include <unistd.h>

#include "lj_frame.h"
#include "lj_profframe.h"
#include "lj_profhost.h"
#include "lj_jit.h"
#include "lj_dispatch.h"
#include "lj_vm.h"
#include "lj_ff.h"
#include "lj_profnap.h"
#include "lj_proflabel.h"
#include "lj_profstream.h"
#include "lj_proftrace.h"
#include "lj_profunwind.h"
#include "lj_profwalk.h"
#include "lj_symtab.h"
#include "lj_wbuf.h"

/* -- Stream -------------------------------------------------------------- */

/* The grammar and its numbers: lj_profstream.h. */

/* Frame tags of a sample: the walk's frames (lj_profwalk.h). */
#define FRAMES_V3		(FRBIT(FR_LUA)|FRBIT(FR_CFUNC)|FRBIT(FR_FFUNC)| \
				 FRBIT(FR_NATIVE)|FRBIT(FR_TRACE_LUA))

#define SAMPLE_FRAMES		256	/* Frames kept per sample. */
#define FRAME_BYTES		(1 + 4*LJ_WBUF_ULEB_MAX)  /* A trace: tag 6. */
/* A v2 sample has one end byte more, and no frame of more than 2 ULEBs;
** a v3 sample may have a jit-context. */
#define SAMPLE_BYTES		(2 + 2*LJ_WBUF_ULEB_MAX + \
				 SAMPLE_FRAMES*FRAME_BYTES)
/* v4: a sample under a set not in force, its records first. */
#define SCRATCH_BYTES		(PROFLABEL_BYTES + SAMPLE_BYTES)
#define RING_SIZE		((size_t)1 << 20)	/* Power of two. */
#define DRAIN_NS		(10*1000*1000)

/* -- Profiler state ------------------------------------------------------ */

enum { SPS_IDLE, SPS_PROFILE, SPS_HALT };

typedef struct Sysprof {
  _Atomic int state;
  global_State *g;		/* The VM profiled; NULL while idle. */
  global_State *lastg;		/* The VM of the counts (kept after a stop). */
  uint64_t serial;		/* Starts in the process so far, at this one. */
  pid_t tid;			/* The VM's thread: the only one sampled. */
  SysprofConfig cfg;
  char follow[LJ_PROF_FOLLOWMAX];  /* cfg.follow's, absolute. */
  luam_Sysprof_backtracer backtracer;
  int signo;
  timer_t timer;
  int perf_fd;			/* A perf cpu-clock event instead, or -1. */
  int statewatch;		/* lj_prof_statewatch is on for it. */
  _Atomic int timer_alive;
  struct timespec t0;		/* The profile's clock at start. */
  /* Written by the handler only (and read once the profile stopped). */
  uint64_t counts[LJ_VMST__MAX+1];
  uint64_t samples, dropped, overruns;
  uint64_t idle;		/* Ticks while the VM ran nothing: not its time. */
  volatile sig_atomic_t updating;  /* The VM's thread writes the ring: a
				  ** sample now would cut its record. */
  /* Records on their way out: the handler and the VM's thread produce,
  ** the drain thread consumes. */
  uint8_t *ring;
  _Atomic size_t head, tail;
  pthread_t drainer;
  ProfNap nap;			/* The drain thread's, cut short by a stop. */
  struct lj_wbuf out;
  struct lj_symtab_objs objs;
  int saved_errno;
  /* The trace compiler's events (lj_sysprof_jit.h): exits counted by the
  ** VM's thread, written when the drain thread says they are due. */
  struct SysprofExit *exits;	/* NULL: no events (v2, no JIT). */
  uint8_t *exittraces;		/* A bit per trace with counts pending. */
  uint32_t nexits;
  _Atomic int exits_due;
  /* The trace the compiler began last, which its samples name once
  ** J->cur.traceno no longer does: trace_save() and an abort clear it
  ** before the compiler is done (the profilers are told of the trace). */
  uint32_t compiling;
  ProfWalk walk;		/* The handler's; the drain adds code. */
  /* v4: the label sets the stream announced, mode D's samples by set. */
  ProfLabels labels;
  uint64_t labelcounts[LJ_LABELSETS_MAX+2];  /* Folded: the last. */
  uint8_t sample[SCRATCH_BYTES];	/* The handler's scratch. */
} Sysprof;

/* A profile per VM, up to SYSPROF_SLOTS at once: the handler tells them
** apart by the signal's source (lj_sysprof_sample.h). */
#define SYSPROF_SLOTS		8	/* Power of two: slot bits of sigtag. */
static Sysprof sysprof[SYSPROF_SLOTS];
static _Atomic uint64_t sysprof_starts;

/* The value of a profile's timer signals: its slot and its start, so that
** a late signal of an earlier profile in the slot is told apart. */
static int sysprof_sigtag(const Sysprof *sp)
{
  return (int)((sp->serial * SYSPROF_SLOTS + (uint64_t)(sp - sysprof)) &
	       0x7fffffff);
}

/* Callbacks and the format set through the C API. */
static luam_Sysprof_writer host_writer;
static luam_Sysprof_on_stop host_on_stop;
static luam_Sysprof_backtracer host_backtracer;
static int host_format = LUAM_SYSPROF_V4;
static char host_follow[LJ_PROF_FOLLOWMAX];  /* "": none follow. */

/* -- Ring buffer --------------------------------------------------------- */

static int ring_put(Sysprof *sp, const uint8_t *p, size_t n)
{
  size_t head = atomic_load_explicit(&sp->head, memory_order_relaxed);
  size_t tail = atomic_load_explicit(&sp->tail, memory_order_acquire);
  size_t at = head & (RING_SIZE-1), first;
  if (RING_SIZE - (head - tail) < n)
    return 0;
  first = n < RING_SIZE - at ? n : RING_SIZE - at;
  memcpy(sp->ring + at, p, first);
  memcpy(sp->ring, p + first, n - first);
  atomic_store_explicit(&sp->head, head + n, memory_order_release);
  return 1;
}

/* Move what the ring holds up to `head` into the output. */
static void ring_drain(Sysprof *sp, size_t head)
{
  size_t tail = atomic_load_explicit(&sp->tail, memory_order_relaxed);
  while (tail != head) {
    size_t at = tail & (RING_SIZE-1);
    size_t n = head - tail < RING_SIZE - at ? head - tail : RING_SIZE - at;
    lj_wbuf_addn(&sp->out, sp->ring + at, n);
    tail += n;
  }
  atomic_store_explicit(&sp->tail, tail, memory_order_release);
}

#include "lj_sysprof_sample.h"

/* -- Drain thread -------------------------------------------------------- */

static void drain_once(Sysprof *sp)
{
  /* Samples taken before this point name objects loaded before it. */
  size_t head = atomic_load_explicit(&sp->head, memory_order_acquire);
  if (sp->cfg.mode == LUAM_SYSPROF_CALLGRAPH ||
      sp->cfg.mode == LUAM_SYSPROF_LEAF) {
    lj_symtab_newobjs(&sp->out, &sp->objs, REC_CSYM);
    lj_profunwind_addobjs(&sp->walk.unw);
  }
  ring_drain(sp, head);
}

/* Any thread may stop the clock; a perf event is closed by release. */
static void sysprof_stoptimer(Sysprof *sp)
{
  if (atomic_exchange(&sp->timer_alive, 0)) {
    if (sp->perf_fd >= 0)
      ioctl(sp->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
    else
      timer_delete(sp->timer);
  }
}

/* Exits counted this long ago are written at the next one. */
#define EXITS_DUE_DRAINS	10

static void *drain_thread(void *arg)
{
  Sysprof *sp = (Sysprof *)arg;
  struct timespec at;
  unsigned drains = 0;
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &at);
    lj_profnap_after(&at, DRAIN_NS);
    if (!lj_profnap_until(&sp->nap, &at))
      break;
    drain_once(sp);
    if (++drains % EXITS_DUE_DRAINS == 0)
      atomic_store_explicit(&sp->exits_due, 1, memory_order_relaxed);
    if (lj_wbuf_failed(&sp->out)) {  /* The writer failed: stop sampling. */
      int expect = SPS_PROFILE;
      sysprof_stoptimer(sp);
      atomic_compare_exchange_strong(&sp->state, &expect, SPS_HALT);
      break;
    }
  }
  return NULL;
}

/* -- Writing from the VM's thread ---------------------------------------- */

/* The ring takes what the VM's thread writes; it waits while it is full. */
static size_t ring_writer(const void **data, size_t len, void *ctx)
{
  Sysprof *sp = (Sysprof *)ctx;
  struct timespec nap = { 0, 1000*1000 };
  while (!ring_put(sp, (const uint8_t *)*data, len)) {
    if (atomic_load(&sp->state) != SPS_PROFILE) {
      errno = EIO;
      return 0;  /* Nobody drains any more. */
    }
    nanosleep(&nap, NULL);
  }
  return len;
}

/* Symtab updates go into the ring between samples, never inside one. */
typedef struct RingUpdate {
  struct lj_wbuf out;
  uint8_t buf[4096];
} RingUpdate;

/* The handler runs on the VM's thread: signal fences keep the ring's
** stores between the flag's two stores, where the handler sees them. */
static void update_begin(Sysprof *sp, RingUpdate *u)
{
  sp->updating = 1;
  atomic_signal_fence(memory_order_seq_cst);
  lj_wbuf_init(&u->out, ring_writer, sp, u->buf, sizeof(u->buf));
}

static void update_end(Sysprof *sp, RingUpdate *u)
{
  lj_wbuf_flush(&u->out);
  atomic_signal_fence(memory_order_seq_cst);
  sp->updating = 0;
}

/* The profile of VM g, running or halted; NULL if none. */
static Sysprof *sysprof_of(global_State *g)
{
  int i;
  for (i = 0; i < SYSPROF_SLOTS; i++)
    if (atomic_load(&sysprof[i].state) != SPS_IDLE && sysprof[i].g == g)
      return &sysprof[i];
  return NULL;
}

/* The profile of g if it runs and writes stacks, which name protos and
** traces; the compiler's events name protos too. */
static Sysprof *sysprof_running(global_State *g, int jitev)
{
  Sysprof *sp = sysprof_of(g);
  return sp != NULL && atomic_load(&sp->state) == SPS_PROFILE &&
	 (sp->cfg.mode != LUAM_SYSPROF_DEFAULT ||
	  (jitev && sp->exits != NULL)) ? sp : NULL;
}

void lj_sysprof_addproto(global_State *g, const GCproto *pt)
{
  Sysprof *sp = sysprof_running(g, 1);
  if (sp != NULL) {
    RingUpdate u;
    update_begin(sp, &u);
    lj_symtab_writeproto(&u.out, REC_PROTO, pt);
    update_end(sp, &u);
  }
}

#if LJ_HASJIT
void lj_sysprof_addtrace(global_State *g, const struct GCtrace *T)
{
  Sysprof *sp = sysprof_running(g, 0);
  if (sp != NULL) {
    RingUpdate u;
    update_begin(sp, &u);
    lj_symtab_writetrace(&u.out, REC_TRACE, T);
    update_end(sp, &u);
  }
}
#endif

/* -- Fast functions' names ----------------------------------------------- */

static const char *const ffnames[] = {
  "lua", "c",
#define FFDEF(name)	#name,
#include "lj_ffdef.h"
#undef FFDEF
};

/* Library functions are named lib.func, as Lua code calls them. */
static size_t ffname(int id, char *buf, size_t sz)
{
  static const char *const libs[] = {
    "string", "table", "math", "bit", "coroutine", "jit", "ffi", "io", "os",
    "debug", "buffer", "package", NULL
  };
  const char *raw = ffnames[id];
  size_t len = strlen(raw), i;
  if (len >= sz)
    len = sz-1;
  memcpy(buf, raw, len);
  buf[len] = '\0';
  for (i = 0; libs[i] != NULL; i++) {
    size_t n = strlen(libs[i]);
    if (len > n && strncmp(buf, libs[i], n) == 0 && buf[n] == '_') {
      buf[n] = '.';
      break;
    }
  }
  return len;
}

#include "lj_sysprof_jit.h"

/* -- Start and stop ------------------------------------------------------ */

static void write_ffnames(struct lj_wbuf *out)
{
  char name[64];
  int id;
  for (id = FF_C+1; id < FF__MAX; id++) {
    size_t len = ffname(id, name, sizeof(name));
    lj_wbuf_addbyte(out, REC_FFNAME);
    lj_wbuf_adduleb(out, (uint64_t)id);
    lj_wbuf_addstring(out, name, len);
  }
}

/* The format's number is the stream's version. v2 has no records but
** samples and symtab updates. */
static void write_header(Sysprof *sp)
{
  uint8_t prologue[] = { 'l', 'j', 'p', 0, 0, 0, 0 };
  struct lj_wbuf *out = &sp->out;
  prologue[3] = (uint8_t)sp->cfg.format;
  /* v3: the objects' C symbols follow, written by the drain thread before
  ** any sample: reading them is most of what a start would cost. */
  lj_symtab_dump(out, sp->g, sp->cfg.format == LUAM_SYSPROF_V2 ? &sp->objs :
						     NULL);
  lj_wbuf_addn(out, prologue, sizeof(prologue));
  if (sp->cfg.format == LUAM_SYSPROF_V2)
    return;
  lj_wbuf_addbyte(out, REC_CONFIG);
  lj_wbuf_adduleb(out, (uint64_t)sp->cfg.mode);
  lj_wbuf_adduleb(out, sp->cfg.interval);
  lj_wbuf_adduleb(out, sp->perf_fd >= 0 ? LJP_CLOCK_PERF : (uint64_t)sp->cfg.clock);
  lj_wbuf_addbyte(out, REC_PROCESS);
  lj_profhost_process(out);
  write_ffnames(out);
  jit_begin(sp);
}

static clockid_t sysprof_clockid(const Sysprof *sp)
{
  return sp->cfg.clock == SYSPROF_CLOCK_WALL ? CLOCK_MONOTONIC :
					       CLOCK_THREAD_CPUTIME_ID;
}

static void write_stats(Sysprof *sp)
{
  struct lj_wbuf *out = &sp->out;
  struct timespec t1;
  uint64_t ns, idle;
  int i;
  clock_gettime(sysprof_clockid(sp), &t1);
  ns = (uint64_t)(t1.tv_sec - sp->t0.tv_sec) * 1000000000u +
       (uint64_t)t1.tv_nsec - (uint64_t)sp->t0.tv_nsec;
  /* The VM's time: a tick while it ran nothing stood for an interval. */
  idle = sp->idle * sp->cfg.interval * 1000;
  ns = idle < ns ? ns - idle : 0;
  lj_wbuf_addbyte(out, REC_STATS);
  lj_wbuf_adduleb(out, sp->samples);
  for (i = 0; i <= LJ_VMST_TRACE; i++)
    lj_wbuf_adduleb(out, sp->counts[i]);
  lj_wbuf_adduleb(out, sp->dropped);
  lj_wbuf_adduleb(out, sp->overruns);
  lj_wbuf_adduleb(out, ns);
  if (sp->cfg.format >= LUAM_SYSPROF_V4)
    lj_wbuf_adduleb(out, sp->labels.nfolded);
}

/* Mode D's samples by label set, those with none left out. */
static void write_labelcounts(Sysprof *sp)
{
  struct lj_wbuf *out = &sp->out;
  uint32_t no, n = 0;
  for (no = 0; no <= LJ_LABELSETS_MAX+1; no++)
    n += sp->labelcounts[no] != 0;
  lj_wbuf_addbyte(out, REC_LABELCOUNTS);
  lj_wbuf_adduleb(out, n);
  for (no = 0; no <= LJ_LABELSETS_MAX+1; no++)
    if (sp->labelcounts[no] != 0) {
      lj_wbuf_adduleb(out, no <= LJ_LABELSETS_MAX ? no : LJ_LABELS_OTHER);
      lj_wbuf_adduleb(out, sp->labelcounts[no]);
    }
}

static void write_end(Sysprof *sp)
{
  if (sp->cfg.format >= LUAM_SYSPROF_V4 &&
      sp->cfg.mode == LUAM_SYSPROF_DEFAULT)
    write_labelcounts(sp);
  if (sp->cfg.format != LUAM_SYSPROF_V2)
    write_stats(sp);
  lj_wbuf_addbyte(&sp->out, LJP_END);
}

/* A real-time signal: jit.profile keeps SIGPROF, both may run at once.
** Once set, the handler stays (outside a profile it ignores the signal):
** a perf event's signal is sent from the kernel's irq work and may come
** after the event is disabled and the pending ones are taken; with the
** default action back, it would end the process. */
static int sysprof_signal_setup(Sysprof *sp)
{
  struct sigaction sa, cur;
  sp->signo = SIGRTMIN + LUAM_SYSPROF_SIGRTOFS;
  if (sigaction(sp->signo, NULL, &cur) != 0)
    return errno;
  if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == sysprof_signal)
    return 0;  /* Ours, from an earlier profile. */
  if (cur.sa_handler != SIG_DFL || (cur.sa_flags & SA_SIGINFO))
    return EBUSY;  /* The host uses that signal. */
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = sysprof_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  return sigaction(sp->signo, &sa, NULL) != 0 ? errno : 0;
}

/*
** The thread's CPU time at the asked rate: a POSIX timer on the thread's
** CPU-time clock fires on the kernel's tick (about 4 ms here), a perf
** cpu-clock event at its period. Opened before the header names it, and
** armed with the signal: one overflow at a time (REFRESH 1, re-armed by
** the handler), so a thread that blocks the signal never queues more than
** one. Where perf events are refused, the timer.
*/
static int sysprof_perf_open(Sysprof *sp)
{
  struct perf_event_attr attr;
  int fd;
  memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.sample_period = sp->cfg.interval * 1000;
  attr.disabled = 1;
  fd = (int)syscall(SYS_perf_event_open, &attr, sp->tid, -1, -1,
		    PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {  /* Unprivileged, perf_event_paranoid 2: user time only. */
    attr.exclude_kernel = attr.exclude_hv = 1;
    fd = (int)syscall(SYS_perf_event_open, &attr, sp->tid, -1, -1,
		      PERF_FLAG_FD_CLOEXEC);
  }
  return fd;
}

static int sysprof_perf_arm(Sysprof *sp)
{
  struct f_owner_ex owner;
  owner.type = F_OWNER_TID;
  owner.pid = sp->tid;
  if (fcntl(sp->perf_fd, F_SETOWN_EX, &owner) != 0 ||
      fcntl(sp->perf_fd, F_SETSIG, sp->signo) != 0 ||
      fcntl(sp->perf_fd, F_SETFL, O_ASYNC | O_NONBLOCK) != 0)
    return errno;
  atomic_store(&sp->timer_alive, 1);
  if (ioctl(sp->perf_fd, PERF_EVENT_IOC_REFRESH, 1) != 0) {
    int err = errno;
    sysprof_stoptimer(sp);
    return err;
  }
  return 0;
}

static int sysprof_timer_setup(Sysprof *sp)
{
  struct sigevent sev;
  struct itimerspec its;
  if (sp->perf_fd >= 0)
    return sysprof_perf_arm(sp);
  memset(&sev, 0, sizeof(sev));
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = sp->signo;
  sev.sigev_value.sival_int = sysprof_sigtag(sp);
  sev._sigev_un._tid = sp->tid;  /* glibc's name for sigev_notify_thread_id. */
  if (timer_create(sysprof_clockid(sp), &sev, &sp->timer) != 0)
    return errno;
  atomic_store(&sp->timer_alive, 1);
  its.it_interval.tv_sec = (time_t)(sp->cfg.interval / 1000000);
  its.it_interval.tv_nsec = (long)(sp->cfg.interval % 1000000) * 1000;
  its.it_value = its.it_interval;
  if (timer_settime(sp->timer, 0, &its, NULL) != 0) {
    int err = errno;
    sysprof_stoptimer(sp);
    return err;
  }
  return 0;
}

/* The clock stops; signals already sent are taken here, not by a later
** profile's handler. */
static void sysprof_signal_stop(Sysprof *sp)
{
  sigset_t set, old;
  struct timespec zero = { 0, 0 };
  sigemptyset(&set);
  sigaddset(&set, sp->signo);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  sysprof_stoptimer(sp);
  while (sigtimedwait(&set, NULL, &zero) > 0) ;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* What a profile holds besides its threads and stream; then it is over. */
static void sysprof_release(Sysprof *sp)
{
  jit_off(sp);
  jit_end(sp);
  if (sp->statewatch)
    lj_prof_statewatch(sp->g, 0);
  sp->statewatch = 0;
  if (sp->perf_fd >= 0)
    close(sp->perf_fd);
  lj_symtab_freeobjs(&sp->objs);
  munmap(sp->ring, RING_SIZE);
  lj_profwalk_closeprobe(&sp->walk);
  sp->g = NULL;
  atomic_store(&sp->state, SPS_IDLE);
}

/* Undo a start up to the point it reached; the stream ends, on_stop runs. */
static int sysprof_finish(Sysprof *sp, int threads, int err)
{
  int cbfail;
  if (threads) {
    lj_profnap_quit(&sp->nap);
    pthread_join(sp->drainer, NULL);
    lj_profnap_free(&sp->nap);
    drain_once(sp);  /* What the last samples left. */
  }
  jit_last(sp);  /* The last exits counted. */
  if (!lj_wbuf_failed(&sp->out))
    write_end(sp);
  lj_wbuf_flush(&sp->out);
  if (err == 0)
    err = sp->out.saved_errno;
  cbfail = sp->cfg.on_stop(sp->cfg.ctx, sp->out.buf);
  sysprof_release(sp);
  if (err != 0 || cbfail) {
    if (err != 0)
      errno = err;
    return PROFILE_ERRIO;
  }
  return PROFILE_SUCCESS;
}

/* A slot for a new profile, taken (HALT keeps the handler off while the
** profile is set up); NULL if every one is. */
static Sysprof *sysprof_claim(void)
{
  int i;
  for (i = 0; i < SYSPROF_SLOTS; i++) {
    int expect = SPS_IDLE;
    if (atomic_compare_exchange_strong(&sysprof[i].state, &expect, SPS_HALT))
      return &sysprof[i];
  }
  return NULL;
}

int lj_sysprof_start(lua_State *L, const SysprofConfig *cfg)
{
  Sysprof *sp;
  int err;
  if (lj_sysprof_check(cfg) != NULL || cfg->buf == NULL || cfg->len < 1024 ||
      cfg->writer == NULL || cfg->on_stop == NULL)
    return PROFILE_ERRUSE;
  if (sysprof_of(G(L)) != NULL || (sp = sysprof_claim()) == NULL)
    return PROFILE_ERRRUN;
  sp->cfg = *cfg;
  if (cfg->follow != NULL) {
    if (!lj_prof_followpath(sp->follow, cfg->follow)) {
      atomic_store(&sp->state, SPS_IDLE);
      return PROFILE_ERRUSE;
    }
    sp->cfg.follow = sp->follow;
  }
  sp->g = sp->lastg = G(L);
  sp->serial = atomic_fetch_add(&sysprof_starts, 1) + 1;
  sp->backtracer = host_backtracer;
  sp->tid = (pid_t)syscall(SYS_gettid);
  memset(sp->counts, 0, sizeof(sp->counts));
  memset(sp->labelcounts, 0, sizeof(sp->labelcounts));
  lj_proflabel_reset(&sp->labels);
  sp->samples = sp->dropped = sp->overruns = sp->idle = 0;
  sp->updating = 0;
  sp->exits = NULL;
  atomic_store(&sp->head, 0);
  atomic_store(&sp->tail, 0);
  sp->ring = mmap(NULL, RING_SIZE, PROT_READ|PROT_WRITE,
		  MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
  if (sp->ring == MAP_FAILED) {
    sp->g = NULL;
    atomic_store(&sp->state, SPS_IDLE);
    return PROFILE_ERRMEM;
  }
  if (!lj_profwalk_openprobe(&sp->walk)) {
    munmap(sp->ring, RING_SIZE);
    sp->g = NULL;
    atomic_store(&sp->state, SPS_IDLE);
    return PROFILE_ERRMEM;
  }
  sp->perf_fd = cfg->clock == SYSPROF_CLOCK_CPU ? sysprof_perf_open(sp) : -1;
  lj_wbuf_init(&sp->out, cfg->writer, cfg->ctx, cfg->buf, cfg->len);
  write_header(sp);
  lj_profwalk_setcode(&sp->walk, sp->g, 0);
  if (lj_wbuf_failed(&sp->out))
    return sysprof_finish(sp, 0, 0);
  lj_profnap_init(&sp->nap);
  if ((err = lj_profhost_thread(&sp->drainer, drain_thread, sp)) != 0) {
    lj_profnap_free(&sp->nap);
    return sysprof_finish(sp, 0, err);
  }
  clock_gettime(sysprof_clockid(sp), &sp->t0);
  lj_prof_statewatch(sp->g, 1);  /* Before the first sample. */
  sp->statewatch = 1;
  atomic_store(&sp->state, SPS_PROFILE);
  jit_on(sp);
  lj_prof_forkguard();
  if ((err = sysprof_signal_setup(sp)) != 0 ||
      (err = sysprof_timer_setup(sp)) != 0) {
    atomic_store(&sp->state, SPS_HALT);
    if (err != EBUSY)
      sysprof_signal_stop(sp);
    return sysprof_finish(sp, 1, err);
  }
  return PROFILE_SUCCESS;
}

int lj_sysprof_busy(global_State *g)
{
  int i, n = 0;
  for (i = 0; i < SYSPROF_SLOTS; i++)
    n += atomic_load(&sysprof[i].state) != SPS_IDLE;
  return g == NULL ? n > 0 : n == SYSPROF_SLOTS || sysprof_of(g) != NULL;
}

static int sysprof_stop(Sysprof *sp)
{
  jit_off(sp);
  atomic_store(&sp->state, SPS_HALT);
  sysprof_signal_stop(sp);
  return sysprof_finish(sp, 1, 0);
}

LUA_API int luaM_sysprof_stop(lua_State *L)
{
  Sysprof *sp = sysprof_of(G(L));
  return sp != NULL ? sysprof_stop(sp) : PROFILE_ERRRUN;
}

void lj_sysprof_close(global_State *g)
{
  Sysprof *sp = sysprof_of(g);
  if (sp != NULL)
    sysprof_stop(sp);
}

/* The child of a fork(): the timer (not inherited), the drain thread and
** the stream stay with the parent; the child's copy of the profile is
** dropped without writing. The drain thread may have held a lock when the
** process forked: nothing here waits. */
void lj_sysprof_forked(void)
{
  int i;
  for (i = 0; i < SYSPROF_SLOTS; i++) {
    Sysprof *sp = &sysprof[i];
    if (atomic_load(&sp->state) == SPS_IDLE)
      continue;
    atomic_store(&sp->state, SPS_HALT);  /* The handler ignores the signal. */
    atomic_store(&sp->timer_alive, 0);
    sysprof_release(sp);
  }
}

int lj_sysprof_follows(int i, global_State **g, SysprofConfig *cfg)
{
  Sysprof *sp;
  if (i >= SYSPROF_SLOTS)
    return -1;
  sp = &sysprof[i];
  if (atomic_load(&sp->state) != SPS_PROFILE || sp->cfg.follow == NULL)
    return 0;
  *g = sp->g;
  *cfg = sp->cfg;
  return 1;
}

void lj_sysprof_exit(void *ctx)
{
  int i;
  for (i = 0; i < SYSPROF_SLOTS && ctx != NULL; i++)
    if (atomic_load(&sysprof[i].state) != SPS_IDLE &&
	sysprof[i].cfg.ctx == ctx)
      sysprof_stop(&sysprof[i]);
}

/* The profile of g running or the last one; g NULL: that of the calling
** thread's VM, else the last one in the process. */
static const Sysprof *sysprof_latest(global_State *g)
{
  pid_t tid = (pid_t)syscall(SYS_gettid);
  const Sysprof *best = NULL, *anyvm = NULL;
  int i;
  for (i = 0; i < SYSPROF_SLOTS; i++) {
    const Sysprof *sp = &sysprof[i];
    if (sp->serial == 0)
      continue;
    if (anyvm == NULL || sp->serial > anyvm->serial)
      anyvm = sp;
    if ((g != NULL ? sp->lastg == g : sp->tid == tid) &&
	(best == NULL || sp->serial > best->serial))
      best = sp;
  }
  return best != NULL || g != NULL ? best : anyvm;
}

int lj_sysprof_report(global_State *g, struct luam_Sysprof_Counters *c)
{
  const Sysprof *sp = sysprof_latest(g);
  const uint64_t *n = sp != NULL ? sp->counts : NULL;
  if (c == NULL)
    return PROFILE_ERRUSE;
  if (n == NULL) {
    memset(c, 0, sizeof(*c));
    return PROFILE_SUCCESS;
  }
  c->vmst_interp = n[LJ_VMST_INTERP];
  c->vmst_lfunc = n[LJ_VMST_LFUNC];
  c->vmst_ffunc = n[LJ_VMST_FFUNC];
  c->vmst_cfunc = n[LJ_VMST_CFUNC];
  c->vmst_gc = n[LJ_VMST_GC];
  c->vmst_exit = n[LJ_VMST_EXIT];
  c->vmst_record = n[LJ_VMST_RECORD];
  c->vmst_opt = n[LJ_VMST_OPT];
  c->vmst_asm = n[LJ_VMST_ASM];
  c->vmst_trace = n[LJ_VMST_TRACE];
  c->samples = sp->samples;
  return PROFILE_SUCCESS;
}

/* -- C API --------------------------------------------------------------- */

LUA_API int luaM_sysprof_set_writer(luam_Sysprof_writer writer)
{
  if (lj_sysprof_busy(NULL))
    return PROFILE_ERRRUN;
  host_writer = writer;
  return PROFILE_SUCCESS;
}

LUA_API int luaM_sysprof_set_on_stop(luam_Sysprof_on_stop on_stop)
{
  if (lj_sysprof_busy(NULL))
    return PROFILE_ERRRUN;
  host_on_stop = on_stop;
  return PROFILE_SUCCESS;
}

LUA_API int luaM_sysprof_set_backtracer(luam_Sysprof_backtracer backtracer)
{
  if (lj_sysprof_busy(NULL))
    return PROFILE_ERRRUN;
  host_backtracer = backtracer;
  return PROFILE_SUCCESS;
}

LUA_API int luaM_sysprof_set_follow(const char *path)
{
  if (path != NULL && (*path == '\0' || strlen(path) >= LJ_PROF_FOLLOWMAX))
    return PROFILE_ERRUSE;
  if (lj_sysprof_busy(NULL))
    return PROFILE_ERRRUN;
  strcpy(host_follow, path != NULL ? path : "");
  return PROFILE_SUCCESS;
}

LUA_API int luaM_sysprof_set_format(int format)
{
  SysprofConfig cfg;
  lj_sysprof_defaults(&cfg);
  cfg.format = format;
  if (lj_sysprof_check(&cfg) != NULL)
    return PROFILE_ERRUSE;
  if (lj_sysprof_busy(NULL))
    return PROFILE_ERRRUN;
  host_format = format;
  return PROFILE_SUCCESS;
}

/* The reference's options: no clock (the default's, CPU time), the
** interval in whole milliseconds. */
LUA_API int luaM_sysprof_start(lua_State *L,
			       const struct luam_Sysprof_Options *opt)
{
  SysprofConfig cfg;
  if (opt == NULL)
    return PROFILE_ERRUSE;
  lj_sysprof_defaults(&cfg);
  cfg.mode = opt->mode;
  cfg.format = host_format;
  cfg.interval = lj_sysprof_interval((double)opt->interval);
  cfg.buf = opt->buf;
  cfg.len = opt->len;
  cfg.ctx = opt->ctx;
  cfg.writer = host_writer;
  cfg.on_stop = host_on_stop;
  cfg.follow = host_follow[0] != '\0' ? host_follow : NULL;
  return lj_sysprof_start(L, &cfg);
}

#else /* !LJ_HASSYSPROF */

LJ_PROF_OFF(sysprof)

#if LJ_HASJIT
/* Never called: no profile records the compiler's events. */
void lj_sysprof_jitstart(struct jit_State *J) { UNUSED(J); }
void lj_sysprof_jitstop(struct jit_State *J, struct GCtrace *T)
{
  UNUSED(J); UNUSED(T);
}
void lj_sysprof_jitabort(struct jit_State *J, int e) { UNUSED(J); UNUSED(e); }
void lj_sysprof_jitblacklist(struct jit_State *J, GCproto *pt,
			     const BCIns *pc)
{
  UNUSED(J); UNUSED(pt); UNUSED(pc);
}
void lj_sysprof_jitflush(struct jit_State *J) { UNUSED(J); }
void lj_sysprof_jitexit(struct jit_State *J, const BCIns *pc)
{
  UNUSED(J); UNUSED(pc);
}
#endif

int lj_sysprof_follows(int i, global_State **g, SysprofConfig *cfg)
{
  UNUSED(i); UNUSED(g); UNUSED(cfg);
  return -1;
}

int lj_sysprof_start(lua_State *L, const SysprofConfig *cfg)
{
  UNUSED(L); UNUSED(cfg);
  return PROFILE_ERRUSE;
}

LUA_API int luaM_sysprof_set_writer(luam_Sysprof_writer writer)
{
  UNUSED(writer);
  return PROFILE_ERRUSE;
}

LUA_API int luaM_sysprof_set_on_stop(luam_Sysprof_on_stop on_stop)
{
  UNUSED(on_stop);
  return PROFILE_ERRUSE;
}

LUA_API int luaM_sysprof_set_backtracer(luam_Sysprof_backtracer backtracer)
{
  UNUSED(backtracer);
  return PROFILE_ERRUSE;
}

LUA_API int luaM_sysprof_set_format(int format)
{
  UNUSED(format);
  return PROFILE_ERRUSE;
}

LUA_API int luaM_sysprof_start(lua_State *L,
			       const struct luam_Sysprof_Options *opt)
{
  UNUSED(L); UNUSED(opt);
  return PROFILE_ERRUSE;
}

LUA_API int luaM_sysprof_stop(lua_State *L)
{
  UNUSED(L);
  return PROFILE_ERRUSE;
}

int lj_sysprof_report(global_State *g, struct luam_Sysprof_Counters *c)
{
  UNUSED(g);
  if (c != NULL)
    memset(c, 0, sizeof(*c));  /* Nothing was ever counted. */
  return PROFILE_ERRUSE;
}

#endif

LUA_API int luaM_sysprof_report(struct luam_Sysprof_Counters *c)
{
  return lj_sysprof_report(NULL, c);
}
