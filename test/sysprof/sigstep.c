/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** sigstep: delivers the sampler's signal at chosen instructions.
**
**   sigstep STEPS EVERY LUAJIT SCRIPT...
**   sigstep --probe
**
** Runs LUAJIT SCRIPT under ptrace. Once the script raises SIGUSR1 (after
** starting the profiler), its thread is single-stepped for STEPS
** instructions and, at every EVERY-th one, receives the sampler's signal
** (lmisclib.h) right there: a hardware breakpoint on the interrupted
** instruction catches the return from the handler, so stepping goes on
** where it left. Then the script runs on alone. Prints how many signals
** its handler took there, and how many found the signal blocked (those
** run later, or are dropped at stop); exits with the script's status.
**
** Needs ptrace and hardware breakpoints, which virtual machines may not
** give: --probe tries both on a child of its own. Either mode exits with
** 77 and says why on stderr when the kernel refuses them.
*/

#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lmisclib.h"

#define EXIT_UNSUPPORTED	77

static pid_t child;

static void quit(int status, const char *what)
{
  fprintf(stderr, "sigstep: %s: %s\n", what, strerror(errno));
  if (child > 0)
    kill(child, SIGKILL);
  exit(status);
}

static void die(const char *what)
{
  quit(2, what);
}

/* The kernel refused a facility: the caller skips, it does not fail. */
static void unsupported(const char *what)
{
  quit(EXIT_UNSUPPORTED, what);
}

/* Wait for the next stop; returns the stop signal, or -1 if it exited. */
static int exit_status;	/* The child's, once it ended. */

static int wait_stop(int *status)
{
  if (waitpid(child, status, 0) < 0)
    die("waitpid");
  if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
    exit_status = WIFEXITED(*status) ? WEXITSTATUS(*status) :
				       128 + WTERMSIG(*status);
    return -1;
  }
  return WSTOPSIG(*status);
}

/* Run until the script says it is ready (SIGUSR1, suppressed). */
static int run_to_ready(void)
{
  int status, sig = 0;
  for (;;) {
    if (ptrace(PTRACE_CONT, child, 0, sig) < 0)
      die("PTRACE_CONT");
    sig = wait_stop(&status);
    if (sig < 0)
      return 0;
    if (sig == SIGUSR1)
      return 1;
    if (sig == SIGTRAP)
      sig = 0;
  }
}

/* A hardware breakpoint on the traced thread alone: the profiler's other
** threads run the same library code and must not trap. */
static void hwbreak(unsigned long addr)
{
  size_t dr0 = offsetof(struct user, u_debugreg[0]);
  size_t dr7 = offsetof(struct user, u_debugreg[7]);
  if (addr != 0 && ptrace(PTRACE_POKEUSER, child, dr0, addr) < 0)
    unsupported("hardware breakpoints (PTRACE_POKEUSER DR0)");
  /* DR7: enable breakpoint 0, on execution, locally. */
  if (ptrace(PTRACE_POKEUSER, child, dr7, addr != 0 ? 1ul : 0ul) < 0)
    unsupported("hardware breakpoints (PTRACE_POKEUSER DR7)");
}

/* Starts the child, stopped and traced; its own code runs after that. */
static void start_traced(void (*run)(char **), char **argv)
{
  int status;
  if ((child = fork()) < 0)
    die("fork");
  if (child == 0) {
    if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
      _exit(EXIT_UNSUPPORTED);
    raise(SIGSTOP);
    run(argv);
    _exit(0);
  }
  if (wait_stop(&status) < 0) {
    errno = EPERM;
    if (exit_status == EXIT_UNSUPPORTED)
      unsupported("ptrace (PTRACE_TRACEME)");
    die("the traced child ended at once");
  }
  ptrace(PTRACE_SETOPTIONS, child, 0, PTRACE_O_EXITKILL);
}

static void run_exec(char **argv)
{
  execv(argv[0], argv);
  _exit(127);
}

/* The probe: the child calls this, with a breakpoint set on it. */
static void __attribute__((noinline)) probe_target(char **argv)
{
  (void)argv;
  __asm__ volatile ("" ::: "memory");
}

/* ptrace and an execution breakpoint that fires where it is set. */
static int probe(void)
{
  struct user_regs_struct regs;
  int status;
  start_traced(probe_target, NULL);
  hwbreak((unsigned long)probe_target);
  if (ptrace(PTRACE_CONT, child, 0, 0) < 0)
    die("PTRACE_CONT");
  if (wait_stop(&status) != SIGTRAP)
    unsupported("hardware breakpoints (no trap at the breakpoint)");
  if (ptrace(PTRACE_GETREGS, child, 0, &regs) < 0)
    die("PTRACE_GETREGS");
  if (regs.rip != (unsigned long)probe_target) {
    errno = EINVAL;
    unsupported("hardware breakpoints (a trap elsewhere)");
  }
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
  printf("ptrace and hardware breakpoints work\n");
  return 0;
}

/* Is signo pending for the child, blocked where it was sent? */
static int pending(int signo)
{
  char path[64], line[256];
  unsigned long long mask = 0;
  FILE *f;
  snprintf(path, sizeof(path), "/proc/%d/status", (int)child);
  if ((f = fopen(path, "r")) == NULL)
    return 0;
  while (fgets(line, sizeof(line), f) != NULL)
    if (strncmp(line, "SigPnd:", 7) == 0)
      mask |= strtoull(line + 7, NULL, 16);
  fclose(f);
  return (mask >> (signo - 1)) & 1;
}

/* A rep-prefixed string instruction interrupted halfway resumes without
** raising its breakpoint again: no delivery there. */
static int rep_prefixed(unsigned long rip)
{
  unsigned long word;
  errno = 0;
  word = ptrace(PTRACE_PEEKTEXT, child, rip, 0);
  if (errno)
    die("PTRACE_PEEKTEXT");
  return (word & 0xff) == 0xf3 || (word & 0xff) == 0xf2;
}

/* Deliver signo at the current instruction and run the handler to its
** end: the breakpoint there fires when the thread comes back. Returns -1
** if the child ended, 0 if this instruction was skipped, 1 if the handler
** ran, 2 if the signal was blocked there (pending: it runs later). */
static int deliver_here(int signo)
{
  struct user_regs_struct regs, now;
  int status, sig = signo;
  if (ptrace(PTRACE_GETREGS, child, 0, &regs) < 0)
    die("PTRACE_GETREGS");
  if (rep_prefixed(regs.rip))
    return 0;
  hwbreak(regs.rip);
  for (;;) {
    if (ptrace(PTRACE_CONT, child, 0, sig) < 0)
      die("PTRACE_CONT");
    sig = wait_stop(&status);
    if (sig < 0)
      return -1;
    if (sig != SIGTRAP)
      continue;  /* Another signal: deliver it too. */
    sig = 0;
    if (ptrace(PTRACE_GETREGS, child, 0, &now) < 0)
      die("PTRACE_GETREGS");
    /* The handler itself may run that instruction: only the original
    ** stack pointer means we are back. */
    hwbreak(0);
    if (now.rip == regs.rip && now.rsp == regs.rsp)
      return pending(signo) ? 2 : 1;
    if (ptrace(PTRACE_SINGLESTEP, child, 0, 0) < 0)
      die("PTRACE_SINGLESTEP");
    if (wait_stop(&status) < 0)
      return -1;
    hwbreak(regs.rip);
  }
}

int main(int argc, char **argv)
{
  int signo = SIGRTMIN + LUAM_SYSPROF_SIGRTOFS, every, status, alive = 1;
  long steps, i, delivered = 0, blocked = 0;
  if (argc == 2 && strcmp(argv[1], "--probe") == 0)
    return probe();
  if (argc < 5) {
    fprintf(stderr, "usage: sigstep STEPS EVERY LUAJIT SCRIPT...\n"
		    "       sigstep --probe\n");
    return 2;
  }
  steps = atol(argv[1]);
  every = atoi(argv[2]);
  start_traced(run_exec, argv + 3);
  if (!run_to_ready()) {
    fprintf(stderr, "sigstep: the script ended before it was ready\n");
    return 2;
  }
  for (i = 0; i < steps && alive; i++) {
    if (i % every == 0) {
      int r = deliver_here(signo);
      alive = r >= 0;
      delivered += r == 1;
      blocked += r == 2;
    } else {
      if (ptrace(PTRACE_SINGLESTEP, child, 0, 0) < 0)
	die("PTRACE_SINGLESTEP");
      alive = wait_stop(&status) >= 0;
    }
  }
  printf("delivered %ld blocked %ld\n", delivered, blocked);
  fflush(stdout);
  if (alive) {
    ptrace(PTRACE_DETACH, child, 0, 0);
    while (wait_stop(&status) >= 0) ;
  }
  return exit_status;
}
