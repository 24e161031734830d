/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#define _GNU_SOURCE /* qsort_r */
#include "labels.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "memagg.h"
#include "sysagg.h"

void labelfilter_init(struct labelfilter *f, struct symbols *sym,
                      const struct labelterm *terms, size_t n) {
  memset(f, 0, sizeof *f);
  f->sym = sym;
  f->terms = xmalloc((n ? n : 1) * sizeof *f->terms);
  f->n = n;
  for (size_t i = 0; i < n; i++) {
    const struct labelterm *t = &terms[i];
    f->terms[i].key =
        t->other ? 0 : symbols_intern(sym, t->key, t->key_len);
    f->terms[i].value = t->other   ? LABEL_VALUE_OTHER
                        : t->value ? symbols_intern(sym, t->value, t->value_len)
                                   : LABEL_VALUE_NONE;
  }
}

void labelfilter_free(struct labelfilter *f) {
  free(f->terms);
  free(f->memo);
  memset(f, 0, sizeof *f);
}

uint32_t labels_value_of(const struct symbols *sym, uint32_t set,
                         uint32_t key) {
  if (set == LABELS_OTHER) return LABEL_VALUE_OTHER;
  uint32_t v = labelsets_value(&sym->labels, set, key);
  return v == UINT32_MAX ? LABEL_VALUE_NONE : v;
}

static int term_holds(const struct labelfilter *f, const struct label *t,
                      uint32_t set) {
  if (t->value == LABEL_VALUE_OTHER) return set == LABELS_OTHER;
  if (set == LABELS_OTHER) return 0;
  return labels_value_of(f->sym, set, t->key) == t->value;
}

int labelfilter_keeps(struct labelfilter *f, uint32_t set) {
  if (set < f->memo_cap && f->memo[set]) return f->memo[set] == 1;
  int keep = 1;
  for (size_t i = 0; keep && i < f->n; i++)
    keep = term_holds(f, &f->terms[i], set);
  grow_array_zeroed((void **)&f->memo, &f->memo_cap, (size_t)set + 1, 1);
  f->memo[set] = keep ? 1 : 2;
  return keep;
}

/* -- The gate ------------------------------------------------------------ */

void labelgate_init(struct labelgate *g, struct labelfilter *filter,
                    const struct memprof_sink *mem,
                    const struct sysprof_sink *cpu) {
  memset(g, 0, sizeof *g);
  g->filter = filter;
  g->mem = *mem;
  g->cpu = *cpu;
  livetab_init(&g->dropped);
}

void labelgate_free(struct labelgate *g) { livetab_free(&g->dropped); }

/* The events kept of a batch, written where the next sink wants them (an
** event pipe's chunk) or in the gate's own batch, passed on at once: at
** most one for each event read, so never more than a batch. */
static void gate_events(void *ud, const struct memprof_event *evs, size_t n,
                        size_t nlocs) {
  struct labelgate *g = ud;
  struct memprof_event *out =
      g->mem.next_batch ? g->mem.next_batch(g->mem.ud) : g->batch;
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    struct memprof_event ev = evs[i];
    struct live_block b;
    int was_dropped = ev.kind != MEMPROF_ALLOC && ev.kind != MEMPROF_MARK &&
                      livetab_take(&g->dropped, ev.oaddr, &b);
    int keep = ev.kind == MEMPROF_MARK || ev.kind == MEMPROF_FREE ||
               labelfilter_keeps(g->filter, ev.labels);
    if (ev.kind == MEMPROF_FREE && was_dropped) continue;
    if (ev.kind == MEMPROF_ALLOC || ev.kind == MEMPROF_REALLOC) {
      if (!keep) livetab_put(&g->dropped, ev.naddr, ev.nsize ? ev.nsize : 1, 0);
      if (ev.kind == MEMPROF_REALLOC && keep && was_dropped) {
        ev.kind = MEMPROF_ALLOC; /* its block starts here */
        ev.oaddr = ev.osize = ev.oweight = 0;
      } else if (ev.kind == MEMPROF_REALLOC && !keep && !was_dropped) {
        ev.kind = MEMPROF_FREE; /* its block ends here */
        ev.naddr = ev.nsize = ev.nweight = 0;
        keep = 1;
      }
    }
    if (keep) out[kept++] = ev;
  }
  if (kept) g->mem.events(g->mem.ud, out, kept, nlocs);
}

static void gate_sample(void *ud, const struct sysprof_sample *s) {
  struct labelgate *g = ud;
  if (labelfilter_keeps(g->filter, s->labels)) g->cpu.sample(g->cpu.ud, s);
}

static void gate_jit(void *ud, const struct sysprof_jit_event *e) {
  struct labelgate *g = ud;
  if (g->cpu.jit) g->cpu.jit(g->cpu.ud, e);
}

static void gate_count(void *ud, uint32_t set, uint64_t samples) {
  struct labelgate *g = ud;
  if (g->cpu.label_count && labelfilter_keeps(g->filter, set))
    g->cpu.label_count(g->cpu.ud, set, samples);
}

struct memprof_sink labelgate_memprof(struct labelgate *g) {
  return (struct memprof_sink){.events = gate_events, .ud = g};
}

struct sysprof_sink labelgate_sysprof(struct labelgate *g) {
  return (struct sysprof_sink){gate_sample, gate_jit, g, g->cpu.meta,
                               gate_count};
}

/* -- The table by label -------------------------------------------------- */

void labeltable_free(struct labeltable *t) {
  free(t->rows);
  memset(t, 0, sizeof *t);
}

/* Strings by their bytes; then the folded sets, then (none). */
static int bytes_cmp(const struct symbols *sym, uint32_t a, uint32_t b) {
  if (a == b) return 0;
  if (a >= LABEL_VALUE_OTHER || b >= LABEL_VALUE_OTHER) return a < b ? -1 : 1;
  const struct symstring *x = &sym->strings[a], *y = &sym->strings[b];
  int c = memcmp(x->data, y->data, x->len < y->len ? x->len : y->len);
  if (c) return c;
  return x->len < y->len ? -1 : x->len > y->len;
}

/* Rows by key, then most first, then by value. */
static int row_cmp(const void *pa, const void *pb, void *ud) {
  const struct labelrow *a = pa, *b = pb;
  int c = bytes_cmp(ud, a->key, b->key);
  if (c) return c;
  if (a->total != b->total) return a->total > b->total ? -1 : 1;
  return bytes_cmp(ud, a->value, b->value);
}

/* The row of (key, value), added if new. */
static size_t row_of(struct labeltable *t, size_t *cap, size_t first,
                     uint32_t key, uint32_t value) {
  for (size_t i = first; i < t->n; i++)
    if (t->rows[i].key == key && t->rows[i].value == value) return i;
  grow_array((void **)&t->rows, cap, t->n + 1, sizeof *t->rows);
  t->rows[t->n] = (struct labelrow){key, value, 0, SIZE_MAX};
  return t->n++;
}

/* The keys the sets with a value carry, each once. */
static uint32_t *keys_of(const struct symbols *sym, const uint64_t *values,
                         size_t nsets, uint32_t only, size_t *nkeys) {
  uint32_t *keys = NULL;
  size_t n = 0, cap = 0;
  for (size_t set = 0; set < nsets; set++) {
    size_t nl;
    const struct label *l = labelsets_get(&sym->labels, (uint32_t)set, &nl);
    if (!values[set]) continue;
    for (size_t i = 0; i < nl; i++) {
      if (only != SYMBOLS_NONE && l[i].key != only) continue;
      size_t k = 0;
      while (k < n && keys[k] != l[i].key) k++;
      if (k < n) continue;
      grow_array((void **)&keys, &cap, n + 1, sizeof *keys);
      keys[n++] = l[i].key;
    }
  }
  if (only != SYMBOLS_NONE && n == 0 && nsets > LABELS_OTHER &&
      values[LABELS_OTHER]) {
    grow_array((void **)&keys, &cap, 1, sizeof *keys);
    keys[n++] = only;
  }
  *nkeys = n;
  return keys;
}

void labeltable_build(struct labeltable *t, const struct symbols *sym,
                      const uint64_t *set_values, size_t nsets,
                      labelitems_fn items_of, const void *agg,
                      uint32_t key) {
  memset(t, 0, sizeof *t);
  size_t cap = 0, nkeys, nitems = 0;
  for (size_t set = 0; set < nsets; set++)
    t->total = add_sat(t->total, set_values[set]);
  uint32_t *keys = keys_of(sym, set_values, nsets, key, &nkeys);
  struct labelitem *items = nkeys ? items_of(agg, &nitems) : NULL;
  size_t *set_row = xmalloc((nsets ? nsets : 1) * sizeof *set_row);
  for (size_t k = 0; k < nkeys; k++) {
    size_t first = t->n;
    for (size_t set = 0; set < nsets; set++) {
      set_row[set] = SIZE_MAX;
      if (!set_values[set]) continue;
      uint32_t value = labels_value_of(sym, (uint32_t)set, keys[k]);
      set_row[set] = row_of(t, &cap, first, keys[k], value);
      struct labelrow *r = &t->rows[set_row[set]];
      r->total = add_sat(r->total, set_values[set]);
    }
    /* The top item of each row: the first with the most. */
    for (size_t i = 0; i < nitems; i++) {
      size_t r = items[i].set < nsets ? set_row[items[i].set] : SIZE_MAX;
      if (r == SIZE_MAX) continue;
      struct labelrow *row = &t->rows[r];
      if (row->top == SIZE_MAX || items[i].value > items[row->top].value)
        row->top = i;
    }
  }
  free(items);
  free(set_row);
  free(keys);
  if (t->n) qsort_r(t->rows, t->n, sizeof *t->rows, row_cmp, (void *)sym);
}

static struct labelitem *stack_items(const void *from, size_t *n) {
  const struct sysagg *agg = from;
  struct labelitem *items =
      xmalloc((agg->nstacks ? agg->nstacks : 1) * sizeof *items);
  for (size_t i = 0; i < agg->nstacks; i++)
    items[i] = (struct labelitem){agg->stacks[i].labels, agg->stacks[i].count};
  *n = agg->nstacks;
  return items;
}

void labeltable_cpu(struct labeltable *t, const struct sysagg *agg,
                    uint32_t key) {
  labeltable_build(t, agg->sym, agg->label_samples, agg->label_cap,
                   stack_items, agg, key);
}

/* What a (site, stack, labels) pair counts in a table of the live bytes
** or of the allocated ones. */
static uint64_t pair_value(const struct stackpair *p, int live) {
  return live ? p->live_bytes : p->alloc_bytes;
}

static struct labelitem *pair_items(const struct memagg *agg, int live,
                                    size_t *n) {
  struct labelitem *items =
      xmalloc((agg->npairs ? agg->npairs : 1) * sizeof *items);
  for (size_t i = 0; i < agg->npairs; i++)
    items[i] = (struct labelitem){agg->pairs[i].labels,
                                  pair_value(&agg->pairs[i], live)};
  *n = agg->npairs;
  return items;
}

static struct labelitem *live_items(const void *agg, size_t *n) {
  return pair_items(agg, 1, n);
}

static struct labelitem *allocated_items(const void *agg, size_t *n) {
  return pair_items(agg, 0, n);
}

void labeltable_memory(struct labeltable *t, const struct memagg *agg,
                       int live, uint32_t key) {
  size_t nsets = agg->sym->labels.nsets;
  uint64_t *values = xcalloc(nsets ? nsets : 1, sizeof *values);
  for (size_t i = 0; i < agg->npairs; i++) {
    const struct stackpair *p = &agg->pairs[i];
    if (p->labels < nsets)
      values[p->labels] = add_sat(values[p->labels], pair_value(p, live));
  }
  labeltable_build(t, agg->sym, values, nsets,
                   live ? live_items : allocated_items, agg, key);
  free(values);
}

void labels_format_value(const struct symbols *sym, uint32_t value,
                         struct sbuf *sb) {
  if (value == LABEL_VALUE_NONE) {
    sbuf_printf(sb, "(none)");
  } else if (value == LABEL_VALUE_OTHER) {
    sbuf_printf(sb, "(other: %s%" PRIu64 " sets folded)",
                sym->labels.folded_more ? "at least " : "", sym->labels.folded);
  } else {
    const struct symstring *s = &sym->strings[value];
    labels_escape(sb, s->data, s->len);
  }
}
