/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "profdiff.h"

#include <stdlib.h>
#include <string.h>

static const struct profile_sample_type growth_types[] = {
    {"growth", "bytes"}, {"growth", "count"}, {"growth", "nanoseconds"}};

static uint32_t label(struct profdiff *d, struct sbuf *sb) {
  return symbols_loc_label(&d->sym, sbuf_cstr(sb));
}

/* The row of a name, new rows keeping the frames given. */
static struct profdiff_row *row_of(struct profdiff *d, uint32_t name,
                                   const uint32_t *frames, uint32_t depth) {
  uint32_t id = keymap_get(&d->index, name);
  if (id != HASHTAB_NONE) return &d->rows[id];
  grow_array((void **)&d->frames, &d->frames_cap, d->nframes + depth,
             sizeof *d->frames);
  memcpy(d->frames + d->nframes, frames, depth * sizeof *frames);
  grow_array((void **)&d->rows, &d->rows_cap, d->nrows + 1, sizeof *d->rows);
  id = (uint32_t)d->nrows++;
  d->rows[id] = (struct profdiff_row){name, (uint32_t)d->nframes, depth, 0, 0};
  d->nframes += depth;
  keymap_put(&d->index, name, id);
  return &d->rows[id];
}

/* Add one profile's values: to base (which = 0) or new (1). */
static void add_profile(struct profdiff *d, const struct profile *p,
                        enum profdiff_key key, int which) {
  size_t weight = profile_weight(p);
  struct sbuf name = {0}, path = {0};
  uint32_t *frames = NULL;
  size_t cap = 0;
  for (size_t s = 0; s < p->nstacks; s++) {
    const struct profile_stack *st = &p->stacks[s];
    uint64_t v = st->values[weight];
    if (!v || !st->depth) continue;
    grow_array((void **)&frames, &cap, st->depth, sizeof *frames);
    sbuf_reset(&path);
    for (size_t f = 0; f < st->depth; f++) {
      sbuf_reset(&name);
      profile_frame_name(p, profile_frame_from_root(p, st, f), &name);
      frames[f] = label(d, &name);
      if (f) sbuf_add(&path, ";", 1);
      sbuf_add(&path, name.data, name.len);
    }
    struct profdiff_row *r =
        key == DIFF_BY_STACK
            ? row_of(d, label(d, &path), frames, st->depth)
            : row_of(d, frames[st->depth - 1], frames + st->depth - 1, 1);
    if (which) r->new = add_sat(r->new, v), d->new_total += v;
    else r->base = add_sat(r->base, v), d->base_total += v;
  }
  free(frames);
  sbuf_free(&name);
  sbuf_free(&path);
}

void profdiff_build(struct profdiff *d, const struct profile *base,
                    const struct profile *new, enum profdiff_key key) {
  memset(d, 0, sizeof *d);
  symbols_init(&d->sym);
  add_profile(d, base, key, 0);
  add_profile(d, new, key, 1);
}

void profdiff_free(struct profdiff *d) {
  symbols_free(&d->sym);
  keymap_free(&d->index);
  free(d->rows);
  free(d->frames);
  memset(d, 0, sizeof *d);
}

struct ranked_row {
  int64_t delta;
  size_t index;
};

static int by_delta(const void *pa, const void *pb) {
  const struct ranked_row *a = pa, *b = pb;
  if (a->delta != b->delta) return a->delta > b->delta ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

size_t *profdiff_rank(const struct profdiff *d, int grew, size_t *count) {
  struct ranked_row *rank = xmalloc((d->nrows + 1) * sizeof *rank);
  size_t n = 0;
  for (size_t i = 0; i < d->nrows; i++) {
    int64_t delta = profdiff_delta(&d->rows[i]);
    if (grew ? delta > 0 : delta < 0)
      rank[n++] = (struct ranked_row){grew ? delta : -delta, i};
  }
  qsort(rank, n, sizeof *rank, by_delta);
  size_t *ids = xmalloc((n + 1) * sizeof *ids);
  for (size_t i = 0; i < n; i++) ids[i] = rank[i].index;
  free(rank);
  *count = n;
  return ids;
}

void profdiff_growth(struct profile *p, const struct profdiff *d,
                     const char *title, const struct profile *like,
                     const struct reader *r) {
  const struct profile_sample_type *t = &like->types[profile_weight(like)];
  memset(p, 0, sizeof *p);
  p->kind = like->kind;
  p->source = title;
  p->sym = &d->sym;
  p->reader = r;
  p->types = !strcmp(t->unit, "bytes")         ? &growth_types[0]
             : !strcmp(t->unit, "nanoseconds") ? &growth_types[2]
                                               : &growth_types[1];
  p->ntypes = 1;
  p->what = "growth from the base profile, by stack";
  size_t n;
  size_t *ids = profdiff_rank(d, 1, &n);
  p->stacks = xmalloc((n + 1) * sizeof *p->stacks);
  p->stack_frames = xmalloc((d->nframes + 1) * sizeof *p->stack_frames);
  /* Frame ids are the labels' location ids: one frame per label. */
  for (size_t i = 0; i < d->sym.nlocations; i++) {
    grow_array((void **)&p->frames, &p->frames_cap, i + 1, sizeof *p->frames);
    p->frames[i] = (struct profile_frame){(uint32_t)i, (uint32_t)i};
  }
  p->nframes = d->sym.nlocations;
  for (size_t k = 0; k < n; k++) {
    const struct profdiff_row *r = &d->rows[ids[k]];
    struct profile_stack *st = &p->stacks[p->nstacks++];
    *st = (struct profile_stack){.first = (uint32_t)p->nstack_frames,
                                 .depth = r->depth};
    st->values[0] = (uint64_t)profdiff_delta(r);
    p->totals[0] += st->values[0];
    for (uint32_t f = r->depth; f-- > 0;) /* innermost first */
      p->stack_frames[p->nstack_frames++] =
          (struct profile_stack_frame){d->frames[r->first + f], 0};
  }
  free(ids);
}
