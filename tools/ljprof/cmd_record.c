/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** ljprof record: run a Lua script on luajit under a profiler, from its
** first line to its exit, then report the stream it wrote.
**
** The script runs in a child, `luajit -e START SCRIPT ARGS...` (fork and
** exec, no shell), where START starts the profiler on the file named by
** the environment variable LJPROF_STREAM. The VM completes the stream
** however the script ends (normally, by an error, by os.exit).
**
** Heap snapshots (--heap, --heap-every) are asked of the VM through LJPROF
** in the child's environment (src/lj_profenv.c): the one at the end is
** taken as the script's main chunk returns, its locals still held.
*/
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "record_pid.h"
#include "report_cli.h"

#define CMD "record"
#define STREAM_ENV "LJPROF_STREAM"

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ljprof record --mem [OPTIONS] -- SCRIPT [ARGS...]\n"
          "       ljprof record --heap [--heap-every=SECS] [OPTIONS] -- SCRIPT "
          "[ARGS...]\n"
          "       ljprof record --cpu[=D|L|C] [--interval=MS] [OPTIONS] -- "
          "SCRIPT [ARGS...]\n"
          "       ljprof record --pid=PID... [--duration=SECS] [--cpu|--mem] "
          "[--heap] [OPTIONS]\n"
          "\n"
          "Run SCRIPT with ARGS on luajit under the memory profiler (--mem)\n"
          "or the platform profiler (--cpu), from its first line to its exit,\n"
          "write the profile stream, then print its report (as 'ljprof\n"
          "report' does). The exit status is the script's; when the script\n"
          "exits with 0, it is the report's (1: a damaged stream).\n"
          "\n"
          "With --pid (repeatable), profile running processes for SECS\n"
          "(default 10) or until Ctrl-C, and report. Processes started with\n"
          "LJPROF naming ondemand or a signal=, and their descendants (a\n"
          "server's workers), are told what to profile (--cpu, the default,\n"
          "--mem, --heap, with their options) through their control files,\n"
          "no signal sent; the streams go to -o DIR (default: a new\n"
          "/tmp/ljprof-record-XXXXXX). The window opens when the first\n"
          "process has started. Exit status 1 when a process is gone, not\n"
          "ours, not armed, or never reached a safe point.\n"
          "\n"
          "Options:\n"
          "  --mem               profile memory: every allocation, by place\n"
          "  --stacks            with --mem: each allocation's call stack (a v5\n"
          "                      stream, with time marks for the heap chart)\n"
          "  --native            with --mem: those stacks with their native (C)\n"
          "                      frames, as --cpu=C has them (implies --stacks)\n"
          "  --sample=BYTES      with --mem: record allocations at a mean\n"
          "                      interval of BYTES (1 to 2^40) allocated, with\n"
          "                      their stacks; reports give estimates\n"
          "  --stack-budget=BYTES\n"
          "                      with --mem: the address space the tables of\n"
          "                      stacks may take, 2^20 to 2^40 (default 2^30);\n"
          "                      past it, allocations are counted stackless\n"
          "  --heap              a heap snapshot at the end of the script (as\n"
          "                      its main chunk returns, its locals live; or\n"
          "                      at os.exit()), to STREAM.heap, or to -o's\n"
          "                      FILE (default heap.bin) without a profiler;\n"
          "                      its report (ljprof heap, joined to the\n"
          "                      memory profile with --mem) follows the\n"
          "                      profile's when that is text on stdout; a\n"
          "                      return hook finds the end: interpreted\n"
          "                      returns cost more (up to 6x on recursion)\n"
          "  --heap-every=SECS   with --heap: one every SECS too (whole\n"
          "                      seconds, 1 to 31536000), numbered .1, .2,\n"
          "                      ...; the one at the end is the last\n"
          "  --cpu[=MODE]        profile CPU by sampling: MODE C (call graph,\n"
          "                      the default), L (leaf) or D (VM states only)\n"
          "  --interval=MS       sampling interval in milliseconds, 0.001 to\n"
          "                      1000000, may be fractional (default: 10)\n"
          "  --clock=cpu|wall    with --cpu: the interval in the VM thread's\n"
          "                      CPU time (the default) or wall time, whose\n"
          "                      ticks outside the VM are no samples: cheaper\n"
          "                      for a server whose workers sleep and wake\n"
          "                      all the time (docs/nginx.md)\n"
          "  --no-jit-events     with --cpu: leave the trace compiler's events\n"
          "                      out of the stream (report --jit then has\n"
          "                      time by kind only)\n"
          "  -o, --output=FILE   the stream file (default: memprof.bin or\n"
          "                      sysprof.bin in the current directory); with\n"
          "                      --pid, the streams' directory\n"
          "  --report-out=FILE   write the report to FILE (default: stdout)\n"
          "  --luajit=PATH       the luajit to run (default: the one beside\n"
          "                      ljprof)\n"
          "  --pid=PID           profile that running process (and its\n"
          "                      descendants) instead; may be repeated\n"
          "  --duration=SECS     with --pid: how long, may be fractional\n"
          REPORT_OPTIONS_HELP REPORT_BY_HELP
          "  -h, --help          show this help\n"
          "\n"
          "Examples:\n"
          "  ljprof record --mem -- app.lua\n"
          "  ljprof record --mem --stacks --heap -- app.lua\n"
          "  ljprof record --mem --leak-only -o app.mem -- app.lua --port 8080\n"
          "  ljprof record --mem --sample=524288 --format=html "
          "--report-out=heap.html -- app.lua\n"
          "  ljprof record --cpu --interval=1 -- bench.lua\n"
          "  ljprof record --cpu --format=collapsed --report-out=cpu.folded "
          "-- bench.lua\n"
          "  ljprof record --cpu --format=pprof --report-out=cpu.pb.gz -- bench.lua\n"
          "  ljprof record --pid=4242 --duration=30 --format=html "
          "--report-out=cpu.html\n"
          "  ljprof record --pid=$(cat /run/nginx.pid) --mem --sample=524288 "
          "-o /var/tmp/rec\n");
}

enum {
  OPT_MEM = OPT_REPORT_LAST,
  OPT_CPU,
  OPT_INTERVAL,
  OPT_CLOCK,
  OPT_REPORT_OUT,
  OPT_LUAJIT,
  OPT_PID,
  OPT_DURATION,
  OPT_STACKS,
  OPT_NATIVE,
  OPT_SAMPLE,
  OPT_STACK_BUDGET,
  OPT_NO_JIT_EVENTS,
  OPT_HEAP,
  OPT_HEAP_EVERY
};

static const struct option long_options[] = {
    REPORT_LONG_OPTIONS,
    REPORT_BY_OPTION,
    {"mem", no_argument, NULL, OPT_MEM},
    {"cpu", optional_argument, NULL, OPT_CPU},
    {"interval", required_argument, NULL, OPT_INTERVAL},
    {"clock", required_argument, NULL, OPT_CLOCK},
    {"output", required_argument, NULL, 'o'},
    {"report-out", required_argument, NULL, OPT_REPORT_OUT},
    {"luajit", required_argument, NULL, OPT_LUAJIT},
    {"pid", required_argument, NULL, OPT_PID},
    {"duration", required_argument, NULL, OPT_DURATION},
    {"stacks", no_argument, NULL, OPT_STACKS},
    {"native", no_argument, NULL, OPT_NATIVE},
    {"sample", required_argument, NULL, OPT_SAMPLE},
    {"stack-budget", required_argument, NULL, OPT_STACK_BUDGET},
    {"no-jit-events", no_argument, NULL, OPT_NO_JIT_EVENTS},
    {"heap", no_argument, NULL, OPT_HEAP},
    {"heap-every", required_argument, NULL, OPT_HEAP_EVERY},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

enum profiler { PROFILER_NONE, PROFILER_MEM, PROFILER_CPU };

#define MAX_PIDS 64 /* --pid given */

struct args {
  struct report_options report;
  enum profiler profiler;
  char mode;                /* --cpu: 'C', 'L' or 'D' */
  const char *interval;     /* --cpu: milliseconds, as given */
  int wall;                 /* --cpu --clock=wall */
  const char *stream;       /* -o */
  const char *report_out;   /* --report-out */
  const char *luajit;       /* --luajit */
  char **script;            /* SCRIPT ARGS... (NULL-terminated) */
  pid_t pids[MAX_PIDS];     /* --pid, each; none: run SCRIPT */
  int npids;
  double duration;          /* --pid: seconds */
  int stacks;               /* --mem --stacks */
  int native;               /* --mem --native */
  unsigned long long sample; /* --mem --sample: bytes; 0: every event */
  unsigned long long budget; /* --mem --stack-budget: bytes; 0: default */
  int no_jit_events;        /* --cpu --no-jit-events */
  int heap;                 /* --heap */
  unsigned long long heap_every; /* --heap-every: seconds; 0: none */
};

/* What LJPROF takes of every= (lj_profenv.c). */
#define HEAP_EVERY_MAX 31536000ull

/* What memprof takes (lj_memprof_check in the VM): sampling intervals of
** 1 byte to 2^40, stack budgets of 2^20 to 2^40 bytes. */
#define SAMPLE_MAX (1ull << 40)
#define BUDGET_MIN (1ull << 20)
#define BUDGET_MAX (1ull << 40)

/* The sampling intervals sysprof takes, 0.001 to 10^6 milliseconds: whole
** microseconds, 1 to 10^9 (lj_sysprof_check in the VM). */
static int interval_taken(double ms) {
  double us = ms * 1000;
  return us >= 1 && us < 1e9 + 1;
}

/* A whole number of bytes in [min, max]. */
static int parse_bytes(const char *text, unsigned long long min,
                       unsigned long long max, unsigned long long *bytes) {
  char *end;
  errno = 0;
  unsigned long long n = strtoull(text, &end, 10);
  if (errno || end == text || *end || text[0] == '-' || n < min || n > max)
    return 0;
  *bytes = n;
  return 1;
}

/* A positive number (milliseconds, seconds) into *value, if not NULL. */
static int parse_positive(const char *text, double *value) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || !isfinite(v) || v <= 0) return 0;
  if (value) *value = v;
  return 1;
}

static int parse_pid(const char *text, pid_t *pid) {
  char *end;
  errno = 0;
  long n = strtol(text, &end, 10);
  if (errno || end == text || *end || n <= 0 || n > INT_MAX) return 0;
  *pid = (pid_t)n;
  return 1;
}

static int set_profiler(struct args *a, enum profiler p) {
  if (a->profiler != PROFILER_NONE && a->profiler != p)
    return usage_error(CMD, "--mem and --cpu: one profiler at a time");
  a->profiler = p;
  return -1;
}

static int parse_cpu_mode(struct args *a, const char *mode) {
  if (!mode) return -1;
  if ((!strcmp(mode, "C") || !strcmp(mode, "L") || !strcmp(mode, "D"))) {
    a->mode = mode[0];
    return -1;
  }
  return usage_error(CMD, "unknown --cpu mode '%s' (C, L or D)", mode);
}

/* An option of record's own; returns -1 to go on, or the exit status. */
static int parse_own_option(int c, char **argv, void *ud) {
  struct args *a = ud;
  double ms;
  int status;
  switch (c) {
  case OPT_MEM:
    return set_profiler(a, PROFILER_MEM);
  case OPT_CPU:
    status = set_profiler(a, PROFILER_CPU);
    return status >= 0 ? status : parse_cpu_mode(a, optarg);
  case OPT_INTERVAL:
    if (!parse_positive(optarg, &ms))
      return usage_error(CMD, "--interval wants a positive number of "
                              "milliseconds, not '%s'", optarg);
    if (!interval_taken(ms))
      return usage_error(CMD, "--interval takes 0.001 to 1000000 "
                              "milliseconds, not '%s'", optarg);
    a->interval = optarg;
    return -1;
  case OPT_CLOCK:
    if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "wall") != 0)
      return usage_error(CMD, "--clock takes cpu or wall, not '%s'", optarg);
    a->wall = optarg[0] == 'w';
    return -1;
  case 'o':
    a->stream = optarg;
    return -1;
  case OPT_REPORT_OUT:
    a->report_out = optarg;
    return -1;
  case OPT_LUAJIT:
    a->luajit = optarg;
    return -1;
  case OPT_PID:
    if (a->npids == MAX_PIDS)
      return usage_error(CMD, "--pid is given more than %d times", MAX_PIDS);
    if (!parse_pid(optarg, &a->pids[a->npids++]))
      return usage_error(CMD, "--pid wants a process id, not '%s'", optarg);
    return -1;
  case OPT_STACKS:
    a->stacks = 1;
    return -1;
  case OPT_NATIVE:
    a->native = 1;
    return -1;
  case OPT_SAMPLE:
    if (!parse_bytes(optarg, 1, SAMPLE_MAX, &a->sample))
      return usage_error(CMD, "--sample wants a whole number of bytes from 1 "
                              "to 1099511627776 (2^40), not '%s'", optarg);
    return -1;
  case OPT_STACK_BUDGET:
    if (!parse_bytes(optarg, BUDGET_MIN, BUDGET_MAX, &a->budget))
      return usage_error(CMD, "--stack-budget wants a whole number of bytes "
                              "from 1048576 (2^20) to 1099511627776 (2^40), "
                              "not '%s'", optarg);
    return -1;
  case OPT_NO_JIT_EVENTS:
    a->no_jit_events = 1;
    return -1;
  case OPT_HEAP:
    a->heap = 1;
    return -1;
  case OPT_HEAP_EVERY:
    if (!parse_bytes(optarg, 1, HEAP_EVERY_MAX, &a->heap_every))
      return usage_error(CMD, "--heap-every wants whole seconds from 1 to "
                              "31536000, not '%s'", optarg);
    return -1;
  case OPT_DURATION:
    if (!parse_positive(optarg, &a->duration))
      return usage_error(CMD, "--duration wants a positive number of "
                              "seconds, not '%s'", optarg);
    return -1;
  case 'h':
    usage(stdout);
    return EXIT_OK;
  default:
    return option_error(CMD, c, argv);
  }
}

/* Each profiler's options go with it (p: the profiler that runs). Returns
** -1, or EXIT_USAGE. */
static int check_profiler_options(const struct args *a, enum profiler p) {
  if ((a->interval || a->wall || a->no_jit_events) && p != PROFILER_CPU)
    return usage_error(CMD, "--interval, --clock and --no-jit-events are for "
                            "--cpu");
  if ((a->stacks || a->native || a->sample) && p != PROFILER_MEM)
    return usage_error(CMD, "--stacks, --native and --sample are for --mem");
  if (a->budget && p != PROFILER_MEM)
    return usage_error(CMD, "--stack-budget is for --mem");
  return -1;
}

/* Returns -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, struct args *a) {
  /* '+': options end at SCRIPT, whose own options are its business. */
  int status = parse_options(CMD, argc, argv, "+:o:h", long_options,
                             &a->report, parse_own_option, a);
  if (status >= 0) return status;
  if (a->npids) {
    if (a->luajit || a->heap_every || optind < argc)
      return usage_error(CMD, "--pid profiles running processes: no SCRIPT, "
                              "--luajit or --heap-every");
    if (a->report_out && a->profiler == PROFILER_NONE && a->heap)
      return usage_error(CMD, "--report-out: a heap snapshot alone is "
                              "reported by ljprof heap");
    /* What runs when none is named: CPU, unless a snapshot is asked. */
    return check_profiler_options(a, a->profiler   ? a->profiler
                                     : a->heap ? PROFILER_NONE
                                               : PROFILER_CPU);
  }
  if (a->duration)
    return usage_error(CMD, "--duration is for --pid");
  if (a->heap_every && !a->heap)
    return usage_error(CMD, "--heap-every is for --heap");
  if (a->heap && a->profiler == PROFILER_CPU)
    return usage_error(CMD, "--heap goes with --mem or alone: the hook that "
                            "finds the script's end would be in the CPU "
                            "profile");
  if (a->profiler == PROFILER_NONE && !a->heap)
    return usage_error(CMD, "say which profiler: --mem or --cpu (or --heap)");
  if ((status = check_profiler_options(a, a->profiler)) >= 0) return status;
  if (optind == argc) return usage_error(CMD, "no SCRIPT given");
  a->script = argv + optind;
  return -1;
}

/* The luajit in the directory of this very ljprof binary. */
static char *luajit_beside_me(void) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n < 0) return NULL;
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  if (!slash) return NULL;
  *slash = '\0';
  size_t size = strlen(self) + sizeof "/luajit";
  char *path = malloc(size);
  if (path) snprintf(path, size, "%s/luajit", self);
  return path;
}

/* What --pid asks of armed VMs, in LJPROF's keys: the profiler chosen
** (CPU when none is) with its options; a heap snapshot. */
static void demand_settings(const struct args *a, char *cpu, size_t cpusize,
                            char *mem, size_t memsize,
                            struct demand_request *req) {
  if (a->profiler == PROFILER_CPU ||
      (a->profiler == PROFILER_NONE && !a->heap)) {
    int n = 0;
    cpu[0] = '\0';
    if (a->mode != 'C')
      n += snprintf(cpu + n, cpusize - (size_t)n, "mode=%c,", a->mode);
    if (a->interval)
      n += snprintf(cpu + n, cpusize - (size_t)n, "interval=%s,", a->interval);
    if (a->wall) n += snprintf(cpu + n, cpusize - (size_t)n, "clock=wall,");
    if (a->no_jit_events) n += snprintf(cpu + n, cpusize - (size_t)n, "jit=0,");
    if (n) cpu[n - 1] = '\0';
    req->opts[DEMAND_CPU] = cpu;
  }
  if (a->profiler == PROFILER_MEM) {
    int n = 0;
    mem[0] = '\0';
    if (a->stacks) n += snprintf(mem + n, memsize - (size_t)n, "stacks=1,");
    if (a->native) n += snprintf(mem + n, memsize - (size_t)n, "native=1,");
    if (a->sample)
      n += snprintf(mem + n, memsize - (size_t)n, "sample=%llu,", a->sample);
    if (a->budget)
      n += snprintf(mem + n, memsize - (size_t)n, "stack_budget=%llu,",
                    a->budget);
    /* v5 marks the moment of a heap snapshot: the join's. */
    if (a->heap && !a->stacks && !a->native && !a->sample)
      n += snprintf(mem + n, memsize - (size_t)n, "format=v5,");
    if (n) mem[n - 1] = '\0';
    req->opts[DEMAND_MEM] = mem;
  }
  if (a->heap) req->opts[DEMAND_HEAP] = "";
}

/* The Lua chunk that starts the profiler. */
static void start_chunk(const struct args *a, char *buf, size_t size) {
  char sample[48] = ""; /* memprof takes no sample = 0 */
  char budget[48] = "";
  if (a->sample) snprintf(sample, sizeof sample, ", sample = %llu", a->sample);
  if (a->budget)
    snprintf(budget, sizeof budget, ", stack_budget = %llu", a->budget);
  if (a->profiler == PROFILER_MEM)
    snprintf(buf, size,
             "assert(misc.memprof.start({path = os.getenv(\"" STREAM_ENV "\")"
             "%s%s%s%s%s}))",
             a->stacks ? ", stacks = true" : "",
             a->native ? ", native = true" : "", sample, budget,
             /* v5 marks the moment of a heap snapshot: the join's. */
             a->heap && !a->stacks && !a->native && !a->sample
                 ? ", format = \"v5\""
                 : "");
  else
    snprintf(buf, size,
             "assert(misc.sysprof.start({mode=\"%c\", interval=%.17g, "
             "%s%spath=os.getenv(\"" STREAM_ENV "\")}))",
             a->mode, strtod(a->interval ? a->interval : "10", NULL),
             a->wall ? "clock=\"wall\", " : "",
             a->no_jit_events ? "jit=false, " : "");
}

/*
** Run luajit on the script in a child and wait for it. Returns the
** script's exit status (128 + the signal that killed it), or -1 if luajit
** could not be run (said on stderr).
*/
static int run_script(const char *luajit, const char *chunk,
                      const char *stream, const char *ljprof, char **script) {
  size_t nargs = 0;
  while (script[nargs]) nargs++;
  char **argv = calloc(nargs + 4, sizeof *argv);
  int report_pipe[2]; /* the child's exec errno; closed by a good exec */
  if (!argv || pipe(report_pipe) != 0) {
    fprintf(stderr, "ljprof " CMD ": %s\n", strerror(errno));
    free(argv);
    return -1;
  }
  argv[0] = (char *)luajit;
  argv[1] = "-e";
  argv[2] = (char *)chunk;
  memcpy(argv + 3, script, nargs * sizeof *argv);

  pid_t pid = fork();
  if (pid == 0) {
    close(report_pipe[0]);
    fcntl(report_pipe[1], F_SETFD, FD_CLOEXEC);
    setenv(STREAM_ENV, stream, 1);
    /* The profile is ours: none from the environment. */
    if (ljprof)
      setenv("LJPROF", ljprof, 1);
    else
      unsetenv("LJPROF");
    execvp(luajit, argv);
    int err = errno;
    ssize_t unused = write(report_pipe[1], &err, sizeof err);
    (void)unused;
    _exit(127);
  }
  free(argv);
  close(report_pipe[1]);
  if (pid < 0) {
    fprintf(stderr, "ljprof " CMD ": fork: %s\n", strerror(errno));
    close(report_pipe[0]);
    return -1;
  }
  /* Ctrl-C is for the script: ljprof stays to report what it recorded. */
  struct sigaction ignore = {.sa_handler = SIG_IGN}, old_int, old_quit;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(report_pipe[0], &exec_errno, sizeof exec_errno)) < 0 &&
         errno == EINTR)
    continue;
  close(report_pipe[0]);
  int wstatus;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) continue;
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGQUIT, &old_quit, NULL);
  if (got == sizeof exec_errno) {
    fprintf(stderr, "ljprof " CMD ": cannot run luajit '%s': %s\n", luajit,
            strerror(exec_errno));
    return -1;
  }
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return WEXITSTATUS(wstatus);
}

/* LJPROF's heap section for snapshots to path, into buf; 0 if the path
** cannot be said there (its separators; % is doubled). */
static int heap_setting(const struct args *a, const char *path, char *buf,
                        size_t size) {
  size_t n = (size_t)snprintf(buf, size, "heap:end=script,path=");
  for (; *path && n + 2 < size; path++) {
    if (*path == ',' || *path == ';') return 0;
    if (*path == '%') buf[n++] = '%';
    buf[n++] = *path;
  }
  if (*path) return 0;
  buf[n] = '\0';
  if (a->heap_every)
    snprintf(buf + n, size - n, ",every=%llu", a->heap_every);
  return strlen(buf) + 1 < size;
}

/* The snapshots an earlier run left, numbered or not: gone, so that none
** passes for this run's. Returns the last one this run wrote into last
** (the highest number, or the path itself); 0 if none. */
static int heap_files(const char *path, int remove, char *last, size_t size) {
  char name[PATH_MAX + 32];
  int found = 0;
  if (remove ? unlink(path) == 0 : access(path, F_OK) == 0) {
    snprintf(last, size, "%s", path);
    found = 1;
  }
  for (int i = 1;; i++) {
    snprintf(name, sizeof name, "%s.%d", path, i);
    if (remove ? unlink(name) != 0 : access(name, F_OK) != 0) break;
    snprintf(last, size, "%s", name);
    found = 1;
  }
  return found;
}

/* The report of the last snapshot, joined to the memory profile. */
static int heap_report(const struct args *a, const char *snap,
                       const char *stream) {
  char top[32], memprof[PATH_MAX + 16];
  char *argv[6];
  int argc = 0;
  argv[argc++] = "heap";
  snprintf(top, sizeof top, "--top=%zu", a->report.top ? a->report.top : 20);
  argv[argc++] = top;
  if (a->profiler == PROFILER_MEM) {
    snprintf(memprof, sizeof memprof, "--memprof=%s", stream);
    argv[argc++] = memprof;
  }
  argv[argc++] = (char *)snap;
  argv[argc] = NULL;
  printf("\n");
  fflush(stdout);
  return cmd_heap(argc, argv);
}

int cmd_record(int argc, char **argv) {
  struct args a = {.report = REPORT_OPTIONS_DEFAULT, .mode = 'C'};
  int status = parse_args(argc, argv, &a);
  if (status >= 0) return status;
  if (a.npids) {
    char cpu[128], mem[160];
    struct demand_request req = {.dir = a.stream};
    demand_settings(&a, cpu, sizeof cpu, mem, sizeof mem, &req);
    return record_pid(a.pids, a.npids, a.duration ? a.duration : 10, &req,
                      a.report_out, &a.report);
  }

  if (access(a.script[0], R_OK) != 0) {
    fprintf(stderr, "ljprof " CMD ": cannot read script '%s': %s\n",
            a.script[0], strerror(errno));
    return EXIT_USAGE;
  }
  char *beside = a.luajit ? NULL : luajit_beside_me();
  const char *luajit = a.luajit ? a.luajit : beside;
  if (!luajit) {
    fprintf(stderr, "ljprof " CMD ": cannot find the luajit beside ljprof "
                    "(give one with --luajit=PATH)\n");
    return EXIT_USAGE;
  }
  const char *stream = a.stream ? a.stream
                       : a.profiler == PROFILER_MEM ? "memprof.bin"
                       : a.profiler == PROFILER_CPU ? "sysprof.bin"
                                                    : "heap.bin";
  char snap[PATH_MAX], last[PATH_MAX + 32], ljprof[PATH_MAX + 64];
  if (a.heap) {
    snprintf(snap, sizeof snap, a.profiler ? "%s.heap" : "%s", stream);
    if (!heap_setting(&a, snap, ljprof, sizeof ljprof)) {
      free(beside);
      return usage_error(CMD, "the snapshot's path '%s' may not hold ',' "
                              "or ';'", snap);
    }
    heap_files(snap, 1, last, sizeof last);
  }
  /* A stream left by an earlier run must not pass for this one's. */
  if (unlink(stream) != 0 && errno != ENOENT) {
    fprintf(stderr, "ljprof " CMD ": %s: %s\n", stream, strerror(errno));
    free(beside);
    return EXIT_FAILED;
  }
  char chunk[256] = "";
  if (a.profiler) start_chunk(&a, chunk, sizeof chunk);
  int script_status = run_script(luajit, a.profiler ? chunk : "", stream,
                                 a.heap ? ljprof : NULL, a.script);
  free(beside);
  if (script_status < 0) return EXIT_USAGE;

  fflush(stdout);
  status = a.profiler ? report_file(stream, a.report_out, &a.report) : EXIT_OK;
  if (a.heap) {
    int text_here = !a.report_out && a.report.format == REPORT_TEXT;
    if (!heap_files(snap, 0, last, sizeof last)) {
      fprintf(stderr, "ljprof " CMD ": no heap snapshot was written (the "
                      "script was killed, or left by _exit()?)\n");
      status = EXIT_FAILED;
    } else if (!a.profiler || text_here) {
      int hs = heap_report(&a, last, stream);
      if (hs != EXIT_OK) status = hs;
    } else {
      int mem = a.profiler == PROFILER_MEM;
      fprintf(stderr, "ljprof " CMD ": heap snapshot %s: ljprof heap%s%s %s\n",
              last, mem ? " --memprof=" : "", mem ? stream : "", last);
    }
  }
  return script_status != 0 ? script_status : status;
}
