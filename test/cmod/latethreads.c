/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** LD_PRELOAD'ed into a process: every thread it starts runs a second late,
** as on a machine too busy to schedule it. Then a recorder's command may
** reach a VM's control page before its watcher thread has first looked.
*/

#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

typedef struct Late {
  void *(*start)(void *);
  void *arg;
} Late;

static void *late_start(void *p)
{
  Late late = *(Late *)p;
  struct timespec second = { 1, 0 };
  free(p);
  nanosleep(&second, NULL);
  return late.start(late.arg);
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr,
		   void *(*start)(void *), void *arg)
{
  static int (*real)(pthread_t *, const pthread_attr_t *,
		     void *(*)(void *), void *);
  Late *late = malloc(sizeof(*late));
  if (real == NULL)
    *(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
  if (late == NULL)
    return real(t, attr, start, arg);
  late->start = start;
  late->arg = arg;
  return real(t, attr, late_start, late);
}
