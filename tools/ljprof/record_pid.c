/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** ljprof record --pid: profile running processes for a while.
**
** Processes armed by LJPROF=ondemand, and their descendants, are told
** what to profile through their VMs' control pages (record_demand.c).
** Else the one process must have been started with LJPROF naming signal=
** (see docs/ljprof.md): its profiles are armed, and each delivery of the
** signal starts or stops them. We read its LJPROF from /proc, check that
** the signal has a handler there (undelivered, its default action would
** kill the process), send it, wait until the new streams appear, wait the
** duration, send it again, wait until the process has closed the streams,
** then report them.
*/
#define _GNU_SOURCE /* CLOCK_REALTIME_COARSE, realpath, SIGURG */
#include "record_pid.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "proc.h"
#include "record_demand.h"

#define CMD "record"
#define SETTLE_SECONDS 10 /* for a toggle to reach the VM's safe point */
#define POLL_NS (20 * 1000 * 1000)

enum { PROF_CPU, PROF_MEM, NPROFS };
static const char *const prof_names[NPROFS] = {"cpu", "mem"};
static const char *const default_paths[NPROFS] = {"ljprof-cpu-%p.bin",
                                                  "ljprof-mem-%p.bin"};

/* What the process's LJPROF says of one profile. */
struct armed {
  int on;             /* the profile is in LJPROF */
  int armed;          /* with signal= */
  char path[PATH_MAX];
  char pattern[PATH_MAX]; /* glob(3) pattern of its streams */
  char stream[PATH_MAX];  /* the stream of our window */
};

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "ljprof " CMD ": ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return EXIT_FAILED;
}

/* The value of LJPROF in the environment the process started with. */
static char *proc_ljprof(pid_t pid) {
  size_t len;
  char *env = proc_read(pid, "environ", &len);
  if (!env) return NULL;
  char *value = NULL;
  for (char *v = env; v < env + len; v += strlen(v) + 1)
    if (!strncmp(v, "LJPROF=", 7)) {
      value = strdup(v + 7);
      break;
    }
  free(env);
  return value;
}

/* Whether the process has a handler for signo. */
static int proc_catches(pid_t pid, int signo) {
  char *status = proc_read(pid, "status", NULL);
  char *line = status ? strstr(status, "\nSigCgt:") : NULL;
  unsigned long long mask = line ? strtoull(line + 8, NULL, 16) : 0;
  free(status);
  return (int)(mask >> (signo - 1) & 1);
}

static int signal_number(const char *name) {
  static const struct { const char *name; int signo; } signals[] = {
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP},
      {"WINCH", SIGWINCH}, {"URG", SIGURG}};
  if (!strncmp(name, "SIG", 3)) name += 3;
  for (size_t i = 0; i < sizeof signals / sizeof *signals; i++)
    if (!strcmp(name, signals[i].name)) return signals[i].signo;
  return 0;
}

/* The profiles of an LJPROF value and the signal they share; the VM has
** checked the grammar already (a bad setting profiles nothing), so only
** what we need is read. Returns the signal, 0 if nothing is armed. */
static int parse_ljprof(char *value, struct armed prof[NPROFS]) {
  int signo = 0;
  for (int k = 0; k < NPROFS; k++) strcpy(prof[k].path, default_paths[k]);
  for (char *sec = strtok(value, ";"); sec; sec = strtok(NULL, ";")) {
    char *keys = strchr(sec, ':');
    if (keys) *keys++ = '\0';
    int k = !strcmp(sec, "cpu") ? PROF_CPU : !strcmp(sec, "mem") ? PROF_MEM : -1;
    if (k < 0) continue;
    prof[k].on = 1;
    for (char *kv = keys; kv && *kv;) {
      char *next = strchr(kv, ',');
      if (next) *next++ = '\0';
      if (!strncmp(kv, "signal=", 7)) {
        prof[k].armed = 1;
        signo = signal_number(kv + 7);
      } else if (!strncmp(kv, "path=", 5) && strlen(kv + 5) < PATH_MAX) {
        strcpy(prof[k].path, kv + 5);
      }
      kv = next;
    }
  }
  return signo;
}

/* The glob(3) pattern of a profile's streams: %p is the process, %t and
** %n any text; relative to the process's working directory; the window's
** number last. Literal glob characters are escaped. */
static int stream_pattern(pid_t pid, struct armed *a) {
  char *p = a->pattern, *end = a->pattern + sizeof a->pattern - 32;
  if (a->path[0] != '/') {
    char link[64];
    snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
    ssize_t n = readlink(link, p, (size_t)(end - p) - 1);
    if (n < 0) return 0;
    p += n;
    *p++ = '/';
  }
  for (const char *s = a->path; *s; s++) {
    if (p >= end) return 0;
    if (*s == '%' && (s[1] == 't' || s[1] == 'n')) {
      *p++ = '*';
      s++;
    } else if (*s == '%' && s[1] == 'p') {
      p += sprintf(p, "%d", (int)pid);
      s++;
    } else {
      if (*s == '%' && s[1] == '%') s++;
      if (strchr("*?[\\", *s)) *p++ = '\\';
      *p++ = *s;
    }
  }
  strcpy(p, ".*");
  return 1;
}

static int later(struct timespec a, struct timespec b) {
  return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec >= b.tv_nsec);
}

/* The newest stream of a written since `since` (a window's stream is
** created when it starts) into a->stream. */
static int new_stream(struct armed *a, struct timespec since) {
  glob_t g;
  int found = 0;
  if (glob(a->pattern, 0, NULL, &g) != 0) return 0;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    struct stat st;
    if (stat(g.gl_pathv[i], &st) != 0 || !later(st.st_mtim, since)) continue;
    since = st.st_mtim;
    snprintf(a->stream, sizeof a->stream, "%s", g.gl_pathv[i]);
    found = 1;
  }
  globfree(&g);
  return found;
}

/* A stream of a that the process holds open (a window runs), or NULL. */
static const char *open_stream(pid_t pid, struct armed *a) {
  glob_t g;
  const char *held = NULL;
  if (glob(a->pattern, 0, NULL, &g) != 0) return NULL;
  for (size_t i = 0; i < g.gl_pathc && !held; i++)
    if (proc_holds(pid, g.gl_pathv[i])) {
      snprintf(a->stream, sizeof a->stream, "%s", g.gl_pathv[i]);
      held = a->stream;
    }
  globfree(&g);
  return held;
}

static void nap(double seconds) {
  struct timespec ts = {(time_t)seconds,
                        (long)((seconds - (double)(time_t)seconds) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) continue;
}

/* Poll until every armed profile has a stream written since `since`
** (started), or until the process has closed each (stopped). */
static int wait_streams(pid_t pid, struct armed prof[NPROFS], int stopped,
                        struct timespec since) {
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int done = 1;
    for (int k = 0; k < NPROFS; k++) {
      if (!prof[k].armed) continue;
      if (stopped)
        done &= !proc_holds(pid, prof[k].stream);
      else
        done &= new_stream(&prof[k], since);
    }
    if (done) return 1;
    if (!proc_alive(pid)) return 0;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - t0.tv_sec >= SETTLE_SECONDS) return 0;
    nap(POLL_NS / 1e9);
  }
}

static int record_signal(pid_t pid, double seconds, int which,
                         const char *report_out,
                         const struct report_options *opt) {
  char *value = proc_ljprof(pid);
  if (!value)
    return fail("process %d is not armed: no VM there is armed for ljprof "
                "record (LJPROF=ondemand), and it has no LJPROF with "
                "signal= in its environment", (int)pid);
  struct armed prof[NPROFS] = {{0}};
  char *copy = strdup(value);
  int signo = copy ? parse_ljprof(copy, prof) : 0;
  free(copy);
  int narmed = 0;
  for (int k = 0; k < NPROFS; k++) {
    if (which && !(which & (1 << k))) prof[k].armed = 0;
    narmed += prof[k].armed;
  }
  if (signo == 0 || narmed == 0 || !proc_catches(pid, signo)) {
    fail("process %d is not armed: %s (LJPROF='%s')", (int)pid,
         signo == 0 || narmed == 0
             ? "no signal= for the profile asked"
             : "no VM there has armed the signal",
         value);
    free(value);
    return EXIT_FAILED;
  }
  free(value);
  if (report_out && narmed > 1)
    return usage_error(CMD, "--report-out takes one report: choose --cpu or "
                            "--mem");
  for (int k = 0; k < NPROFS; k++)
    if (prof[k].armed && !stream_pattern(pid, &prof[k]))
      return fail("%s path of process %d: too long", prof_names[k], (int)pid);

  /* A signal now would stop a window someone else opened. */
  for (int k = 0; k < NPROFS; k++) {
    const char *held = prof[k].armed ? open_stream(pid, &prof[k]) : NULL;
    if (held)
      return fail("process %d is being profiled already: %s is open (a "
                  "signal started it; another one stops it)", (int)pid, held);
  }
  struct timespec since; /* the clock of file times */
  clock_gettime(CLOCK_REALTIME_COARSE, &since);
  kill(pid, signo);
  if (!wait_streams(pid, prof, 0, since)) {
    if (!proc_alive(pid)) return fail("process %d ended", (int)pid);
    return fail("process %d started no profile within %d s: it must run Lua "
                "code that allocates", (int)pid, SETTLE_SECONDS);
  }
  nap(seconds);
  kill(pid, signo);
  if (!wait_streams(pid, prof, 1, since)) {
    if (!proc_alive(pid))
      return fail("process %d ended before its profile stopped", (int)pid);
    return fail("process %d did not stop its profile within %d s", (int)pid,
                SETTLE_SECONDS);
  }
  int status = EXIT_OK;
  for (int k = 0; k < NPROFS; k++) {
    if (!prof[k].armed) continue;
    fflush(stdout);
    int s = report_file(prof[k].stream, report_out, opt);
    if (s != EXIT_OK) status = s;
  }
  return status;
}

/* Options only on-demand recordings take (signal='s come from LJPROF). */
static int has_keys(const char *opts) { return opts && *opts; }

int record_pid(const pid_t *pids, int npids, double seconds,
               const struct demand_request *req, int which,
               const char *report_out, const struct report_options *opt) {
  for (int i = 0; i < npids; i++)
    if (kill(pids[i], 0) != 0)
      return errno == ESRCH ? fail("no process %d", (int)pids[i])
                            : fail("process %d is not ours: %s", (int)pids[i],
                                   strerror(errno));
  struct paths streams[DEMAND_KINDS] = {{0}};
  int status = record_demand(pids, npids, seconds, req, streams);
  if (status < 0) {
    if (npids == 1 && !req->dir && !req->opts[DEMAND_HEAP] &&
        !has_keys(req->opts[DEMAND_CPU]) && !has_keys(req->opts[DEMAND_MEM]))
      return record_signal(pids[0], seconds, which, report_out, opt);
    return fail("%s %d%s: no VM armed for ljprof record there: start %s "
                "with LJPROF=ondemand", npids > 1 ? "processes" : "process",
                (int)pids[0], npids > 1 ? ", ..." : "",
                npids > 1 ? "them" : "it");
  }
  for (int k = DEMAND_CPU; k <= DEMAND_MEM; k++) {
    if (!req->opts[k]) continue;
    /* Every process's streams of a kind: one profile, by process. */
    fflush(stdout);
    int s = streams[k].n
                ? report_files((const char *const *)streams[k].v,
                               streams[k].n, report_out, opt)
                : fail("no %s stream was written", k ? "memory" : "CPU");
    if (s != EXIT_OK) status = s;
  }
  for (int k = 0; k < DEMAND_KINDS; k++) paths_free(&streams[k]);
  return status;
}
