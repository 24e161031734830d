/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The profilers' native unwinder against frames whose return addresses the
** test knows: its own calls (with and without a frame pointer), calls
** through libc (qsort's comparator), a signal's interrupted context and a
** handler's own frames through the signal trampoline; and what it must
** refuse: reads outside the stack it was given, damaged unwind tables, an
** object unloaded since it was registered.
*/

#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "tap.h"
#include "../../src/lj_profunwind.h"

#define MAXSTEPS	64

/* The register the interpreter keeps its PC in (lj_frame.h's
** CFRAME_GREG_PC), which a step restores too. */
#if defined(__x86_64__)
#define PCREG		REG_RBX
#else
#define PCREG		21
#endif

static ProfUnwObjs objs;
static ProfUnwCache cache;
static ProfUnwStack stack;

typedef struct Walk {
  uintptr_t ip[MAXSTEPS];
  int n;
} Walk;

static void walk_from(Walk *w, const ucontext_t *uc, int exact,
		      ProfUnwCache *c)
{
  ProfUnwRegs r;
  r.ip = LJ_PROFUNW_UCPC(uc);
  r.sp = LJ_PROFUNW_UCSP(uc);
  r.bp = LJ_PROFUNW_UCFP(uc);
  r.bx = LJ_PROFUNW_UCREG(uc, PCREG);
  r.lr = LJ_PROFUNW_UCLR(uc);
  r.exact = exact;
  w->n = 0;
  w->ip[w->n++] = r.ip;
  while (w->n < MAXSTEPS && lj_profunwind_step(&objs, c, &stack, &r))
    w->ip[w->n++] = r.ip;
}

/* rets in the walk, in that order, after step `from` (a recursion
** returns to the same address more than once). */
static int walk_has(const Walk *w, const uintptr_t *rets, int n, int from)
{
  int i, at = from + 1;
  for (i = 0; i < n; i++, at++) {
    while (at < w->n && w->ip[at] != rets[i])
      at++;
    if (at == w->n)
      return 0;
  }
  return 1;
}

/* -- A chain of calls ---------------------------------------------------- */

#define LEVELS	4

static uintptr_t rets[LEVELS];	/* Level n returns to rets[n-1]. */
static volatile int sink;

/* At the bottom of a chain: the walk, while its frames exist. */
static Walk chain;
static ProfUnwCache *chain_cache;

static void __attribute__((noinline)) chain_walk(void)
{
  ucontext_t uc;
  getcontext(&uc);
  walk_from(&chain, &uc, 0, chain_cache);
}

static void __attribute__((noinline)) level(int n)
{
  volatile char pad[48 * 4];  /* Frames of other sizes. */
  pad[0] = (char)n;
  rets[n-1] = (uintptr_t)__builtin_return_address(0);
  if (n > 1)
    level(n - 1);
  else
    chain_walk();
  sink += pad[0];
}

static void __attribute__((noinline, optimize("no-omit-frame-pointer")))
level_fp(int n)
{
  volatile char *pad = alloca((size_t)n * 64);  /* The CFA from RBP. */
  pad[0] = (char)n;
  rets[n-1] = (uintptr_t)__builtin_return_address(0);
  if (n > 1)
    level_fp(n - 1);
  else
    chain_walk();
  sink += pad[0];
}

static void test_chain(void)
{
  chain_cache = NULL;
  level(LEVELS);
  tap_ok(walk_has(&chain, rets, LEVELS, 0),
	 "our frames: each return address, in order");
  tap_ok(chain.n < MAXSTEPS, "the walk ends where the stack does");
  chain_cache = &cache;
  level_fp(LEVELS);
  tap_ok(walk_has(&chain, rets, LEVELS, 0),
	 "frames with a frame pointer and alloca");
  level_fp(LEVELS);  /* Now from the cache. */
  tap_ok(walk_has(&chain, rets, LEVELS, 0), "the same walk from the cache");
}

/* -- Through libc -------------------------------------------------------- */

static Walk inner;
static uintptr_t sorter_ret;

static int __attribute__((noinline)) compare(const void *a, const void *b)
{
  if (inner.n == 0) {
    ucontext_t uc;
    getcontext(&uc);
    walk_from(&inner, &uc, 0, &cache);
  }
  return *(const int *)a - *(const int *)b;
}

static void __attribute__((noinline)) sorter(void)
{
  int v[64], i;
  sorter_ret = (uintptr_t)__builtin_return_address(0);
  for (i = 0; i < 64; i++)
    v[i] = (i * 37) % 64;
  qsort(v, 64, sizeof(int), compare);
  sink += v[0];
}

static void test_libc(void)
{
  inner.n = 0;
  sorter();
  tap_ok(walk_has(&inner, &sorter_ret, 1, 1),
	 "from qsort's callback through libc's frames to its caller");
}

/* -- Signals ------------------------------------------------------------- */

static Walk from_context, from_handler;

/* What the profilers' walks give a step to read outside the stack: the
** kernel's word on a pipe (EFAULT, not a fault). A trampoline in no
** object (qemu-user's) is read through it. */
static int probe_fd[2];

static int probe(void *ctx, const void *p, size_t n)
{
  char buf[16];
  (void)ctx;
  return n <= sizeof(buf) && write(probe_fd[1], p, n) == (ssize_t)n &&
	 read(probe_fd[0], buf, n) == (ssize_t)n;
}

static void on_signal(int sig, siginfo_t *info, void *uc)
{
  ucontext_t here;
  (void)sig; (void)info;
  walk_from(&from_context, (const ucontext_t *)uc, 1, &cache);
  getcontext(&here);
  walk_from(&from_handler, &here, 0, &cache);
}

static void __attribute__((noinline)) signalled(int n)
{
  rets[n-1] = (uintptr_t)__builtin_return_address(0);
  if (n > 1)
    signalled(n - 1);
  else
    raise(SIGUSR1);  /* Taken before raise returns. */
  sink++;
}

static void test_signal(void)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGUSR1, &sa, NULL);
  if (pipe(probe_fd) == 0)
    stack.probe = probe;
  signalled(LEVELS);
  stack.probe = NULL;
  tap_ok(walk_has(&from_context, rets, LEVELS, 0),
	 "from an interrupted context (in raise) to its callers");
  tap_ok(walk_has(&from_handler, rets, LEVELS, 0),
	 "from inside a handler, through the signal trampoline");
}

/* -- What it refuses ----------------------------------------------------- */

static void test_bounds(void)
{
  ProfUnwStack saved = stack;
  stack.hi = stack.lo;  /* No stack at all. */
  level(LEVELS);
  tap_is(chain.n, 1, "no read beyond the stack it was given");
  stack = saved;
}

/* Tables of random bytes: every step refused, none crashes. */
static void test_damage(void)
{
  static ProfUnwObjs fake;
  static uint8_t junk[4096];
  ProfUnwRegs r;
  int round, i, stepped = 0;
  srand(1);
  for (round = 0; round < 20000; round++) {
    ProfUnwSeg *s = &fake.seg[0];
    for (i = 0; i < (int)sizeof(junk); i++)
      junk[i] = (uint8_t)rand();
    /* Plausible lengths and CIE ids now and then, to get further in. */
    if (round & 1)
      memset(junk + 8 * (rand() % 64), 0, 4);
    s->lo = 0x1000;
    s->hi = 0x100000;
    s->hdr = (uintptr_t)junk;
    s->table = (const int32_t *)junk;
    s->nfde = 1 + (uint32_t)(rand() % 64);
    s->tab_lo = (uintptr_t)junk;
    s->tab_hi = (uintptr_t)junk + sizeof(junk);
    atomic_store(&fake.n, 1);
    r.ip = (uintptr_t)junk + (uintptr_t)(rand() % 4096);
    s->lo = r.ip - 1;
    s->hi = r.ip + 1;
    r.sp = (uintptr_t)&r;
    r.bp = r.bx = 0;
    r.exact = 1;
    stepped += lj_profunwind_step(&fake, NULL, &stack, &r);
  }
  tap_is(stepped, 0, "damaged tables: 20000 steps refused");
}

static void test_unload(const char *dir)
{
  char path[4200];
  void *h, *f;
  snprintf(path, sizeof(path), "%s/cmod.so", dir);
  h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
  if (h == NULL || (f = dlsym(h, "cmod_spin")) == NULL) {
    printf("ok %d - # SKIP no %s\n", ++tap_count, path);
    return;
  }
  lj_profunwind_addobjs(&objs);
  tap_ok(lj_profunwind_known(&objs, (uintptr_t)f), "a loaded object's code is known");
  dlclose(h);
  lj_profunwind_addobjs(&objs);
  tap_ok(!lj_profunwind_known(&objs, (uintptr_t)f),
	 "once unloaded, it is not (its tables are never read)");
}

int main(int argc, char **argv)
{
  char dir[4096];
  char *slash;
  (void)argc;
  lj_profunwind_addobjs(&objs);
  lj_profunwind_threadstack(&stack.lo, &stack.hi);
  test_chain();
  test_libc();
  test_signal();
  test_bounds();
  test_damage();
  snprintf(dir, sizeof(dir), "%s", argv[0]);
  slash = strrchr(dir, '/');
  if (slash != NULL)
    *slash = '\0';
  test_unload(slash != NULL ? dir : ".");
  return tap_done();
}
