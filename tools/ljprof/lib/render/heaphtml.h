/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The dominator tree as report_html()'s flame graph: a frame per object
** that retains enough to be seen, as wide as what it retains, above the
** object that dominates it; named by its shortest path from a root and
** its type and address, so that a frame pointed at or zoomed into says
** how it is held. At most HEAPHTML_FRAMES objects, those that retain the
** most, down to HEAPHTML_DEPTH levels: the others count in the frame
** above them (as its self), those the roots hold in a frame of their own.
*/
#ifndef LJPROF_HEAPHTML_H
#define LJPROF_HEAPHTML_H

#include <stdio.h>

#include "aggregate/heapgraph.h"

#define HEAPHTML_FRAMES 2000
#define HEAPHTML_DEPTH 64

/* 0, or -1 if writing failed. */
int heaphtml_write(FILE *out, const char *source, const struct heapgraph *h,
                   const struct reader *r);

#endif
