/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "heapjoin.h"

#include <stdlib.h>

#include "labels.h"
#include "shared/livetab.h"
#include "decode/stream.h"

/* The replay: blocks live at each moment, each owned by the index of
** its allocation; frozen at the snapshot's mark. */
struct replay {
  struct heapjoin *j;
  struct livetab live;
  struct keymap3 index; /* (site, stack, labels) -> index in alloc */
  uint64_t mark;
  int found;
};

static uint32_t new_alloc(void *ud, uint32_t site, uint32_t stack,
                          uint32_t labels) {
  struct heapjoin *j = ud;
  grow_array((void **)&j->alloc, &j->capalloc, j->nalloc + 1, sizeof *j->alloc);
  j->alloc[j->nalloc] = (struct heapjoin_alloc){site, stack, labels};
  return (uint32_t)j->nalloc++;
}

static uint32_t alloc_index(struct replay *p, const struct memprof_event *ev) {
  return keymap3_id(&p->index, ev->loc, ev->stack, ev->labels, new_alloc,
                    p->j);
}

static void replay_events(void *ud, const struct memprof_event *evs,
                          size_t n, size_t nlocs) {
  struct replay *p = ud;
  (void)nlocs;
  for (size_t i = 0; i < n && !p->found; i++) {
    const struct memprof_event *ev = &evs[i];
    struct live_block old;
    uint32_t owner;
    switch (ev->kind) {
    case MEMPROF_MARK:
      p->found = ev->oaddr == p->mark;
      break;
    case MEMPROF_FREE:
      livetab_take(&p->live, ev->oaddr, &old);
      break;
    case MEMPROF_REALLOC: /* the block keeps the allocation that made it */
      owner = livetab_take(&p->live, ev->oaddr, &old)
                  ? old.owner
                  : alloc_index(p, ev);
      livetab_put(&p->live, ev->naddr, ev->nsize, owner);
      break;
    case MEMPROF_ALLOC:
      livetab_put(&p->live, ev->naddr, ev->nsize, alloc_index(p, ev));
      break;
    }
  }
}

static void no_sample(void *ud, const struct sysprof_sample *s) {
  (void)ud;
  (void)s;
}

static int by_addr(const void *a, const void *b) {
  const struct live_block *x = a, *y = b;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Each object to the block it lies in. */
static void attribute(struct heapjoin *j, const struct livetab *live,
                      const struct heapsnap *s) {
  size_t n = livetab_count(live), pos = 0, k = 0;
  struct live_block *b = xmalloc((n + 1) * sizeof *b);
  while (k < n && livetab_next(live, &pos, &b[k])) k++;
  qsort(b, k, sizeof *b, by_addr);
  j->of = xmalloc((s->nobj + 1) * sizeof *j->of);
  for (size_t v = 0; v < s->nobj; v++) {
    uint64_t a = s->obj[v].addr;
    size_t lo = 0, hi = k;
    while (lo < hi) { /* the first block past a */
      size_t mid = lo + (hi - lo) / 2;
      if (b[mid].addr <= a) lo = mid + 1;
      else hi = mid;
    }
    j->of[v] = HS_NONE;
    if (lo > 0 && a - b[lo - 1].addr < b[lo - 1].size) {
      j->of[v] = b[lo - 1].owner;
      j->known++;
    }
  }
  free(b);
}

int heapjoin_read(struct heapjoin *j, struct reader *r,
                  const struct heapsnap *s, struct sbuf *err) {
  struct replay p = {.j = j, .mark = s->memprof_mark};
  struct sysprof_meta meta; /* a sysprof stream given: read, then refused */
  struct stream_sinks sinks = {
      .memprof = {replay_events, &p},
      .sysprof = {.sample = no_sample, .meta = &meta}};
  memset(j, 0, sizeof *j);
  symbols_init(&j->sym);
  if (!s->memprof_mark) {
    sbuf_printf(err, "the snapshot was taken while no memprof stream of "
                     "version 5 ran: it has no mark to join at");
    return 0;
  }
  livetab_init(&p.live);
  enum stream_kind kind = stream_read(r, &j->sym, &sinks);
  if (kind == STREAM_SYSPROF)
    sbuf_printf(err, "not a memprof stream (a sysprof one)");
  else if (!p.found && r->status != READER_OK)
    sbuf_printf(err, "the stream ends before the snapshot's mark: %s",
                r->err_msg);
  else if (!p.found)
    sbuf_printf(err, "the stream has no mark of this snapshot (it ran at "
                     "another time, or in another process)");
  else
    attribute(j, &p.live, s);
  j->sample = j->sym.memprof.sample;
  livetab_free(&p.live);
  keymap3_free(&p.index);
  return p.found && kind != STREAM_SYSPROF;
}

void heapjoin_free(struct heapjoin *j) {
  symbols_free(&j->sym);
  free(j->alloc);
  free(j->of);
  memset(j, 0, sizeof *j);
}

void heapjoin_where(const struct heapjoin *j, const struct heapjoin_alloc *a,
                    struct sbuf *out) {
  uint32_t depth;
  const struct symframe *f = symbols_stack(&j->sym, a->stack, &depth);
  if (!depth) {
    symbols_format(&j->sym, a->site, NULL, out);
    return;
  }
  for (uint32_t i = 0; i < depth && i < HEAPJOIN_WHERE_FRAMES; i++) {
    if (i) sbuf_add(out, " <- ", 4);
    symbols_format(&j->sym, f[i].loc, NULL, out);
  }
  if (depth > HEAPJOIN_WHERE_FRAMES) sbuf_add(out, " <- ...", 7);
}

int heapjoin_labels(const struct heapjoin *j, const struct heapjoin_alloc *a,
                    struct sbuf *out) {
  size_t n;
  const struct label *l = labelsets_get(&j->sym.labels, a->labels, &n);
  if (a->labels == LABELS_OTHER) {
    labels_format_value(&j->sym, LABEL_VALUE_OTHER, out);
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    const struct symstring *k = &j->sym.strings[l[i].key];
    const struct symstring *v = &j->sym.strings[l[i].value];
    if (i) sbuf_add(out, " ", 1);
    labels_escape(out, k->data, k->len);
    sbuf_add(out, "=", 1);
    labels_escape(out, v->data, v->len);
  }
  return n != 0;
}
