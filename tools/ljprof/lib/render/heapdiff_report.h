/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The report of what grew between two heap snapshots (aggregate/heapdiff.h):
** the rows that changed, by type, by path pattern and, joined to memprof,
** by allocation site; text or JSON.
*/
#ifndef LJPROF_HEAPDIFF_REPORT_H
#define LJPROF_HEAPDIFF_REPORT_H

#include <stdio.h>

#include "aggregate/heapdiff.h"
#include "heapreport.h"

struct heapdiff_input {
  const char *source[2]; /* OLD's, NEW's names */
  const struct reader *reader[2];
  const char *memprof; /* the stream joined, if any: its name */
};

/* Rows that changed, most grown (by bytes, then objects) first: text or
** JSON (opt->format), opt->top rows per section. 0, or -1 if writing
** failed. */
int heapdiff_write(FILE *out, const struct heapdiff *d,
                   const struct heapdiff_input *in,
                   const struct heapreport_options *opt);

#endif
