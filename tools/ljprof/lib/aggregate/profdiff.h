/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The difference of two profiles of one kind (two memory or two CPU
** profiles), as `pprof -diff_base` shows it: the value each one has, by
** site (a stack's innermost frame) or by whole stack, matched by name,
** since the two runs' addresses and ids have nothing in common. Names
** are interned in a resolver of the diff's own, as labels; a row keeps the
** frames of its first stack (outermost first), so a flame graph of what
** grew can be drawn from the rows.
*/
#ifndef LJPROF_PROFDIFF_H
#define LJPROF_PROFDIFF_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "shared/symbols.h"

enum profdiff_key { DIFF_BY_SITE, DIFF_BY_STACK };

struct profdiff_row {
  uint32_t name;          /* location id (a label) of the site or stack */
  uint32_t first, depth;  /* its frames: frames[first ..], outermost first */
  uint64_t base, new;     /* the profiles' weighted values */
};

struct profdiff {
  struct symbols sym; /* the names, as labels */
  struct keymap index; /* name -> row */
  struct profdiff_row *rows;
  size_t nrows, rows_cap;
  uint32_t *frames;
  size_t nframes, frames_cap;
  uint64_t base_total, new_total;
};

/* Both profiles' values by the value each weighs by (profile_weight()). */
void profdiff_build(struct profdiff *d, const struct profile *base,
                    const struct profile *new, enum profdiff_key key);
void profdiff_free(struct profdiff *d);

static inline int64_t profdiff_delta(const struct profdiff_row *r) {
  return (int64_t)(r->new - r->base);
}

/* Rows that changed, most grown first (grew) or most shrunk first; a
** malloc'd array of *count row indexes. */
size_t *profdiff_rank(const struct profdiff *d, int grew, size_t *count);

/* A profile of what grew: one stack per row that grew, its growth as its
** single value, in the unit `like` weighs by; it points into d and r. */
void profdiff_growth(struct profile *p, const struct profdiff *d,
                     const char *title, const struct profile *like,
                     const struct reader *r);

#endif
