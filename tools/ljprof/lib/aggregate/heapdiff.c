/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "heapdiff.h"

#include <stdlib.h>
#include <string.h>

/* -- Building -------------------------------------------------------------- */

#define WEAK_ROW "(only weakly reachable)"
#define UNKNOWN_ROW "(made before the stream began, or not sampled)"

static uint32_t row_of(struct heapdiff_rows *rows, const char *text,
                       size_t len) {
  uint32_t id = symbols_intern(&rows->names, text, len);
  if (id >= rows->n) { /* a fresh interner numbers names in order */
    grow_array_zeroed((void **)&rows->row, &rows->cap, (size_t)id + 1,
                      sizeof *rows->row);
    rows->n = (size_t)id + 1;
  }
  return id;
}

static void rows_free(struct heapdiff_rows *rows) {
  symbols_free(&rows->names);
  free(rows->row);
}

static void tally_sum(struct heap_tally *to, const struct heap_tally *from) {
  to->count += from->count;
  to->bytes = add_sat(to->bytes, from->bytes);
}

static struct heap_tally *side(struct heapdiff_row *r, int which) {
  return which ? &r->new : &r->old;
}

/* One snapshot's tallies into the rows (which: 0 OLD, 1 NEW); the row of
** each of its patterns into *row_of_pattern, the last for the weak. */
static void add_snapshot(struct heapdiff *d, const struct heapgraph *h,
                         int which, uint32_t **row_of_pattern) {
  struct heap_tally types[LJH_OBJ_MASK + 1], weak;
  struct heap_tally *pats = xmalloc((h->npatterns + 1) * sizeof *pats);
  uint32_t *rows = xmalloc((h->npatterns + 1) * sizeof *rows);
  struct sbuf sb = {0};
  heapgraph_tally(h, types, pats, &weak);
  for (unsigned t = 0; t <= LJH_OBJ_MASK; t++) {
    tally_sum(side(&d->types[t], which), &types[t]);
    tally_sum(side(&d->total, which), &types[t]);
  }
  for (uint32_t p = 0; p < h->npatterns; p++) {
    sbuf_reset(&sb);
    heapgraph_pattern(h, p, &sb);
    rows[p] = row_of(&d->patterns, sb.data ? sb.data : "", sb.len);
    tally_sum(side(&d->patterns.row[rows[p]], which), &pats[p]);
  }
  rows[h->npatterns] = row_of(&d->patterns, WEAK_ROW, strlen(WEAK_ROW));
  tally_sum(side(&d->patterns.row[rows[h->npatterns]], which), &weak);
  sbuf_free(&sb);
  free(pats);
  *row_of_pattern = rows;
}

/* The site row of each allocation of j, the last for the unknown. */
static uint32_t *site_rows(struct heapdiff *d, const struct heapjoin *j) {
  uint32_t *rows = xmalloc((j->nalloc + 1) * sizeof *rows);
  struct sbuf sb = {0};
  for (size_t a = 0; a < j->nalloc; a++) {
    sbuf_reset(&sb);
    heapjoin_where(j, &j->alloc[a], &sb);
    rows[a] = row_of(&d->sites, sb.data ? sb.data : "", sb.len);
  }
  rows[j->nalloc] = row_of(&d->sites, UNKNOWN_ROW, strlen(UNKNOWN_ROW));
  sbuf_free(&sb);
  return rows;
}

/* The site row of object v (rows from site_rows()); HS_NONE if only
** weakly reachable, as the allocation sections of heapreport count. */
static uint32_t site_of(const struct heapgraph *h, const struct heapjoin *j,
                        const uint32_t *rows, uint32_t v) {
  if (h->idom[v] == HS_NONE) return HS_NONE;
  return rows[j->of[v] == HS_NONE ? j->nalloc : j->of[v]];
}

static void add_sites(struct heapdiff *d, const struct heapgraph *h,
                      const struct heapjoin *j, int which, uint32_t *rows) {
  for (uint32_t v = 0; v < h->snap->nobj; v++) {
    uint32_t r = site_of(h, j, rows, v);
    if (r == HS_NONE) continue;
    struct heap_tally *t = side(&d->sites.row[r], which);
    t->count++;
    t->bytes = add_sat(t->bytes, h->snap->obj[v].size);
  }
}

/* Objects are matched by address and type: one of NEW with no match in
** OLD was surely allocated between them. */
static uint64_t object_key(const struct hs_object *o) {
  return o->addr << 4 | (o->type & LJH_OBJ_MASK);
}

/* sites: NEW's site rows (site_rows()), or NULL if not joined. */
static void count_fresh(struct heapdiff *d, const struct heapgraph *old,
                        const struct heapgraph *new, const uint32_t *rows,
                        const struct heapjoin *join, const uint32_t *sites) {
  struct keymap seen = {0};
  for (uint32_t v = 0; v < old->snap->nobj; v++)
    keymap_put(&seen, object_key(&old->snap->obj[v]), 1);
  for (uint32_t v = 0; v < new->snap->nobj; v++) {
    const struct hs_object *o = &new->snap->obj[v];
    if (keymap_get(&seen, object_key(o)) != HASHTAB_NONE) continue;
    uint32_t p = new->idom[v] == HS_NONE ? new->npatterns : new->pattern[v];
    d->types[o->type].fresh++;
    d->total.fresh++;
    if (p != HS_NONE) d->patterns.row[rows[p]].fresh++;
    uint32_t s = sites ? site_of(new, join, sites, v) : HS_NONE;
    if (s != HS_NONE) d->sites.row[s].fresh++;
  }
  keymap_free(&seen);
}

void heapdiff_init(struct heapdiff *d, int joined) {
  memset(d, 0, sizeof *d);
  symbols_init(&d->patterns.names);
  symbols_init(&d->sites.names);
  d->joined = joined;
}

void heapdiff_add(struct heapdiff *d, const struct heapgraph *old,
                  const struct heapgraph *new,
                  const struct heapjoin *const join[2]) {
  const struct heapgraph *h[2] = {old, new};
  uint32_t *rows[2] = {NULL, NULL}, *sites[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) {
    if (!h[i]) continue;
    add_snapshot(d, h[i], i, &rows[i]);
    if (!d->joined) continue;
    sites[i] = site_rows(d, join[i]);
    add_sites(d, h[i], join[i], i, sites[i]);
  }
  if (old && new)
    count_fresh(d, old, new, rows[1], d->joined ? join[1] : NULL, sites[1]);
  for (int i = 0; i < 2; i++) {
    free(rows[i]);
    free(sites[i]);
  }
}

void heapdiff_build(struct heapdiff *d, const struct heapgraph *old,
                    const struct heapgraph *new,
                    const struct heapjoin *const join[2]) {
  heapdiff_init(d, join && join[0] && join[1]);
  heapdiff_add(d, old, new, join);
}

void heapdiff_free(struct heapdiff *d) {
  rows_free(&d->patterns);
  rows_free(&d->sites);
  memset(d, 0, sizeof *d);
}
