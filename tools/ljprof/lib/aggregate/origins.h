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

/* Append `FILE (pid PID on HOST)`, or `FILE` for a stream that does not
** say. */
void origin_name(const struct origin *o, struct sbuf *sb);

#endif
