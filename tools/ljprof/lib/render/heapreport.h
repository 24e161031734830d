/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Reports of a heap snapshot: the live heap by type, the top retainers
** with their shortest paths, the heap by path pattern; joined to a
** memprof stream, where each retainer was allocated and what each
** allocation site (and stack) still holds, and where; text or JSON (with
** the whole graph on request, for other tools and tests).
*/
#ifndef LJPROF_HEAPREPORT_H
#define LJPROF_HEAPREPORT_H

#include <stdio.h>

#include "aggregate/heapgraph.h"
#include "aggregate/heapjoin.h"
#include "json_out.h"

enum heapreport_format {
  HEAP_TEXT,
  HEAP_JSON,
  HEAP_HTML,         /* the dominator tree as a flame graph (heaphtml.h) */
  HEAP_HEAPSNAPSHOT  /* Chrome DevTools' .heapsnapshot (heapchrome.h) */
};

struct heapreport_options {
  enum heapreport_format format;
  int graph;  /* JSON: every object and edge too */
  size_t top; /* entries per section */
};

struct heapreport_input {
  const char *source;
  const struct heapgraph *graph;
  const struct reader *reader; /* its error, if any, is reported */
  const char *memprof;         /* the stream joined, if any: its name */
  const struct heapjoin *join; /* and what it says; NULL: none */
};

/* 0, or -1 if writing failed. */
int heapreport_write(FILE *out, const struct heapreport_input *in,
                     const struct heapreport_options *opt);

/* A size in 14 columns: "  1.5 MiB", "    12 B  "; with sign ('+', '-';
** 0: none) before its number. */
void heapreport_put_bytes(FILE *out, uint64_t bytes, char sign);

#endif
