#include "sysagg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sysagg_init(struct sysagg *agg, struct symbols *sym) {
  memset(agg, 0, sizeof *agg);
  agg->sym = sym;
}

void sysagg_free(struct sysagg *agg) {
  free(agg->frames);
  free(agg->stacks);
  hashtab_free(&agg->stack_index);
  free(agg->funcs.items);
  free(agg->lines.items);
  memset(agg, 0, sizeof *agg);
}

static uint32_t hash_frames(const struct sysagg_frame *frames, size_t n) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < n; i++)
    h = (h ^ ((uint64_t)frames[i].loc << 32 | frames[i].func) ^
         frames[i].inlined) *
        UINT64_C(0x100000001b3);
  return hash_u64(h);
}

struct stack_probe {
  const struct sysagg *agg;
  const struct sysagg_frame *frames;
  size_t n;
};

static int same_stack(const void *ctx, uint32_t id) {
  const struct stack_probe *p = ctx;
  const struct sysagg_stack *st = &p->agg->stacks[id];
  return st->depth == p->n &&
         memcmp(&p->agg->frames[st->first], p->frames,
                p->n * sizeof *p->frames) == 0;
}

/* Count one sample of the stack frames[first .. first + n), built past the
** end of the frames kept. */
static void count_stack(struct sysagg *agg, size_t first, size_t n) {
  const struct sysagg_frame *frames = &agg->frames[first];
  struct stack_probe probe = {agg, frames, n};
  uint32_t hash = hash_frames(frames, n);
  uint32_t id = hashtab_find(&agg->stack_index, hash, same_stack, &probe);
  if (id == HASHTAB_NONE) {
    grow_array((void **)&agg->stacks, &agg->stacks_cap, agg->nstacks + 1,
               sizeof *agg->stacks);
    id = (uint32_t)agg->nstacks++;
    agg->stacks[id] = (struct sysagg_stack){(uint32_t)first, (uint32_t)n, 0};
    agg->nframes = first + n; /* keep the new stack's frames */
    hashtab_add(&agg->stack_index, hash, id);
  }
  agg->stacks[id].count = add_sat(agg->stacks[id].count, 1);
}

static struct sysagg_counts *counts_of(struct sysagg_table *t, uint32_t loc) {
  if (loc >= t->cap) {
    size_t old = t->cap;
    grow_array((void **)&t->items, &t->cap, (size_t)loc + 1, sizeof *t->items);
    memset(t->items + old, 0, (t->cap - old) * sizeof *t->items);
  }
  return &t->items[loc];
}

/* Count a location in a table for the sample numbered `sample`. */
static void count_in(struct sysagg_table *t, uint32_t loc, uint64_t sample,
                     int self) {
  struct sysagg_counts *c = counts_of(t, loc);
  if (self) c->self = add_sat(c->self, 1);
  if (c->last_sample == sample) return;
  c->last_sample = sample;
  c->total = add_sat(c->total, 1);
}

void sysagg_sample(void *ud, const struct sysprof_sample *s) {
  struct sysagg *agg = ud;
  agg->samples = add_sat(agg->samples, 1);
  agg->by_vmstate[s->vmstate] = add_sat(agg->by_vmstate[s->vmstate], 1);
  uint64_t sample = agg->samples; /* never 0: marks "not yet counted" */

  struct sysprof_frame pseudo;
  const struct sysprof_frame *frames = s->frames;
  size_t n = s->nframes;
  if (n == 0) {
    char label[16];
    snprintf(label, sizeof label, "[%s]", sysprof_vmstate_name(s->vmstate));
    uint32_t loc = symbols_loc_label(agg->sym, label);
    pseudo = (struct sysprof_frame){loc, loc, 0, 0};
    frames = &pseudo;
    n = 1;
  }

  size_t first = agg->nframes;
  grow_array((void **)&agg->frames, &agg->frames_cap, first + n,
             sizeof *agg->frames);
  int lua_self = 1, noline = 0;
  for (size_t i = 0; i < n; i++) {
    const struct sysprof_frame *f = &frames[i];
    const struct location *loc = &agg->sym->locations[f->loc];
    agg->frames[first + i] =
        (struct sysagg_frame){f->loc, f->func, (uint32_t)f->inlined};
    count_in(&agg->funcs, f->func, sample, i == 0);
    if (f->lua) {
      count_in(&agg->lines, f->loc, sample, lua_self);
      lua_self = 0;
    }
    noline |= loc->kind == LOC_LUA_NOLINE ||
              (loc->kind == LOC_LUA_UNKNOWN && loc->line == SYMBOLS_LINE_UNKNOWN);
  }
  agg->line_unknown += noline;
  count_stack(agg, first, n);
}

uint64_t sysagg_samples(const struct sysagg *agg) {
  return agg->meta.has_stats ? agg->meta.samples : agg->samples;
}

uint64_t sysagg_vmstate_samples(const struct sysagg *agg, unsigned state) {
  return agg->meta.has_stats ? agg->meta.by_vmstate[state]
                             : agg->by_vmstate[state];
}

int sysagg_rate(const struct sysagg *agg, double *achieved, double *asked) {
  const struct sysprof_meta *m = &agg->meta;
  if (!m->has_config || !m->has_stats || m->interval_us == 0 ||
      m->elapsed_ns == 0)
    return 0;
  *achieved = (double)m->samples / ((double)m->elapsed_ns / 1e9);
  *asked = 1e6 / (double)m->interval_us;
  return 1;
}

struct rank_item {
  uint64_t first, second;
  uint32_t id;
};

static int by_counts(const void *a, const void *b) {
  const struct rank_item *x = a, *y = b;
  if (x->first != y->first) return x->first > y->first ? -1 : 1;
  if (x->second != y->second) return x->second > y->second ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

/* Sort items by their counts and return their ids (malloc'd). */
static uint32_t *sorted_ids(struct rank_item *items, size_t n) {
  qsort(items, n, sizeof *items, by_counts);
  uint32_t *ids = xmalloc(n * sizeof *ids);
  for (size_t i = 0; i < n; i++) ids[i] = items[i].id;
  free(items);
  return ids;
}

uint32_t *sysagg_rank(const struct sysagg_table *t, enum sysagg_key key,
                      size_t *count) {
  struct rank_item *items = xmalloc(t->cap * sizeof *items);
  size_t n = 0;
  for (size_t id = 0; id < t->cap; id++) {
    const struct sysagg_counts *c = &t->items[id];
    if (c->total == 0) continue;
    items[n++] = key == KEY_SELF
                     ? (struct rank_item){c->self, c->total, (uint32_t)id}
                     : (struct rank_item){c->total, c->self, (uint32_t)id};
  }
  *count = n;
  return sorted_ids(items, n);
}

uint32_t *sysagg_rank_stacks(const struct sysagg *agg) {
  struct rank_item *items = xmalloc(agg->nstacks * sizeof *items);
  for (size_t i = 0; i < agg->nstacks; i++)
    items[i] = (struct rank_item){agg->stacks[i].count, 0, (uint32_t)i};
  return sorted_ids(items, agg->nstacks);
}
