/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Where a merged profile's samples came from: one origin per stream (a
** process, or a window of one), named by its file and, when the stream
** says (ljp v3, ljm v5), by its process: pid and host name. An
** aggregation of one stream has one origin; the renderers show the
** origins only when there are several.
*/
#ifndef LJPROF_ORIGINS_H
#define LJPROF_ORIGINS_H

#include <stddef.h>
#include <stdint.h>

#include "shared/symbols.h"

struct origin {
  const char *name; /* the stream's file, as the user gave it */
  uint64_t value;   /* CPU: its samples; memory: bytes allocated */
  uint64_t inuse;   /* memory: bytes it still held at its end */
  struct stream_process process; /* known when the stream says */
};

struct origins {
  struct origin *items;
  size_t n;
};

/* Are there several to tell apart? */
static inline int origins_merged(const struct origins *o) {
  return o && o->n > 1;
}

/* Append `pid PID on HOST` (no host: `pid PID`); nothing for a stream
** that does not say. Returns whether it did. */
int origin_process(const struct origin *o, struct sbuf *sb);

/*
** A row of the tables by process: the streams of one process (the same
** pid on the same host: a worker's, or the windows of its rotate=), or a
** stream that does not say which, its figures summed.
*/
struct origin_group {
  size_t first, last; /* its first and last streams */
  size_t nstreams;
  uint64_t value, inuse;
};

/* The rows, in the order of their first streams (malloc'd, *count of
** them), and their sums in *total. */
struct origin_group *origins_by_process(const struct origins *o,
                                        size_t *count,
                                        struct origin_group *total);

/* Append a row's name: `FILE (pid PID on HOST)`, `FILE` for a stream that
** does not say, `pid PID on HOST (FIRST ... LAST, N streams)`. */
void origin_group_name(const struct origins *o, const struct origin_group *g,
                       struct sbuf *sb);

#endif
