/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Naps of the profilers' own threads: a wait that ends at a deadline, or
** at once when the thread is told to quit.
*/

#ifndef _LJ_PROFNAP_H
#define _LJ_PROFNAP_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

typedef struct ProfNap {
  pthread_mutex_t lock;
  pthread_cond_t cond;		/* On CLOCK_MONOTONIC. */
  int quit;
} ProfNap;

static inline void lj_profnap_init(ProfNap *n)
{
  pthread_condattr_t ca;
  pthread_mutex_init(&n->lock, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&n->cond, &ca);
  pthread_condattr_destroy(&ca);
  n->quit = 0;
}

/* The deadline *at, on the nap's clock, moved ns later. */
static inline void lj_profnap_after(struct timespec *at, uint64_t ns)
{
  ns += (uint64_t)at->tv_nsec;
  at->tv_sec += (time_t)(ns / 1000000000u);
  at->tv_nsec = (long)(ns % 1000000000u);
}

/* Wait until *at; 0 when told to quit (then, or before). */
static inline int lj_profnap_until(ProfNap *n, const struct timespec *at)
{
  int quit;
  pthread_mutex_lock(&n->lock);
  while (!n->quit &&
	 pthread_cond_timedwait(&n->cond, &n->lock, at) != ETIMEDOUT) ;
  quit = n->quit;
  pthread_mutex_unlock(&n->lock);
  return !quit;
}

static inline void lj_profnap_quit(ProfNap *n)
{
  pthread_mutex_lock(&n->lock);
  n->quit = 1;
  pthread_cond_signal(&n->cond);
  pthread_mutex_unlock(&n->lock);
}

static inline void lj_profnap_free(ProfNap *n)
{
  pthread_cond_destroy(&n->cond);
  pthread_mutex_destroy(&n->lock);
}

#endif
