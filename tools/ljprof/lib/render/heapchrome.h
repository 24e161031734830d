/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Chrome DevTools' heap snapshot format (.heapsnapshot, as V8 writes
** it), for DevTools' Memory panel and memlab. Node 0 is a synthetic root
** (id 1) whose edges are the VM's roots; object n is node n + 1, its id
** 2n + 3 (odd, as V8's), its name heapgraph_name()'s. Edges keep the
** snapshot's order and names; weak ones are 'weak', so the dominators
** those tools compute are ours. Their readers hold numbers as unsigned
** 32-bit: a size above that is written as its largest value.
*/
#ifndef LJPROF_HEAPCHROME_H
#define LJPROF_HEAPCHROME_H

#include <stdio.h>

#include "aggregate/heapgraph.h"

/* 0, or -1 if writing failed. */
int heapchrome_write(FILE *out, const struct heapgraph *h);

#endif
