/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Heap over time: the bytes live, in all and by site, at the time marks of
** a memprof stream (v5), as it streams. Memory stays bounded whatever the
** run's length or number of sites: at most HEAPLINE_POINTS points, each
** with the HEAPLINE_SITES sites that held most at that moment. When the
** points run out, neighbours are merged (the larger heap kept) and each
** point then stands for twice as many marks.
**
** Live bytes are owned as in memagg (a block belongs to the site that
** allocated it, through reallocations); blocks from before the profile
** started count from their reallocation on, their frees not at all.
*/
#ifndef LJPROF_HEAPLINE_H
#define LJPROF_HEAPLINE_H

#include <stddef.h>
#include <stdint.h>

#define HEAPLINE_POINTS 1000
#define HEAPLINE_SITES 32
/* The sites a chart draws; the rest is "other". */
#define HEAPLINE_TOP 5

struct heapline_site {
  uint32_t loc;
  uint64_t bytes;
};

struct heapline_point {
  uint64_t ns;     /* since the profile started */
  uint64_t events; /* before the mark */
  uint64_t total;  /* bytes live */
  uint32_t nsites;
  struct heapline_site sites[HEAPLINE_SITES]; /* most bytes first */
};

struct heapline {
  uint64_t *live; /* by location id: bytes live now */
  size_t nlive, live_cap;
  uint64_t total, events;
  uint64_t peak, peak_ns; /* the largest total at any event, and when
                             (the time of the next mark) */
  int peak_open;          /* a peak waits for its mark's time */
  struct heapline_point *points; /* HEAPLINE_POINTS + 1: the last mark */
  size_t npoints;
  uint64_t stride;  /* marks a point stands for */
  uint64_t in_last; /* marks the last point stands for so far */
  struct heapline_point latest;
  uint64_t nmarks;
};

void heapline_init(struct heapline *h);
void heapline_free(struct heapline *h);

/* An event moved bytes of site loc into the heap (bytes > 0) or out. */
void heapline_add(struct heapline *h, uint32_t loc, uint64_t bytes);
void heapline_sub(struct heapline *h, uint32_t loc, uint64_t bytes);
static inline void heapline_event(struct heapline *h) { h->events++; }

/* A time mark: the state now becomes a point. */
void heapline_mark(struct heapline *h, uint64_t ns);

/* After the last event: the latest mark is the last point. */
void heapline_finish(struct heapline *h);

/* The sites a chart draws: those with the highest peak among the points,
** at most HEAPLINE_TOP, into locs; returns how many. */
size_t heapline_top(const struct heapline *h, uint32_t *locs);

/* What site loc held at point p: 0 when it was not among the largest. */
uint64_t heapline_value(const struct heapline_point *p, uint32_t loc);

#endif
