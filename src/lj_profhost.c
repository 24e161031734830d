/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** A guest in the host's process: signals, fork() and who the process is.
**
** The host owns its signals: nginx's master sleeps in sigsuspend() with
** HUP, QUIT and CHLD blocked everywhere else, so a thread of ours that
** took one would run the host's handler where nobody waits for it. Every
** thread of ours blocks them all.
**
** A forked child has only the thread that forked; a lock another thread
** held then stays held there for good. Of the locks our threads take,
** malloc's are taken by fork() itself, our own are set anew by each
** module's child handler, and our threads use no stdio. The dynamic
** loader's lock is the one left: dl_iterate_phdr() holds it while its
** callback runs, and a child that loads an object or resolves a user
** (NSS) needs it. So every walk of the loaded objects passes a gate that
** the host's fork() takes in its prepare handler. The callbacks only read
** memory and allocate: the gate is never held while a stream is written,
** and a fork waits at most for one walk (docs/internals.md lists them).
*/

#define _GNU_SOURCE
#define lj_profhost_c

#include <link.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lj_profhost.h"
#include "lj_wbuf.h"

int lj_profhost_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
  sigset_t all, old;
  int err;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  err = pthread_create(t, NULL, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return err;
}

/* -- The loader's gate --------------------------------------------------- */

/* Error-checking: a fork from a signal handler that interrupted a walk on
** the same thread finds the gate its own, and does not wait for itself. */
static pthread_mutex_t host_gate = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static __thread int host_forking;	/* This thread's fork took the gate. */

static void host_prepare(void)
{
  host_forking = pthread_mutex_lock(&host_gate) == 0;
}

static void host_parent(void)
{
  if (host_forking) {
    host_forking = 0;
    pthread_mutex_unlock(&host_gate);
  }
}

/* The child's thread has another id than the owner the gate records. */
static void host_child(void)
{
  pthread_mutexattr_t a;
  host_forking = 0;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutex_init(&host_gate, &a);
  pthread_mutexattr_destroy(&a);
}

static void host_atfork(void)
{
  pthread_atfork(host_prepare, host_parent, host_child);
}

int lj_profhost_objects(int (*f)(struct dl_phdr_info *, size_t, void *),
			void *data)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  int r, locked;
  pthread_once(&once, host_atfork);
  locked = pthread_mutex_lock(&host_gate) == 0;
  r = dl_iterate_phdr(f, data);
  if (locked)
    pthread_mutex_unlock(&host_gate);
  return r;
}

/* -- The process --------------------------------------------------------- */

void lj_profhost_process(struct lj_wbuf *out)
{
  char host[256];
  struct timespec now;
  if (gethostname(host, sizeof(host)) != 0)
    host[0] = '\0';
  host[sizeof(host)-1] = '\0';
  clock_gettime(CLOCK_REALTIME, &now);
  lj_wbuf_adduleb(out, (uint64_t)getpid());
  lj_wbuf_addstring(out, host, strlen(host));
  lj_wbuf_adduleb(out, (uint64_t)now.tv_sec*1000000000u + (uint64_t)now.tv_nsec);
}
