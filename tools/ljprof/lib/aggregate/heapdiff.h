/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** What grew between two heap snapshots of one program: objects and their
** own bytes by type and by path pattern (`_G.sessions[*].history[*]`),
** matched by the pattern's text. The report is by aggregate, since
** object ids mean nothing across snapshots and the GC frees and reuses
** addresses; addresses only count, for each row, the objects of NEW at
** an address where OLD had no object of their type ("fresh": surely
** allocated in between; an address reused by the same type hides one).
** Joined to memprof (each snapshot at its own mark), by allocation site
** too: the site and its stack's top frames, matched by their text.
*/
#ifndef LJPROF_HEAPDIFF_H
#define LJPROF_HEAPDIFF_H

#include "heapgraph.h"
#include "heapjoin.h"
#include "shared/symbols.h"

struct heapdiff_row {
  struct heap_tally old, new;
  uint64_t fresh;
};

/* Rows by name, the name interned in names: a row's index is its
** name's string id. */
struct heapdiff_rows {
  struct symbols names;
  struct heapdiff_row *row;
  size_t n, cap;
};

struct heapdiff {
  struct heapdiff_row types[LJH_OBJ_MASK + 1];
  /* By path pattern; the objects only weakly reachable are one row
     more, named so. */
  struct heapdiff_rows patterns;
  /* By allocation (joined only): the strongly reachable objects; those
     made before the stream began (or not sampled) are one row more. */
  struct heapdiff_rows sites;
  int joined;
  struct heapdiff_row total;
};

/* join[0], join[1]: OLD's and NEW's joins to memprof, or both NULL. */
void heapdiff_build(struct heapdiff *d, const struct heapgraph *old,
                    const struct heapgraph *new,
                    const struct heapjoin *const join[2]);

/*
** The same, snapshot by snapshot: the snapshots of several processes
** (a server's workers) on each side, each pair the same process's OLD
** and NEW. heapdiff_add() adds a pair's tallies (and its joins', when
** joined); either side may be NULL (a side with more snapshots), and only
** a pair counts fresh objects: addresses mean nothing across processes.
*/
void heapdiff_init(struct heapdiff *d, int joined);
void heapdiff_add(struct heapdiff *d, const struct heapgraph *old,
                  const struct heapgraph *new,
                  const struct heapjoin *const join[2]);
void heapdiff_free(struct heapdiff *d);

#endif
