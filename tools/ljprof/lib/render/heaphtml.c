/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "heaphtml.h"

#include <stdlib.h>
#include <string.h>

#include "report.h"

#define REST "(what retains less, held by the roots)"

static const struct profile_sample_type retained_type = {"retained",
                                                         "bytes"};

/* The objects drawn: by what they retain, each under its dominator. */
struct tree {
  uint32_t *obj, *parent, *depth; /* parent: HS_NONE under the root */
  uint64_t *self;                 /* retained, less the children drawn */
  uint32_t n;
};

static void choose(const struct heapgraph *h, struct tree *t) {
  const struct heapsnap *s = h->snap;
  uint64_t total = h->retained[h->root];
  struct rank_item *items = xmalloc((s->nobj + 1) * sizeof *items);
  size_t n = 0;
  /* Too small to see: what retains less than 1/(HEAPHTML_FRAMES *
     HEAPHTML_DEPTH) of the heap is not even ranked. */
  for (uint32_t v = 0; v < s->nobj; v++)
    if (h->idom[v] != HS_NONE &&
        h->retained[v] >= total / HEAPHTML_FRAMES / HEAPHTML_DEPTH)
      items[n++] = (struct rank_item){h->retained[v], 0, v};
  uint32_t *ids = rank_ids(items, n);
  uint32_t *node_of = xmalloc((s->nobj + 1) * sizeof *node_of);
  for (uint32_t v = 0; v <= s->nobj; v++) node_of[v] = HS_NONE;
  memset(t, 0, sizeof *t);
  t->obj = xmalloc(HEAPHTML_FRAMES * sizeof *t->obj);
  t->parent = xmalloc(HEAPHTML_FRAMES * sizeof *t->parent);
  t->depth = xmalloc(HEAPHTML_FRAMES * sizeof *t->depth);
  t->self = xmalloc(HEAPHTML_FRAMES * sizeof *t->self);
  /* Dominators retain more than what they dominate: they come first. */
  for (size_t i = 0; i < n && t->n < HEAPHTML_FRAMES; i++) {
    uint32_t v = ids[i], d = h->idom[v];
    uint32_t p = d == h->root ? HS_NONE : node_of[d];
    if (d != h->root && (p == HS_NONE || t->depth[p] == HEAPHTML_DEPTH))
      continue;
    node_of[v] = t->n;
    t->obj[t->n] = v;
    t->parent[t->n] = p;
    t->depth[t->n] = p == HS_NONE ? 1 : t->depth[p] + 1;
    t->self[t->n] = h->retained[v];
    if (p != HS_NONE) t->self[p] -= h->retained[v];
    t->n++;
  }
  free(node_of);
  free(ids);
}

static void tree_free(struct tree *t) {
  free(t->obj);
  free(t->parent);
  free(t->depth);
  free(t->self);
}

static uint32_t label_of(const struct heapgraph *h, uint32_t v,
                         struct symbols *sym, struct sbuf *sb) {
  sbuf_reset(sb);
  heapgraph_path(h, v, sb);
  sbuf_add(sb, " (", 2);
  heapgraph_object(h->snap, v, sb);
  sbuf_add(sb, ")", 1);
  return symbols_loc_label(sym, sbuf_cstr(sb));
}

/* A stack: the frames of k and of what is above it (parent), innermost
** first. */
static void add_stack(struct profile *p, const uint32_t *parent,
                      const uint32_t *label, uint32_t k, uint64_t value) {
  struct profile_stack *st = &p->stacks[p->nstacks++];
  *st = (struct profile_stack){.first = (uint32_t)p->nstack_frames};
  st->values[0] = value;
  p->totals[0] += value;
  for (uint32_t f = k; f != HS_NONE; f = parent[f], st->depth++) {
    grow_array((void **)&p->stack_frames, &p->stack_frames_cap,
               p->nstack_frames + 1, sizeof *p->stack_frames);
    p->stack_frames[p->nstack_frames++] =
        (struct profile_stack_frame){label[f], 0};
  }
}

int heaphtml_write(FILE *out, const char *source, const struct heapgraph *h,
                   const struct reader *r) {
  struct tree t;
  struct symbols sym;
  struct sbuf sb = {0};
  struct profile p = {.kind = PROFILE_MEMORY, .source = source, .reader = r,
                      .types = &retained_type, .ntypes = 1,
                      .what = "bytes retained, by the dominator tree (a "
                              "frame: what its object retains)"};
  choose(h, &t);
  symbols_init(&sym);
  p.sym = &sym;
  uint32_t *label = xmalloc((t.n + 1) * sizeof *label);
  uint64_t rest = h->retained[h->root];
  for (uint32_t k = 0; k < t.n; k++) {
    label[k] = label_of(h, t.obj[k], &sym, &sb);
    if (t.parent[k] == HS_NONE) rest -= h->retained[t.obj[k]];
  }
  label[t.n] = symbols_loc_label(&sym, REST);
  p.nframes = sym.nlocations;
  p.frames = xmalloc(p.nframes * sizeof *p.frames);
  for (uint32_t i = 0; i < p.nframes; i++)
    p.frames[i] = (struct profile_frame){i, i};
  p.stacks = xmalloc((t.n + 1) * sizeof *p.stacks);
  for (uint32_t k = 0; k < t.n; k++)
    if (t.self[k]) add_stack(&p, t.parent, label, k, t.self[k]);
  static const uint32_t alone = HS_NONE;
  if (rest) add_stack(&p, &alone, &label[t.n], 0, rest);
  int status = report_html(out, &p);
  profile_free(&p);
  symbols_free(&sym);
  sbuf_free(&sb);
  free(label);
  tree_free(&t);
  return status;
}
