#include "memagg.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void memagg_init(struct memagg *agg, struct symbols *sym) {
  memset(agg, 0, sizeof *agg);
  agg->sym = sym;
  livetab_init(&agg->live);
  agg->before_start = symbols_loc_before_start(sym);
}

static void overrides_free(struct overrides *o) {
  keymap_free(&o->index);
  free(o->items);
}

void memagg_free(struct memagg *agg) {
  free(agg->stats);
  livetab_free(&agg->live);
  overrides_free(&agg->realloc_overrides);
  overrides_free(&agg->free_overrides);
  memset(agg, 0, sizeof *agg);
}

static struct memstats *stats_of(struct memagg *agg, uint32_t loc) {
  if (loc >= agg->nstats) {
    grow_array((void **)&agg->stats, &agg->stats_cap, (size_t)loc + 1,
               sizeof *agg->stats);
    memset(agg->stats + agg->nstats, 0,
           ((size_t)loc + 1 - agg->nstats) * sizeof *agg->stats);
    agg->nstats = (size_t)loc + 1;
  }
  return &agg->stats[loc];
}

/* The id of the (site, owner) override, created empty if new. */
static uint32_t override_id(struct overrides *o, uint32_t site,
                            uint32_t owner) {
  uint64_t key = (uint64_t)site << 32 | owner;
  uint32_t id = keymap_get(&o->index, key);
  if (id == HASHTAB_NONE) {
    grow_array((void **)&o->items, &o->cap, o->count + 1, sizeof *o->items);
    id = (uint32_t)o->count++;
    o->items[id] = (struct override){site, owner, 0, 0};
    keymap_put(&o->index, key, id);
  }
  return id;
}

static void override_add(struct overrides *o, uint32_t id, uint64_t bytes) {
  o->items[id].events++;
  o->items[id].bytes = add_sat(o->items[id].bytes, bytes);
}

static void prefetch_stats(const struct memagg *agg, uint32_t loc) {
  if (loc < agg->nstats) __builtin_prefetch(&agg->stats[loc]);
}

static struct overrides *overrides_of(struct memagg *agg,
                                      enum memprof_event_kind kind) {
  return kind == MEMPROF_FREE ? &agg->free_overrides : &agg->realloc_overrides;
}

/*
** A batch goes through four passes, each prefetching what the next one
** touches: the tables are far bigger than the caches, and one event at a
** time would wait for memory at every step.
**   1. prefetch the live-table slots of the addresses, the locations' stats;
**   2. the live table, in stream order: who owned each block let go;
**   3. find (or add) the (site, owner) override of each free and realloc;
**   4. count.
*/
void memagg_events(void *ud, const struct memprof_event *evs, size_t n) {
  struct memagg *agg = ud;
  uint32_t owner[MEMPROF_BATCH], override[MEMPROF_BATCH];
  for (size_t i = 0; i < n; i++) {
    const struct memprof_event *ev = &evs[i];
    if (ev->kind != MEMPROF_FREE) livetab_prefetch(&agg->live, ev->naddr);
    if (ev->kind != MEMPROF_ALLOC) livetab_prefetch(&agg->live, ev->oaddr);
    prefetch_stats(agg, ev->loc);
  }
  for (size_t i = 0; i < n; i++) {
    const struct memprof_event *ev = &evs[i];
    struct live_block old;
    if (ev->kind == MEMPROF_ALLOC) {
      livetab_put(&agg->live, ev->naddr, ev->nsize, ev->loc);
      continue;
    }
    int known = livetab_take(&agg->live, ev->oaddr, &old);
    owner[i] = known ? old.owner : agg->before_start;
    if (ev->kind == MEMPROF_REALLOC)
      /* A block from before the start is adopted by its reallocator. */
      livetab_put(&agg->live, ev->naddr, ev->nsize, known ? old.owner : ev->loc);
    else if (known)
      prefetch_stats(agg, old.owner);
    keymap_prefetch(&overrides_of(agg, ev->kind)->index,
                    (uint64_t)ev->loc << 32 | owner[i]);
  }
  for (size_t i = 0; i < n; i++) {
    const struct memprof_event *ev = &evs[i];
    if (ev->kind == MEMPROF_ALLOC) continue;
    struct overrides *o = overrides_of(agg, ev->kind);
    override[i] = override_id(o, ev->loc, owner[i]);
    __builtin_prefetch(&o->items[override[i]]);
  }
  for (size_t i = 0; i < n; i++) {
    const struct memprof_event *ev = &evs[i];
    struct memstats *st = stats_of(agg, ev->loc);
    switch (ev->kind) {
    case MEMPROF_ALLOC:
      st->alloc_events++;
      st->alloc_bytes = add_sat(st->alloc_bytes, ev->nsize);
      break;
    case MEMPROF_FREE:
      st->free_events++;
      st->freed_bytes = add_sat(st->freed_bytes, ev->osize);
      /* (The before-start pseudo-location never owns a block.) */
      if (owner[i] != agg->before_start) stats_of(agg, owner[i])->owned_frees++;
      override_add(&agg->free_overrides, override[i], ev->osize);
      break;
    case MEMPROF_REALLOC:
      st->realloc_events++;
      st->realloc_new_bytes = add_sat(st->realloc_new_bytes, ev->nsize);
      st->realloc_old_bytes = add_sat(st->realloc_old_bytes, ev->osize);
      override_add(&agg->realloc_overrides, override[i], ev->osize);
      break;
    }
  }
}

static void stats_add(struct memstats *sum, const struct memstats *st) {
  sum->alloc_events = add_sat(sum->alloc_events, st->alloc_events);
  sum->alloc_bytes = add_sat(sum->alloc_bytes, st->alloc_bytes);
  sum->realloc_events = add_sat(sum->realloc_events, st->realloc_events);
  sum->realloc_new_bytes =
      add_sat(sum->realloc_new_bytes, st->realloc_new_bytes);
  sum->realloc_old_bytes =
      add_sat(sum->realloc_old_bytes, st->realloc_old_bytes);
  sum->free_events = add_sat(sum->free_events, st->free_events);
  sum->freed_bytes = add_sat(sum->freed_bytes, st->freed_bytes);
  sum->owned_frees = add_sat(sum->owned_frees, st->owned_frees);
  sum->live_bytes = add_sat(sum->live_bytes, st->live_bytes);
  sum->live_blocks = add_sat(sum->live_blocks, st->live_blocks);
}

static int override_cmp(const void *pa, const void *pb) {
  const struct override *a = pa, *b = pb;
  if (a->site != b->site) return a->site < b->site ? -1 : 1;
  if (a->bytes != b->bytes) return a->bytes > b->bytes ? -1 : 1;
  if (a->events != b->events) return a->events > b->events ? -1 : 1;
  return a->owner < b->owner ? -1 : a->owner > b->owner;
}

void memagg_finish(struct memagg *agg) {
  LIVETAB_FOREACH(&agg->live, b) {
    struct memstats *st = stats_of(agg, b->owner);
    st->live_bytes = add_sat(st->live_bytes, b->size);
    st->live_blocks++;
  }
  memset(&agg->totals, 0, sizeof agg->totals);
  for (size_t i = 0; i < agg->nstats; i++) stats_add(&agg->totals, &agg->stats[i]);
  /* The index is not needed any more: sort the items by site. */
  struct overrides *all[] = {&agg->realloc_overrides, &agg->free_overrides};
  for (size_t i = 0; i < 2; i++) {
    keymap_free(&all[i]->index);
    if (all[i]->count > 0)
      qsort(all[i]->items, all[i]->count, sizeof *all[i]->items, override_cmp);
  }
}

const struct override *memagg_overrides(const struct overrides *o,
                                        uint32_t site, size_t *count) {
  size_t lo = 0, hi = o->count;
  *count = 0;
  if (hi == 0) return NULL;
  while (lo < hi) { /* the first item of the site */
    size_t mid = lo + (hi - lo) / 2;
    if (o->items[mid].site < site)
      lo = mid + 1;
    else
      hi = mid;
  }
  size_t end = lo;
  while (end < o->count && o->items[end].site == site) end++;
  *count = end - lo;
  return o->items + lo;
}

void memagg_view(const struct memstats *st, enum memagg_view view,
                 uint64_t *events, uint64_t *bytes) {
  switch (view) {
  case VIEW_ALLOC:
    *events = st->alloc_events;
    *bytes = st->alloc_bytes;
    break;
  case VIEW_REALLOC:
    *events = st->realloc_events;
    *bytes = st->realloc_new_bytes;
    break;
  case VIEW_FREE:
    *events = st->free_events;
    *bytes = st->freed_bytes;
    break;
  case VIEW_LIVE:
    *events = st->live_blocks;
    *bytes = st->live_bytes;
    break;
  default: /* VIEW_ALL */
    *events = add_sat(add_sat(st->alloc_events, st->realloc_events),
                      st->free_events);
    *bytes = add_sat(st->alloc_bytes, st->realloc_new_bytes);
    break;
  }
}

struct ranked {
  uint64_t key, tiebreak;
  uint32_t loc;
};

static int ranked_cmp(const void *pa, const void *pb) {
  const struct ranked *a = pa, *b = pb;
  if (a->key != b->key) return a->key > b->key ? -1 : 1;
  if (a->tiebreak != b->tiebreak) return a->tiebreak > b->tiebreak ? -1 : 1;
  return a->loc < b->loc ? -1 : a->loc > b->loc;
}

uint32_t *memagg_rank(const struct memagg *agg, enum memagg_view view,
                      enum memagg_order order, size_t *count) {
  struct ranked *rank = xmalloc(agg->nstats * sizeof *rank);
  size_t n = 0;
  for (size_t i = 0; i < agg->nstats; i++) {
    uint64_t events, bytes;
    memagg_view(&agg->stats[i], view, &events, &bytes);
    if (events == 0) continue;
    int by_bytes = order == ORDER_BYTES;
    rank[n++] = (struct ranked){by_bytes ? bytes : events,
                                by_bytes ? events : bytes, (uint32_t)i};
  }
  qsort(rank, n, sizeof *rank, ranked_cmp);
  uint32_t *ids = xmalloc(n * sizeof *ids);
  for (size_t i = 0; i < n; i++) ids[i] = rank[i].loc;
  free(rank);
  *count = n;
  return ids;
}
