/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** ljprof record --pid on processes armed by LJPROF=ondemand: every VM of
** the processes given and of their descendants (a server's workers) is
** told through its control page (control.c) what to start, where; the
** window lasts the duration or until Ctrl-C; processes that appear
** meanwhile (a reload's workers, a crashed one respawned) join at once.
** No signal is sent: the host keeps every one of its own.
**
** The streams go to a directory of the recording's, where each process
** writes as its own user: a subdirectory for a user other than ours
** (root recording nginx's workers, which run as nobody), its own.
*/
#define _GNU_SOURCE
#include "record_demand.h"

#include <dirent.h>
#include <errno.h>
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
#include "control.h"
#include "proc.h"

#define CMD "record"
#define SETTLE_SECONDS 10 /* for a stop to reach the VM's safe point */
#define POLL_SECONDS 0.05
#define MAX_VMS 8         /* per process, as the profilers take */

enum { PENDING, RUNNING, REFUSED, STOPPED };

struct target {
  struct control ctl;
  pid_t pid;
  int vmno, state;
  char name[64]; /* what the process calls itself (nginx: worker process) */
};

struct recording {
  const struct demand_request *req;
  char dir[PATH_MAX];
  struct target *targets;
  int n, cap;
  struct paths streams[DEMAND_KINDS]; /* cpu, mem, heap */
  int failed;
  char why[PATH_MAX + 64]; /* why no directory for a user's streams */
};

static const char *const kinds[DEMAND_KINDS] = {"cpu", "mem", "heap"};

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig) {
  (void)sig;
  interrupted = 1;
}

static void say(const struct target *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const struct target *t, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "ljprof " CMD ": pid %d", (int)t->pid);
  if (t->name[0]) fprintf(stderr, " (%s)", t->name);
  if (t->vmno > 1) fprintf(stderr, " VM %d", t->vmno);
  fputs(": ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

/* -- Where the streams go ------------------------------------------------- */

/* Whether uid (of group gid) may enter every directory above dir. */
static int reachable(const char *dir, uid_t uid, gid_t gid, char *denied,
                     size_t size) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", dir);
  for (char *slash = strrchr(path, '/'); slash; slash = strrchr(path, '/')) {
    struct stat st;
    *slash = '\0';
    const char *up = slash == path ? "/" : path;
    if (stat(up, &st) != 0) return 1; /* the mkdir below says why */
    mode_t x = st.st_uid == uid ? S_IXUSR : st.st_gid == gid ? S_IXGRP
                                                            : S_IXOTH;
    if (!(st.st_mode & x)) {
      snprintf(denied, size, "%s", up);
      return 0;
    }
    if (slash == path) break;
  }
  return 1;
}

/* The directory where uid's processes write: ours, or a subdirectory of
** theirs (only root records another user's processes). */
static int user_dir(struct recording *r, uid_t uid, gid_t gid, char *out,
                    size_t size) {
  char denied[PATH_MAX];
  if (uid == geteuid()) return snprintf(out, size, "%s", r->dir) < (int)size;
  if (!reachable(r->dir, uid, gid, denied, sizeof denied)) {
    snprintf(r->why, sizeof r->why, "user %ld may not enter %s", (long)uid,
             denied);
    return 0;
  }
  if ((size_t)snprintf(out, size, "%s/uid-%ld", r->dir, (long)uid) >= size ||
      (mkdir(out, 0700) != 0 && errno != EEXIST) ||
      /* Theirs, so that they may write there; ours may be entered only. */
      chown(out, uid, gid) != 0 || chmod(r->dir, 0711) != 0) {
    snprintf(r->why, sizeof r->why, "%s: %s", out, strerror(errno));
    return 0;
  }
  return 1;
}

/* START's settings for a process of uid: LJPROF's syntax. */
static int start_settings(struct recording *r, const struct proc_info *p,
                          char *out, size_t size) {
  char dir[PATH_MAX];
  const struct demand_request *q = r->req;
  if (!user_dir(r, p->uid, p->gid, dir, sizeof dir)) return 0;
  size_t n = 0;
  out[0] = '\0';
  for (int k = 0; k < DEMAND_KINDS; k++) {
    if (!q->opts[k] || (k == DEMAND_HEAP && q->opts[DEMAND_CPU]) ||
        (k == DEMAND_HEAP && q->opts[DEMAND_MEM]))
      continue; /* a window's snapshot is taken at its end */
    n += (size_t)snprintf(out + n, n < size ? size - n : 0,
                          "%s%s:%s%spath=%s/%s-%%p-%%n.bin", n ? ";" : "",
                          kinds[k], q->opts[k], *q->opts[k] ? "," : "", dir,
                          kinds[k]);
  }
  return n < size;
}

/* STOP's: the snapshot at the end of a window, if asked for. */
static int stop_settings(struct recording *r, const struct proc_info *p,
                         char *out, size_t size) {
  char dir[PATH_MAX];
  const struct demand_request *q = r->req;
  out[0] = '\0';
  if (!q->opts[DEMAND_HEAP] || (!q->opts[DEMAND_CPU] && !q->opts[DEMAND_MEM]))
    return 1;
  if (!user_dir(r, p->uid, p->gid, dir, sizeof dir)) return 0;
  return (size_t)snprintf(out, size, "heap:%s%spath=%s/heap-%%p-%%n.bin",
                          q->opts[DEMAND_HEAP],
                          *q->opts[DEMAND_HEAP] ? "," : "", dir) < size;
}

/* -- Targets -------------------------------------------------------------- */

static struct target *target_of(struct recording *r, pid_t pid, int vmno) {
  for (int i = 0; i < r->n; i++)
    if (r->targets[i].pid == pid && r->targets[i].vmno == vmno)
      return &r->targets[i];
  return NULL;
}

static struct target *target_add(struct recording *r, pid_t pid, int vmno) {
  if (r->n == r->cap) {
    int cap = r->cap ? 2 * r->cap : 16;
    struct target *more = realloc(r->targets, (size_t)cap * sizeof *more);
    if (!more) return NULL;
    r->targets = more;
    r->cap = cap;
  }
  struct target *t = &r->targets[r->n++];
  memset(t, 0, sizeof *t);
  t->pid = pid;
  t->vmno = vmno;
  proc_name(pid, t->name, sizeof t->name);
  return t;
}

/* Every armed VM of the processes not met yet: held and started. */
static void join_new(struct recording *r, const pid_t *roots, int nroots) {
  struct proc_info *procs;
  int n = proc_tree(roots, nroots, &procs);
  for (int i = 0; i < n; i++) {
    int vmnos[MAX_VMS];
    int nvms = control_find(procs[i].pid, vmnos, MAX_VMS);
    for (int v = 0; v < nvms; v++) {
      if (target_of(r, procs[i].pid, vmnos[v])) continue;
      struct target *t = target_add(r, procs[i].pid, vmnos[v]);
      char why[256], arg[LJP_CTL_ARGLEN];
      if (!t) continue;
      t->state = REFUSED;
      int held = control_hold(&t->ctl, t->pid, t->vmno, why, sizeof why);
      if (held == CONTROL_NOT_READY) {
        r->n--; /* met again at the next scan */
      } else if (held != 0) {
        say(t, "not recorded: %s", why);
        r->failed = 1;
      } else if (!start_settings(r, &procs[i], arg, sizeof arg)) {
        say(t, "not recorded: no directory for its user's streams: %s",
            r->why);
        control_release(&t->ctl);
        r->failed = 1;
      } else {
        control_send(&t->ctl, LJP_CTL_START, arg);
        t->state = PENDING;
      }
    }
  }
  free(procs);
}

/* The lines of an answer: streams kept by kind, messages said. */
static void take_reply(struct recording *r, struct target *t) {
  char *reply = strdup(control_reply(&t->ctl));
  for (char *line = reply ? strtok(reply, "\n") : NULL; line;
       line = strtok(NULL, "\n")) {
    char *rest = strchr(line, ' ');
    if (!rest) continue;
    *rest++ = '\0';
    int k;
    for (k = 0; k < DEMAND_KINDS && strcmp(line, kinds[k]); k++) continue;
    if (k == DEMAND_HEAP) {
      char *ns = strrchr(rest, ' ');
      if (ns) *ns++ = '\0';
      say(t, "heap snapshot %s, a pause of %.1f ms", rest,
          ns ? atof(ns) / 1e6 : 0.0);
    }
    /* The page is the process's to write: root reads no file it names
    ** outside the recording's directory. */
    size_t in = strlen(r->dir);
    if (k < DEMAND_KINDS && (strncmp(rest, r->dir, in) || rest[in] != '/'))
      say(t, "named a stream outside %s: %s (ignored)", r->dir, rest);
    else if (k < DEMAND_KINDS)
      paths_add(&r->streams[k], rest, t->pid);
    else if (!strcmp(line, "say")) {
      char own[32]; /* a forked child's messages name it: we do already */
      int n = snprintf(own, sizeof own, "pid %d: ", (int)t->pid);
      say(t, "%s", strncmp(rest, own, (size_t)n) ? rest : rest + n);
    }
  }
  free(reply);
}

/* Answers to START that came. */
static void take_starts(struct recording *r) {
  for (int i = 0; i < r->n; i++) {
    struct target *t = &r->targets[i];
    int status;
    if (t->state != PENDING || !control_answered(&t->ctl, &status)) continue;
    take_reply(r, t);
    t->state = status == LJP_CTL_OK ? RUNNING : REFUSED;
    if (status != LJP_CTL_OK) r->failed = 1;
  }
}

static void nap(double seconds) {
  struct timespec ts = {(time_t)seconds,
                        (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&ts, NULL); /* Ctrl-C cuts it short */
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Stop every VM; wait for those that started (or end) to answer. A VM
** that never answered its start reached no safe point (its next GC step:
** it ran no Lua that allocates): its start is cancelled by the stop,
** which it takes, if ever, as nothing to do. */
static void stop_all(struct recording *r) {
  for (int i = 0; i < r->n; i++) {
    struct target *t = &r->targets[i];
    char arg[LJP_CTL_ARGLEN] = "";
    struct proc_info p;
    if (t->state != PENDING && t->state != RUNNING) continue;
    if (t->state == RUNNING &&
        (!proc_info(t->pid, &p) || !stop_settings(r, &p, arg, sizeof arg)))
      arg[0] = '\0';
    control_send(&t->ctl, LJP_CTL_STOP, arg);
  }
  double deadline = now() + SETTLE_SECONDS;
  for (int waiting = 1; waiting && now() < deadline;) {
    waiting = 0;
    for (int i = 0; i < r->n; i++) {
      struct target *t = &r->targets[i];
      int status;
      if (t->state != RUNNING) continue;
      if (control_answered(&t->ctl, &status)) {
        take_reply(r, t);
        t->state = STOPPED;
      } else if (!proc_alive(t->pid)) {
        t->state = STOPPED; /* its exit completed the streams */
      } else {
        waiting = 1;
      }
    }
    if (waiting) nap(POLL_SECONDS);
  }
  for (int i = 0; i < r->n; i++) {
    struct target *t = &r->targets[i];
    if (t->state == PENDING && !proc_alive(t->pid))
      say(t, "ended before it reached a safe point: nothing profiled there");
    else if (t->state == PENDING)
      say(t, "reached no safe point during the recording (it ran no Lua "
             "that allocates): nothing profiled there");
    else if (t->state == RUNNING)
      say(t, "did not stop within %d s: its streams may be incomplete",
          SETTLE_SECONDS);
    control_release(&t->ctl);
  }
}

/* Streams are complete once closed by their writers. */
static void wait_closed(struct recording *r) {
  double deadline = now() + SETTLE_SECONDS;
  for (int k = 0; k < DEMAND_KINDS; k++)
    for (size_t i = 0; i < r->streams[k].n; i++)
      while (proc_holds(r->streams[k].pid[i], r->streams[k].v[i]) &&
             now() < deadline)
        nap(POLL_SECONDS);
}

void paths_add(struct paths *p, const char *path, pid_t pid) {
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 8;
    char **v = realloc(p->v, cap * sizeof *v);
    if (v) p->v = v;
    pid_t *pids = v ? realloc(p->pid, cap * sizeof *pids) : NULL;
    if (!pids) return;
    p->pid = pids;
    p->cap = cap;
  }
  if ((p->v[p->n] = strdup(path))) p->pid[p->n++] = pid;
}

void paths_free(struct paths *p) {
  for (size_t i = 0; i < p->n; i++) free(p->v[i]);
  free(p->v);
  free(p->pid);
  memset(p, 0, sizeof *p);
}

/* Processes of the tree with no armed VM: a master's helpers that run no
** Lua (nginx's cache manager), a child that ran another program. */
static void name_unarmed(struct recording *r, const pid_t *roots,
                         int nroots) {
  struct proc_info *procs;
  int n = proc_tree(roots, nroots, &procs);
  for (int i = 0; i < n; i++) {
    int armed = 0;
    for (int j = 0; j < r->n && !armed; j++)
      armed = r->targets[j].pid == procs[i].pid;
    if (armed) continue;
    struct target t = {.pid = procs[i].pid};
    proc_name(t.pid, t.name, sizeof t.name);
    say(&t, "nothing to profile there: no VM armed for ljprof record (no "
            "LJPROF=ondemand, or no Lua run since it started)");
  }
  free(procs);
}

static int make_dir(struct recording *r, const char *dir) {
  if (dir) {
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) return 0;
    if (!realpath(dir, r->dir)) return 0;
  } else {
    snprintf(r->dir, sizeof r->dir, "/tmp/ljprof-record-XXXXXX");
    if (!mkdtemp(r->dir)) return 0;
  }
  return !strpbrk(r->dir, ",;%") || (errno = EINVAL, 0);
}

int record_demand(const pid_t *pids, int npids, double seconds,
                  const struct demand_request *req,
                  struct paths out[DEMAND_KINDS]) {
  struct recording r = {.req = req};
  if (!make_dir(&r, req->dir)) {
    fprintf(stderr, "ljprof " CMD ": cannot make the streams' directory "
                    "%s: %s%s\n", req->dir ? req->dir : r.dir,
            strerror(errno), errno == EINVAL ? " (',', ';' or '%' in it)" : "");
    return EXIT_FAILED;
  }
  struct sigaction sa = {.sa_handler = on_interrupt}, oldint, oldterm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &oldint);
  sigaction(SIGTERM, &sa, &oldterm);

  /* The window opens when the first VM starts its profiles (a VM busy, or
  ** a slow machine, takes a while to reach its safe point), waited for as
  ** long as a stop is; the VMs that start later join it. */
  int window = req->opts[DEMAND_CPU] || req->opts[DEMAND_MEM];
  double t0 = now(), end = t0 + (window ? seconds : SETTLE_SECONDS);
  int opened = !window;
  join_new(&r, pids, npids);
  while (!interrupted &&
         (now() < end || (!opened && now() < t0 + SETTLE_SECONDS))) {
    take_starts(&r);
    int pending = 0, running = 0;
    for (int i = 0; i < r.n; i++) {
      pending += r.targets[i].state == PENDING;
      running += r.targets[i].state == RUNNING;
    }
    if (!opened && running) {
      opened = 1;
      end = now() + seconds;
    }
    if (!window && r.n && !pending) break; /* snapshots only: all taken */
    nap(POLL_SECONDS);
    join_new(&r, pids, npids);
  }
  if (interrupted)
    fprintf(stderr, "ljprof " CMD ": interrupted: stopping the profiles\n");
  take_starts(&r);
  stop_all(&r);
  wait_closed(&r);
  if (r.n) name_unarmed(&r, pids, npids);
  sigaction(SIGINT, &oldint, NULL);
  sigaction(SIGTERM, &oldterm, NULL);
  int status = r.failed ? EXIT_FAILED : EXIT_OK;
  if (r.n == 0) status = -1; /* nothing armed there */
  else fprintf(stderr, "ljprof " CMD ": streams in %s\n", r.dir);
  for (int k = 0; k < DEMAND_KINDS; k++) out[k] = r.streams[k];
  free(r.targets);
  return status;
}
