/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "event_pipe.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "shared/util.h"

/*
** A chunk is some hundreds of microseconds of aggregation: handing one over
** costs little next to it, and the ring stays well inside the caches.
*/
#define CHUNK_EVENTS 4096 /* a multiple of MEMPROF_BATCH */
#define RING_CHUNKS 4

struct chunk {
  size_t count;
  size_t nlocs; /* its last batch's bound, so every batch's */
  struct memprof_event events[CHUNK_EVENTS];
};

struct event_pipe {
  struct memprof_sink to; /* the sink the second thread delivers to */
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t filled;  /* a chunk was sent, or the pipe closed */
  pthread_cond_t emptied; /* a chunk was delivered */
  /* Under lock: chunks sent and delivered so far (chunk k is in ring slot
  ** k % RING_CHUNKS), and whether the decoder is done. */
  uint64_t sent, delivered;
  int closed;
  struct chunk ring[RING_CHUNKS];
};

static struct chunk *filling(struct event_pipe *p) {
  return &p->ring[p->sent % RING_CHUNKS];
}

static void deliver_chunk(struct event_pipe *p, const struct chunk *c) {
  for (size_t i = 0; i < c->count; i += MEMPROF_BATCH) {
    size_t n = c->count - i < MEMPROF_BATCH ? c->count - i : MEMPROF_BATCH;
    p->to.events(p->to.ud, c->events + i, n, c->nlocs);
  }
}

/* The pipe's thread: deliver chunks as they come, until closed and empty. */
static void *deliver(void *arg) {
  struct event_pipe *p = arg;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (p->delivered == p->sent && !p->closed)
      pthread_cond_wait(&p->filled, &p->lock);
    if (p->delivered == p->sent) break;
    const struct chunk *c = &p->ring[p->delivered % RING_CHUNKS];
    pthread_mutex_unlock(&p->lock);
    deliver_chunk(p, c);
    pthread_mutex_lock(&p->lock);
    p->delivered++;
    pthread_cond_signal(&p->emptied);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

/* Hand the chunk being filled over; wait until the next one is free. */
static void send_chunk(struct event_pipe *p) {
  pthread_mutex_lock(&p->lock);
  p->sent++;
  pthread_cond_signal(&p->filled);
  while (p->sent - p->delivered == RING_CHUNKS)
    pthread_cond_wait(&p->emptied, &p->lock);
  pthread_mutex_unlock(&p->lock);
  filling(p)->count = 0;
}

/* The decoder writes its batches where they go in the chunk being filled. */
static struct memprof_event *next_batch(void *ud) {
  struct event_pipe *p = ud;
  if (filling(p)->count + MEMPROF_BATCH > CHUNK_EVENTS) send_chunk(p);
  return filling(p)->events + filling(p)->count;
}

/* A batch written where next_batch() said. */
static void take_events(void *ud, const struct memprof_event *evs, size_t n,
                        size_t nlocs) {
  struct event_pipe *p = ud;
  (void)evs;
  filling(p)->count += n;
  filling(p)->nlocs = nlocs;
}

static void free_pipe(struct event_pipe *p) {
  pthread_cond_destroy(&p->emptied);
  pthread_cond_destroy(&p->filled);
  pthread_mutex_destroy(&p->lock);
  free(p);
}

struct event_pipe *event_pipe_start(const struct memprof_sink *to) {
  struct event_pipe *p = xmalloc(sizeof *p);
  p->to = *to;
  p->sent = p->delivered = 0;
  p->closed = 0;
  filling(p)->count = 0;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->filled, NULL);
  pthread_cond_init(&p->emptied, NULL);
  if (pthread_create(&p->thread, NULL, deliver, p) == 0) return p;
  free_pipe(p);
  return NULL;
}

struct memprof_sink event_pipe_sink(struct event_pipe *p) {
  return (struct memprof_sink){take_events, p, next_batch};
}

void event_pipe_finish(struct event_pipe *p) {
  if (filling(p)->count > 0) send_chunk(p);
  pthread_mutex_lock(&p->lock);
  p->closed = 1;
  pthread_cond_signal(&p->filled);
  pthread_mutex_unlock(&p->lock);
  pthread_join(p->thread, NULL);
  free_pipe(p);
}
