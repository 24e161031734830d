/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** A heap snapshot joined to the memprof stream that ran while it was
** taken: each live object gets the allocation that made it, its site and
** (v5 with stacks) its call stack, (v6) the labels it was made under.
**
** The snapshot and the stream carry the same mark (docs/formats.md): the
** events before the mark in the stream are those of the heap the snapshot
** holds. Replaying them keeps, for each address, the block last allocated
** there and not freed: addresses are reused after frees, and only that
** allocation made the object now at it. An object lies in the block that
** starts at or below its address and reaches past it (a cdata of a
** variable-length type sits inside its block).
*/
#ifndef LJPROF_HEAPJOIN_H
#define LJPROF_HEAPJOIN_H

#include "decode/heapsnap.h"
#include "shared/reader.h"
#include "shared/symbols.h"

/* Where an object was allocated: a site (location id), its call stack
** (stack id, or MEMPROF_NO_STACK), the label set it was made under (v6;
** LABELS_NONE). */
struct heapjoin_alloc {
  uint32_t site, stack, labels;
};

struct heapjoin {
  struct symbols sym;           /* the names of the stream */
  struct heapjoin_alloc *alloc; /* distinct (site, stack) pairs */
  size_t nalloc, capalloc;
  uint32_t *of;                 /* by object: index in alloc; HS_NONE */
  uint32_t known;               /* objects with an allocation */
  uint64_t sample;              /* the stream's sampling interval (0: all) */
};

/*
** Replay the memprof stream of r up to the mark of snapshot s. Returns 1,
** or 0 with the reason in err (the stream is no memprof stream, has no
** mark of this snapshot, or ends before it; the reader says why if it
** is damaged).
*/
int heapjoin_read(struct heapjoin *j, struct reader *r,
                  const struct heapsnap *s, struct sbuf *err);
void heapjoin_free(struct heapjoin *j);

/* The allocation of object v; NULL if unknown (made before the stream
** started, or not sampled). */
static inline const struct heapjoin_alloc *
heapjoin_of(const struct heapjoin *j, uint32_t v) {
  return j && j->of && j->of[v] != HS_NONE ? &j->alloc[j->of[v]] : NULL;
}

/* Where allocation a was made, as one line into out: its stack's top
** HEAPJOIN_WHERE_FRAMES frames, innermost first, `a <- b` (the site alone
** without a stack), past them `...`. Reports print it; a diff of two
** snapshots matches allocation sites by it. */
#define HEAPJOIN_WHERE_FRAMES 6
void heapjoin_where(const struct heapjoin *j, const struct heapjoin_alloc *a,
                    struct sbuf *out);

/* Its labels into out, `KEY=VALUE KEY=VALUE` escaped (labels_escape()),
** `(other: N sets folded)`; returns 0 (out untouched) for none. */
int heapjoin_labels(const struct heapjoin *j, const struct heapjoin_alloc *a,
                    struct sbuf *out);

#endif
