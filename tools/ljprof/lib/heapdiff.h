/*
** What grew between two heap snapshots of one program: objects and their
** own bytes by type and by path pattern (`_G.sessions[*].history[*]`),
** matched by the pattern's text. The report is by aggregate, since
** object ids mean nothing across snapshots and the GC frees and reuses
** addresses; addresses only count, for each row, the objects of NEW at
** an address where OLD had no object of their type ("fresh": surely
** allocated in between; an address reused by the same type hides one).
*/
#ifndef LJPROF_HEAPDIFF_H
#define LJPROF_HEAPDIFF_H

#include <stdio.h>

#include "heapgraph.h"
#include "heapreport.h"
#include "symbols.h"

struct heapdiff_row {
  struct heap_tally old, new;
  uint64_t fresh;
};

struct heapdiff {
  struct heapdiff_row types[LJH_OBJ_MASK + 1];
  /* By pattern, the pattern's text interned in names: a row's index is
     its text's string id. The objects only weakly reachable are one row
     more, named so. */
  struct symbols names;
  struct heapdiff_row *patterns;
  size_t npatterns, cap;
  struct heapdiff_row total;
};

void heapdiff_build(struct heapdiff *d, const struct heapgraph *old,
                    const struct heapgraph *new);
void heapdiff_free(struct heapdiff *d);

struct heapdiff_input {
  const char *source[2]; /* OLD's, NEW's names */
  const struct reader *reader[2];
};

/* Rows that changed, most grown (by bytes, then objects) first: text or
** JSON (opt->format), opt->top rows per section. 0, or -1 if writing
** failed. */
int heapdiff_write(FILE *out, const struct heapdiff *d,
                   const struct heapdiff_input *in,
                   const struct heapreport_options *opt);

#endif
