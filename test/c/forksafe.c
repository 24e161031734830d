/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** A host forks while a thread of ours walks the loaded objects, and its
** child must be whole: it loads a shared object, resolves a user, runs
** Lua, profiles and forks again, and exits in a bounded time. The race is
** made certain by a hook linked into this test only (the Makefile wraps
** dl_iterate_phdr): the first walk on another thread than the host's
** pauses inside its callback, the dynamic loader's lock held, until the
** host is about to fork. Without a gate that fork() waits for, the child
** is born with that lock held for good and hangs in dlopen().
**
** And a signal sent to the process while profiles run is taken by the
** host's thread, never by one of ours.
*/

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lua.h"
#include "lualib.h"
#include "lauxlib.h"
#include "tap.h"

/* How long a child may take to load, resolve, profile and fork, and how
** long the hook waits for the host, on a quick machine (tap_time_scale). */
#define CHILD_SECONDS	30
#define HOOK_SECONDS	10

static char dir[] = "/tmp/ljprof-forksafe-XXXXXX";

static void nap_ms(long ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
  nanosleep(&ts, NULL);
}

/* Run Lua code; 1 if it ran without error. */
static int run(lua_State *L, const char *code)
{
  return luaL_dostring(L, code) == 0;
}

#define BUSY	"local s = 0 for i = 1, 1e6 do s = s + i end"

/* -- The hook: a walk that pauses, the loader's lock held ---------------- */

int __real_dl_iterate_phdr(int (*f)(struct dl_phdr_info *, size_t, void *),
			   void *data);

static pid_t host_tid;
static atomic_int hook_armed, hook_paused, hook_forking;

typedef struct Paused {
  int (*f)(struct dl_phdr_info *, size_t, void *);
  void *data;
  int done;
} Paused;

/* Waits inside the walk until the host says it forks, and a while more:
** long enough for fork() to be under way, or to wait for the walk. */
static int hook_pause(struct dl_phdr_info *info, size_t size, void *data)
{
  Paused *p = (Paused *)data;
  if (!p->done) {
    double end = tap_now() + HOOK_SECONDS * tap_time_scale();
    p->done = 1;
    atomic_store(&hook_paused, 1);
    while (!atomic_load(&hook_forking) && tap_now() < end)
      nap_ms(1);
    nap_ms(300);
  }
  return p->f(info, size, p->data);
}

int __wrap_dl_iterate_phdr(int (*f)(struct dl_phdr_info *, size_t, void *),
			   void *data)
{
  if (syscall(SYS_gettid) != host_tid && atomic_exchange(&hook_armed, 0)) {
    Paused p = { f, data, 0 };
    return __real_dl_iterate_phdr(hook_pause, &p);
  }
  return __real_dl_iterate_phdr(f, data);
}

/* -- The child ----------------------------------------------------------- */

/* qemu-user aborts a forked child of a threaded process that starts a
** thread: there the child profiles nothing, and runs no Lua in the
** parent's VM (LJPROF's profiles follow it), and says so once. */
static int emulated;

/* What a worker of a server does after the fork; 0 if all of it worked. */
static int child_work(lua_State *L, int again)
{
  void *obj = dlopen(again ? "libutil.so.1" : "libanl.so.1", RTLD_NOW);
  char *p = malloc(1 << 20);
  lua_State *C;
  int ok = obj != NULL && getpwnam("root") != NULL && p != NULL;
  free(p);
  if (L != NULL && !emulated)  /* The parent's VM, and its profiles, go on. */
    ok &= run(L, "local t = {} for i = 1, 1e5 do t[i] = {} end");
  unsetenv("LJPROF");  /* Its own VM profiled by itself, not LJPROF. */
  C = luaL_newstate();
  luaL_openlibs(C);
  lua_pushfstring(C, "%s/child-%d.bin", dir, (int)getpid());
  lua_setglobal(C, "path");
  ok &= run(C, emulated ? BUSY :
		"assert(misc.sysprof.start{mode = 'C', interval = 1, "
		"path = path})\n" BUSY "\nassert(misc.sysprof.stop())");
  lua_close(C);
  if (again) {
    pid_t pid = fork();
    int st;
    if (pid == 0)
      _exit(child_work(NULL, 0));
    ok &= pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	  WEXITSTATUS(st) == 0;
  }
  return !ok;
}

/* The child's exit status, or -1 if it was still running at the deadline
** (then it is killed). */
static int child_wait(pid_t pid)
{
  double end = tap_now() + CHILD_SECONDS * tap_time_scale();
  int st;
  while (tap_now() < end) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    nap_ms(5);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  return -1;
}

/* Fork once a thread of ours pauses inside a walk; the child's status. */
static int fork_in_walk(lua_State *L)
{
  double end = tap_now() + HOOK_SECONDS * tap_time_scale();
  pid_t pid;
  atomic_store(&hook_paused, 0);
  atomic_store(&hook_forking, 0);
  atomic_store(&hook_armed, 1);
  while (!atomic_load(&hook_paused) && tap_now() < end)
    nap_ms(1);
  if (!tap_ok(atomic_load(&hook_paused), "a thread of ours walks the objects"))
    return -1;
  atomic_store(&hook_forking, 1);
  pid = fork();
  if (pid == 0)
    _exit(child_work(L, 1));
  return child_wait(pid);
}

/* -- VMs on threads of their own ----------------------------------------- */

typedef struct Worker {
  pthread_t thread;
  atomic_int stop;
} Worker;

static void *worker_run(void *arg)
{
  Worker *w = (Worker *)arg;
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  while (!atomic_load(&w->stop))
    run(L, "local t = {} for i = 1, 1e4 do t[i] = tostring(i) end");
  lua_close(L);
  return NULL;
}

static void workers(Worker *w, int n, int start)
{
  int i;
  for (i = 0; i < n; i++)
    if (start) {
      atomic_init(&w[i].stop, 0);
      pthread_create(&w[i].thread, NULL, worker_run, &w[i]);
    } else {
      atomic_store(&w[i].stop, 1);
      pthread_join(w[i].thread, NULL);
    }
}

/* -- Streams ------------------------------------------------------------- */

/* This process's streams in dir named `prefix-PID...`: how many, and how
** many of them end complete (their last byte is the epilogue's). */
static void streams(const char *prefix, int *n, int *complete)
{
  char cmd[512];
  FILE *ls;
  char path[512];
  *n = *complete = 0;
  snprintf(cmd, sizeof(cmd), "ls %s/%s-%d[.-]* 2>/dev/null", dir, prefix,
	   (int)getpid());
  if ((ls = popen(cmd, "r")) == NULL)
    return;
  while (fgets(path, sizeof(path), ls) != NULL) {
    int fd, c = 0;
    path[strcspn(path, "\n")] = '\0';
    if ((fd = open(path, O_RDONLY)) < 0)
      continue;
    (*n)++;
    if (lseek(fd, -1, SEEK_END) >= 0 && read(fd, &c, 1) == 1 && c == 0x80)
      (*complete)++;
    close(fd);
  }
  pclose(ls);
}

static void check_streams(const char *prefix, int want, const char *name)
{
  char msg[256];
  int n, complete;
  streams(prefix, &n, &complete);
  snprintf(msg, sizeof(msg), "%s: the parent's %d %s stream(s) complete",
	   name, want, prefix);
  if (!tap_ok(n == want && complete == n, msg))
    printf("#   %d streams, %d complete\n", n, complete);
}

/* -- Forks --------------------------------------------------------------- */

static void set_ljprof(const char *fmt)
{
  char v[512];
  snprintf(v, sizeof(v), fmt, dir, dir);
  setenv("LJPROF", v, 1);
}

/* The host's own VM profiled; a thread of ours (sysprof's drain thread)
** walks. */
static void fork_host_vm(const char *name, const char *ljprof,
			 const char *prefix)
{
  char msg[256];
  lua_State *L;
  int st;
  set_ljprof(ljprof);
  L = luaL_newstate();
  luaL_openlibs(L);
  run(L, BUSY);
  st = fork_in_walk(L);
  snprintf(msg, sizeof(msg), "%s: the child loads, resolves, runs Lua, "
	   "profiles and forks again", name);
  if (!tap_ok(st == 0, msg))
    printf("#   child: %s\n", st < 0 ? "hung (killed)" : "failed");
  run(L, BUSY);
  lua_close(L);
  check_streams(prefix, 1, name);
}

/* VMs on threads of their own; the first walk of any of them (or of
** their profilers' threads) pauses. */
static void fork_thread_vms(const char *name, const char *ljprof, int nvm,
			    const char *prefix, int nstreams)
{
  Worker w[2];
  char msg[256];
  int st;
  set_ljprof(ljprof);
  atomic_store(&hook_armed, 0);
  workers(w, nvm, 1);
  st = fork_in_walk(NULL);
  snprintf(msg, sizeof(msg), "%s: the child loads, resolves, profiles and "
	   "forks again", name);
  if (!tap_ok(st == 0, msg))
    printf("#   child: %s\n", st < 0 ? "hung (killed)" : "failed");
  workers(w, nvm, 0);
  check_streams(prefix, nstreams, name);
}

/* A stream to a FIFO nobody reads yet: its writer blocks. The host loads
** an object, which the drain thread then names in the stream, and forks:
** fork() must not wait for the writer, nor the child for the loader. */
typedef struct Fifo {
  int fd;
  size_t len;
  unsigned char last;
} Fifo;

static void *fifo_read(void *arg)
{
  Fifo *f = (Fifo *)arg;
  unsigned char buf[65536];
  ssize_t n;
  int flags = fcntl(f->fd, F_GETFL);
  fcntl(f->fd, F_SETFL, flags & ~O_NONBLOCK);
  while ((n = read(f->fd, buf, sizeof(buf))) > 0) {
    f->len += (size_t)n;
    f->last = buf[n-1];
  }
  return NULL;
}

static void fork_stuck_writer(void)
{
  char path[sizeof(dir) + 16], ljprof[sizeof(path) + 64], msg[128];
  Fifo f = { -1, 0, 0 };
  pthread_t reader;
  lua_State *L;
  double t;
  pid_t pid;
  int st;
  snprintf(path, sizeof(path), "%s/fifo", dir);
  mkfifo(path, 0600);
  f.fd = open(path, O_RDONLY | O_NONBLOCK);
  snprintf(ljprof, sizeof(ljprof), "cpu:mode=C,interval=1,path=%s", path);
  setenv("LJPROF", ljprof, 1);
  L = luaL_newstate();
  luaL_openlibs(L);
  run(L, BUSY);
  tap_ok(dlopen("libresolv.so.2", RTLD_NOW) != NULL,
	 "stuck writer: the host loads an object while its stream is stuck");
  nap_ms(300);  /* The drain thread's next rounds find it. */
  t = tap_now();
  pid = fork();
  if (pid == 0)
    _exit(child_work(L, 1));
  snprintf(msg, sizeof(msg), "stuck writer: fork() does not wait for the "
	   "writer (it took %.3f s)", tap_now() - t);
  tap_ok(tap_now() - t < HOOK_SECONDS * tap_time_scale(), msg);
  st = child_wait(pid);
  if (!tap_ok(st == 0, "stuck writer: the child loads, resolves, runs Lua, "
	      "profiles and forks again"))
    printf("#   child: %s\n", st < 0 ? "hung (killed)" : "failed");
  pthread_create(&reader, NULL, fifo_read, &f);
  lua_close(L);
  pthread_join(reader, NULL);
  close(f.fd);
  if (!tap_ok(f.len > 65536 && f.last == 0x80,
	      "stuck writer: the stream, read at last, is complete"))
    printf("#   %zu bytes, last 0x%02x\n", f.len, f.last);
}

/* -- Signals ------------------------------------------------------------- */

static atomic_long signal_tid;

static void on_signal(int sig)
{
  (void)sig;
  atomic_store(&signal_tid, syscall(SYS_gettid));
}

static void on_alarm(int sig)
{
  (void)sig;
}

/* Half a second while sig stays pending, as the host works on: a thread
** that does not block it takes it meanwhile. */
static void pending_a_while(int sig)
{
  double end = tap_now() + 0.5 * tap_time_scale();
  sigset_t set;
  while (tap_now() < end && sigpending(&set) == 0 && sigismember(&set, sig))
    nap_ms(1);
}

/* As nginx's master: the signal blocked while it works, taken only in
** sigsuspend(). Sent while it is blocked, it must wait for the host. */
static void signal_to_host(const char *name, const char *ljprof)
{
  struct sigaction sa;
  sigset_t block, none;
  char msg[256];
  lua_State *L;
  long tid;
  set_ljprof(ljprof);
  L = luaL_newstate();
  luaL_openlibs(L);
  run(L, BUSY);
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGHUP, &sa, NULL);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, NULL);
  sigemptyset(&block);
  sigaddset(&block, SIGHUP);
  sigaddset(&block, SIGALRM);
  sigprocmask(SIG_BLOCK, &block, NULL);
  atomic_store(&signal_tid, 0);
  kill(getpid(), SIGHUP);
  pending_a_while(SIGHUP);
  alarm((unsigned)(HOOK_SECONDS * tap_time_scale()));
  sigemptyset(&none);
  sigsuspend(&none);
  alarm(0);
  sigprocmask(SIG_UNBLOCK, &block, NULL);
  tid = atomic_load(&signal_tid);
  snprintf(msg, sizeof(msg), "%s: SIGHUP to the process is taken by the "
	   "host's thread in sigsuspend", name);
  if (!tap_ok(tid == host_tid, msg))
    printf("#   %s\n", tid == 0 ? "not taken" : "taken by a thread of ours");
  lua_close(L);
  signal(SIGHUP, SIG_DFL);
}

int main(void)
{
  char cmd[64 + sizeof(dir)];
  host_tid = (pid_t)syscall(SYS_gettid);
  if ((emulated = *(getenv("LJPROF_CROSS") ?: "") != '\0'))
    printf("# qemu-user: the children start no profile of their own\n");
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  setvbuf(stdout, NULL, _IONBF, 0);  /* Children inherit no buffer. */
  fork_host_vm("cpu, the drain thread",
	       "cpu:mode=C,interval=1,path=%s/cpu-%%p.bin", "cpu");
  fork_host_vm("cpu with heap armed",
	       "cpu:mode=C,interval=1,path=%s/armed-%%p.bin;"
	       "heap:signal=SIGURG,path=%s/armed-%%p.heap", "armed");
  fork_thread_vms("mem (stacks, native) on a VM thread",
		  "mem:stacks=1,native=1,path=%s/mem-%%p-%%n.bin", 1, "mem", 1);
  fork_thread_vms("two VMs, cpu and mem",
		  "cpu:mode=C,interval=1,path=%s/two-%%p-cpu-%%n.bin;"
		  "mem:path=%s/two-%%p-mem-%%n.bin", 2, "two", 4);
  fork_stuck_writer();
  signal_to_host("cpu", "cpu:mode=C,interval=1,path=%s/sig-%%p-cpu.bin");
  signal_to_host("mem", "mem:path=%s/sig-%%p-mem.bin");
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd) != 0)
    return 1;
  return tap_done();
}
