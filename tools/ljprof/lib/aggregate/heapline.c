/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "heapline.h"

#include <stdlib.h>
#include <string.h>

#include "shared/util.h"

void heapline_init(struct heapline *h) {
  memset(h, 0, sizeof *h);
  h->stride = 1;
}

void heapline_free(struct heapline *h) {
  free(h->live);
  free(h->points);
  memset(h, 0, sizeof *h);
}

static uint64_t *live_of(struct heapline *h, uint32_t loc) {
  if (loc >= h->nlive) {
    grow_array((void **)&h->live, &h->live_cap, (size_t)loc + 1,
               sizeof *h->live);
    memset(h->live + h->nlive, 0, ((size_t)loc + 1 - h->nlive) * sizeof *h->live);
    h->nlive = (size_t)loc + 1;
  }
  return &h->live[loc];
}

void heapline_add(struct heapline *h, uint32_t loc, uint64_t bytes) {
  uint64_t *live = live_of(h, loc);
  *live = add_sat(*live, bytes);
  h->total = add_sat(h->total, bytes);
  if (h->total > h->peak) {
    h->peak = h->total;
    h->peak_open = 1;
  }
}

/* Never below zero: what a site lets go it had (a damaged or hostile
** stream may say otherwise). */
void heapline_sub(struct heapline *h, uint32_t loc, uint64_t bytes) {
  uint64_t *live = live_of(h, loc);
  if (bytes > *live) bytes = *live;
  *live -= bytes;
  h->total -= bytes;
}

/* The state now, with the sites holding most, into p. */
static void snapshot(const struct heapline *h, uint64_t ns,
                     struct heapline_point *p) {
  p->ns = ns;
  p->events = h->events;
  p->total = h->total;
  p->nsites = 0;
  for (size_t loc = 0; loc < h->nlive; loc++) {
    uint64_t bytes = h->live[loc];
    if (!bytes ||
        (p->nsites == HEAPLINE_SITES && bytes <= p->sites[p->nsites - 1].bytes))
      continue;
    uint32_t i = p->nsites < HEAPLINE_SITES ? p->nsites++ : p->nsites - 1;
    for (; i > 0 && p->sites[i - 1].bytes < bytes; i--)
      p->sites[i] = p->sites[i - 1];
    p->sites[i] = (struct heapline_site){(uint32_t)loc, bytes};
  }
}

/* The points ran out: each pair becomes its larger heap. */
static void halve(struct heapline *h) {
  size_t n = 0;
  for (size_t i = 0; i < h->npoints; i += 2) {
    size_t keep = i;
    if (i + 1 < h->npoints && h->points[i + 1].total >= h->points[i].total)
      keep = i + 1;
    if (keep != n) h->points[n] = h->points[keep];
    n++;
  }
  h->npoints = n;
  h->stride *= 2;
}

void heapline_mark(struct heapline *h, uint64_t ns) {
  if (!h->points) h->points = xmalloc((HEAPLINE_POINTS + 1) * sizeof *h->points);
  /* No event since the last mark: the same heap, later. */
  if (h->nmarks && h->latest.events == h->events)
    h->latest.ns = ns;
  else
    snapshot(h, ns, &h->latest);
  h->nmarks++;
  if (h->peak_open) {
    h->peak_ns = ns;
    h->peak_open = 0;
  }
  if (h->npoints && h->in_last < h->stride) {
    /* The last point's window is open: it keeps the larger heap. */
    struct heapline_point *last = &h->points[h->npoints - 1];
    if (h->latest.total >= last->total) *last = h->latest;
    h->in_last++;
    return;
  }
  if (h->npoints == HEAPLINE_POINTS) halve(h);
  h->points[h->npoints++] = h->latest;
  h->in_last = 1;
}

void heapline_finish(struct heapline *h) {
  if (!h->nmarks) return;
  if (h->peak_open) h->peak_ns = h->latest.ns;
  if (h->points[h->npoints - 1].ns != h->latest.ns)
    h->points[h->npoints++] = h->latest;
}

uint64_t heapline_value(const struct heapline_point *p, uint32_t loc) {
  for (uint32_t i = 0; i < p->nsites; i++)
    if (p->sites[i].loc == loc) return p->sites[i].bytes;
  return 0;
}

size_t heapline_top(const struct heapline *h, uint32_t *locs) {
  struct heapline_site top[HEAPLINE_TOP];
  size_t n = 0;
  for (size_t i = 0; i < h->npoints; i++) {
    const struct heapline_point *p = &h->points[i];
    for (uint32_t s = 0; s < p->nsites; s++) {
      struct heapline_site site = p->sites[s];
      size_t j = 0;
      while (j < n && top[j].loc != site.loc) j++;
      if (j < n) { /* known: its peak may rise, and it move up */
        if (site.bytes <= top[j].bytes) continue;
      } else if (n < HEAPLINE_TOP) {
        j = n++;
      } else if (site.bytes > top[n - 1].bytes) {
        j = n - 1;
      } else {
        continue;
      }
      for (; j > 0 && top[j - 1].bytes < site.bytes; j--) top[j] = top[j - 1];
      top[j] = site;
    }
  }
  for (size_t i = 0; i < n; i++) locs[i] = top[i].loc;
  return n;
}
