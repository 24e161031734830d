/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "memagg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/sort.h"
#include "shared/util.h"

#define OVERRIDES_INITIAL_SLOTS 1024
/* A stream before sizes another's table up to this many slots (24 MiB);
** past it, the table grows as it fills. */
#define OVERRIDES_PRESIZE_MAX (1u << 20)

/* The table's slots, a power of two of them, none used. */
static void new_override_slots(struct overrides *o, size_t count) {
  /* No events: empty. */
  o->items = table_calloc(count, sizeof(struct override));
  o->mask = count - 1;
  o->shift = 64 - (unsigned)__builtin_ctzll(count);
}

static void overrides_init(struct overrides *o) {
  new_override_slots(o, OVERRIDES_INITIAL_SLOTS);
  o->count = 0;
  o->site_start = NULL;
  o->nsites = 0;
}

void memagg_init(struct memagg *agg, struct symbols *sym) {
  memset(agg, 0, sizeof *agg);
  agg->sym = sym;
  livetab_init(&agg->live);
  livetab_init(&agg->pair_live);
  livetab_init(&agg->scaled);
  heapline_init(&agg->heap);
  overrides_init(&agg->realloc_overrides);
  overrides_init(&agg->free_overrides);
  agg->before_start = symbols_loc_before_start(sym);
}

/* The items as a table (mask set: while counting) or a list. */
static void free_override_items(struct overrides *o) {
  table_free(o->items, o->mask ? o->mask + 1 : o->count, sizeof *o->items);
}

static void overrides_free(struct overrides *o) {
  free_override_items(o);
  free(o->site_start);
  o->items = NULL;
  o->site_start = NULL;
}

void memagg_free(struct memagg *agg) {
  free(agg->stats);
  livetab_free(&agg->live);
  livetab_free(&agg->pair_live);
  livetab_free(&agg->scaled);
  heapline_free(&agg->heap);
  free(agg->pairs);
  keymap3_free(&agg->pair_index);
  overrides_free(&agg->realloc_overrides);
  overrides_free(&agg->free_overrides);
  memset(agg, 0, sizeof *agg);
}

/* Extend an array by location id to hold index, new elements zeroed. */
static void reach(void **items, size_t *count, size_t *cap, uint32_t index,
                  size_t elem_size) {
  if (index < *count) return;
  grow_array(items, cap, (size_t)index + 1, elem_size);
  memset((char *)*items + *count * elem_size, 0,
         ((size_t)index + 1 - *count) * elem_size);
  *count = (size_t)index + 1;
}

static inline struct memstats *stats_of(struct memagg *agg, uint32_t loc) {
  if (loc >= agg->nstats)
    reach((void **)&agg->stats, &agg->nstats, &agg->stats_cap, loc,
          sizeof *agg->stats);
  return &agg->stats[loc];
}

/* A pair's site and owner as one word, as they lie at a slot's start:
** a probe compares a slot's pair with one load. */
static inline uint64_t slot_pair(const struct override *ov) {
  uint64_t pair;
  memcpy(&pair, ov, sizeof pair);
  return pair;
}

/* The same word made in registers (a struct written to the stack and
** read back as one word stalled the load: 1.4x the time on many-sites). */
static inline uint64_t pair_of_ids(uint32_t site, uint32_t owner) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return (uint64_t)owner << 32 | site;
#else
  return (uint64_t)site << 32 | owner;
#endif
}

static size_t override_home(const struct overrides *o, uint64_t pair) {
  return hash_home(pair, o->shift);
}

static void grow_overrides(struct overrides *o) {
  struct override *old = o->items;
  size_t nold = o->mask + 1;
  new_override_slots(o, nold * 2);
  for (size_t i = 0; i < nold; i++) {
    if (!old[i].events) continue;
    size_t j = override_home(o, slot_pair(&old[i]));
    while (o->items[j].events) j = (j + 1) & o->mask;
    o->items[j] = old[i];
  }
  table_free(old, nold, sizeof *old);
}

/* Count events of site that touched memory of owner. */
ALWAYS_INLINE void override_add(struct overrides *o, uint32_t site,
                                uint32_t owner, uint64_t events,
                                uint64_t bytes) {
  uint64_t pair = pair_of_ids(site, owner);
  size_t i = override_home(o, pair);
  struct override *ov = &o->items[i];
  while (ov->events && slot_pair(ov) != pair)
    ov = &o->items[i = (i + 1) & o->mask];
  if (!ov->events) {
    *ov = (struct override){site, owner, events, bytes};
    /* Load at most one half. */
    if (++o->count * 2 > o->mask + 1) grow_overrides(o);
    return;
  }
  ov->events += events; /* events read: never near 2^64 */
  ov->bytes = add_sat(ov->bytes, bytes);
}

/* The slots holding the overrides: the table's (empty ones among them),
** or once packed, the list's. */
static size_t override_slots(const struct overrides *o) {
  return o->mask ? o->mask + 1 : o->count;
}

static struct overrides *overrides_of(struct memagg *agg,
                                      enum memprof_event_kind kind) {
  return kind == MEMPROF_FREE ? &agg->free_overrides : &agg->realloc_overrides;
}

/*
** What an event counts for: in a sampled stream, the estimates. `sampled`
** is a constant in each copy of the counting: 0 where no event has a
** weight, so that the others count without looking.
*/
ALWAYS_INLINE uint64_t new_bytes(const struct memprof_event *ev, int sampled) {
  return sampled && ev->nweight ? ev->nweight : ev->nsize;
}

ALWAYS_INLINE uint64_t old_bytes(const struct memprof_event *ev, int sampled) {
  return sampled && ev->oweight ? ev->oweight : ev->osize;
}

ALWAYS_INLINE uint64_t new_objects(const struct memprof_event *ev,
                                   int sampled) {
  return sampled ? memprof_objects(ev->nweight, ev->nsize) : 1;
}

ALWAYS_INLINE uint64_t old_objects(const struct memprof_event *ev,
                                   int sampled) {
  return sampled ? memprof_objects(ev->oweight, ev->osize) : 1;
}

/* A count of objects: one an event or block where they are not
** estimates (never near 2^64). */
ALWAYS_INLINE uint64_t add_objects(uint64_t count, uint64_t objects,
                                   int sampled) {
  return sampled ? add_sat(count, objects) : count + 1;
}

static uint32_t new_pair(void *ud, uint32_t site, uint32_t stack,
                         uint32_t labels) {
  struct memagg *agg = ud;
  grow_array((void **)&agg->pairs, &agg->pairs_cap, agg->npairs + 1,
             sizeof *agg->pairs);
  uint32_t id = (uint32_t)agg->npairs++;
  agg->pairs[id] = (struct stackpair){site, stack, 0, labels, 0, 0, 0, 0};
  return id;
}

/* The pair of (site, stack, labels), added if new (a labelled one with
** the unlabelled one of its site and stack, empty). */
static uint32_t pair_of(struct memagg *agg, uint32_t site, uint32_t stack,
                        uint32_t labels) {
  return keymap3_id(&agg->pair_index, site, stack, labels, new_pair, agg);
}

/* Streams with stacks: the pair of each allocation counts it and owns the
** block; a reallocation counts for its own pair, the block keeps its
** owner (or is adopted, as by site). */
static void count_pair(struct memagg *agg, const struct memprof_event *ev) {
  struct live_block old;
  int known = 0;
  if (ev->kind != MEMPROF_ALLOC)
    known = livetab_take(&agg->pair_live, ev->oaddr, &old);
  if (ev->kind == MEMPROF_FREE) return;
  uint32_t pair = pair_of(agg, ev->loc, ev->stack, ev->labels);
  struct stackpair *p = &agg->pairs[pair];
  p->alloc_objects = add_sat(p->alloc_objects, new_objects(ev, 1));
  p->alloc_bytes = add_sat(p->alloc_bytes, new_bytes(ev, 1));
  livetab_put(&agg->pair_live, ev->naddr, ev->nsize, known ? old.owner : pair);
}

/* Sampled streams: what each live block stands for. */
static void count_scaled(struct memagg *agg, const struct memprof_event *ev) {
  struct live_block old;
  if (ev->kind != MEMPROF_ALLOC) livetab_take(&agg->scaled, ev->oaddr, &old);
  if (ev->kind != MEMPROF_FREE && ev->nweight)
    livetab_put(&agg->scaled, ev->naddr, ev->nweight, 0);
}

/* Heap over time: what an event moved, for the block's owner (known: the
** old block had one; a free of a block from before the start moves
** nothing, its reallocation adds the new block to its adopter). */
static void count_heap(struct memagg *agg, const struct memprof_event *ev,
                       int known, uint32_t owner) {
  heapline_event(&agg->heap);
  if (known) heapline_sub(&agg->heap, owner, old_bytes(ev, 1));
  if (ev->kind != MEMPROF_FREE)
    heapline_add(&agg->heap, owner, new_bytes(ev, 1));
}

/*
** What each location owns live, kept as blocks come and go: their charges
** (livetab_charge(): exact, never wrapping) and their count. At the end,
** memagg_finish() adds what big blocks hold beyond their charge. (A walk of
** every slot at the end took 11 M instructions of typical's 243 M; this
** costs 6.6 M, and the figures are there at any time.)
*/
ALWAYS_INLINE void live_add(struct memstats *st, uint64_t charge) {
  st->live_bytes += charge;
  st->live_blocks++;
}

ALWAYS_INLINE void live_sub(struct memstats *st, uint64_t charge) {
  st->live_bytes -= charge;
  st->live_blocks--;
}

/* The new block of an event, owned by owner; a block it replaced (at the
** same address: its free was lost) is live no more. */
ALWAYS_INLINE void put_live(struct memagg *agg,
                            const struct memprof_event *ev, uint32_t owner) {
  uint64_t replaced = livetab_put(&agg->live, ev->naddr, ev->nsize, owner);
  live_add(&agg->stats[owner], livetab_charge(ev->nsize));
  if (__builtin_expect(replaced != 0, 0))
    live_sub(&agg->stats[livetab_word_owner(replaced)],
             livetab_word_charge(replaced));
}

/* An allocation: counted for its location, which owns the block. (The
** counters of every location a batch names are there: memagg_events().) */
ALWAYS_INLINE void count_alloc(struct memagg *agg,
                               const struct memprof_event *ev, int timed,
                               int sampled) {
  struct memstats *st = &agg->stats[ev->loc];
  st->alloc_events =
      add_objects(st->alloc_events, new_objects(ev, sampled), sampled);
  st->alloc_bytes = add_sat(st->alloc_bytes, new_bytes(ev, sampled));
  put_live(agg, ev, ev->loc);
  if (timed) count_heap(agg, ev, 0, ev->loc);
}

/* A free or a reallocation: counted for its location, and for the
** (location, owner) pair of the block it let go; a reallocated block keeps
** its owner, or, from before the start, is adopted by its reallocator.
** In a copy for each kind (the event's, a constant). */
ALWAYS_INLINE void count_release(struct memagg *agg,
                                 const struct memprof_event *ev,
                                 enum memprof_event_kind kind, int timed,
                                 int sampled) {
  struct live_block old;
  int known = livetab_take(&agg->live, ev->oaddr, &old);
  uint32_t owner = known ? old.owner : agg->before_start;
  uint32_t keeper = known ? owner : ev->loc; /* of a reallocated block */
  struct memstats *st = &agg->stats[ev->loc];
  /* (The before-start pseudo-location never owns a block.) */
  if (known) live_sub(&agg->stats[owner], old.charge);
  if (kind == MEMPROF_REALLOC) {
    st->realloc_events = add_objects(st->realloc_events,
                                     new_objects(ev, sampled), sampled);
    st->realloc_new_bytes =
        add_sat(st->realloc_new_bytes, new_bytes(ev, sampled));
    st->realloc_old_bytes =
        add_sat(st->realloc_old_bytes, old_bytes(ev, sampled));
    put_live(agg, ev, keeper);
  } else {
    st->free_events =
        add_objects(st->free_events, old_objects(ev, sampled), sampled);
    st->freed_bytes = add_sat(st->freed_bytes, old_bytes(ev, sampled));
    if (known) agg->stats[owner].owned_frees++;
  }
  if (timed) count_heap(agg, ev, known, keeper);
  override_add(overrides_of(agg, kind), ev->loc, owner, 1,
               old_bytes(ev, sampled));
}

/* Events this far ahead have the live-table slot they look up fetched
** while the ones before them are counted: the table outgrows the
** caches, and each event would otherwise wait for memory. */
#define PREFETCH_AHEAD 8

/* The block an event looks up first: the one it lets go, else the new
** one (a time mark's addresses name no block: a harmless fetch). One
** address an event, chosen without a branch: a reallocation's new block
** is not fetched (most often one just freed, still cached), and typical
** takes 2.3 M instructions fewer (1 %). */
ALWAYS_INLINE void prefetch_blocks(const struct memagg *agg,
                                   const struct memprof_event *ev) {
  livetab_prefetch(&agg->live, ev->kind & AEVENT_FREE ? ev->oaddr : ev->naddr);
}

/* Each event in stream order, at once; in a copy for v5 on (stack 0 is
** there from the start: time marks, stacks, samples may come), and one for
** earlier streams, which have none of them. */
ALWAYS_INLINE void count_events(struct memagg *agg,
                                const struct memprof_event *evs, size_t n,
                                int v5) {
  int timed = v5 && agg->sym->memprof.has_config;
  int sampled = v5 && agg->sym->memprof.sample != 0;
  for (size_t i = 0; i < n && i < PREFETCH_AHEAD; i++)
    prefetch_blocks(agg, &evs[i]);
  for (size_t i = 0; i < n; i++) {
    const struct memprof_event *ev = &evs[i];
    if (i + PREFETCH_AHEAD < n) prefetch_blocks(agg, &evs[i + PREFETCH_AHEAD]);
    if (v5 && ev->kind == MEMPROF_MARK) {
      heapline_mark(&agg->heap, ev->naddr);
      continue;
    }
    if (ev->kind == MEMPROF_ALLOC)
      count_alloc(agg, ev, timed, v5);
    else if (ev->kind == MEMPROF_FREE)
      count_release(agg, ev, MEMPROF_FREE, timed, v5);
    else
      count_release(agg, ev, MEMPROF_REALLOC, timed, v5);
    if (v5) count_pair(agg, ev);
    if (sampled) count_scaled(agg, ev);
  }
}

void memagg_events(void *ud, const struct memprof_event *evs, size_t n,
                   size_t nlocs) {
  struct memagg *agg = ud;
  /* Counters for every location the batch may name, so that counting
  ** indexes them without a test. */
  if (nlocs > 0) stats_of(agg, (uint32_t)(nlocs - 1));
  if (memagg_has_stacks(agg))
    count_events(agg, evs, n, 1);
  else
    count_events(agg, evs, n, 0);
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

/* Within a site: most bytes first, then most events, then by owner. */
static int override_cmp(const void *pa, const void *pb) {
  const struct override *a = pa, *b = pb;
  if (a->bytes != b->bytes) return a->bytes > b->bytes ? -1 : 1;
  if (a->events != b->events) return a->events > b->events ? -1 : 1;
  return a->owner < b->owner ? -1 : a->owner > b->owner;
}

/*
** The table is not needed any more: the pairs go to an array grouped by
** site, by a counting sort (every site id is below nsites), and only each
** site's own pairs are compared. One qsort() of all the pairs took most of
** the time left after the last event.
*/
static void pack_overrides(struct overrides *o, size_t nsites) {
  size_t nslots = o->mask + 1;
  /* Counted at start[site + 2], so that after the prefix sums start[site + 1]
  ** is where the site's pairs go, and, once they are placed, where they end. */
  size_t *start = xcalloc(nsites + 2, sizeof *start);
  for (size_t i = 0; i < nslots; i++)
    if (o->items[i].events) start[o->items[i].site + 2]++;
  for (size_t s = 2; s < nsites + 2; s++) start[s] += start[s - 1];
  /* Present at once (table_calloc()): written in no order, the list
  ** faulted in page by page took two thirds of the packing. */
  struct override *packed = table_calloc(o->count, sizeof *packed);
  for (size_t i = 0; i < nslots; i++)
    if (o->items[i].events)
      packed[start[o->items[i].site + 1]++] = o->items[i];
  free_override_items(o);
  for (size_t s = 0; s < nsites; s++)
    sort_inline(packed + start[s], start[s + 1] - start[s], sizeof *packed,
                override_cmp);
  o->items = packed;
  o->mask = 0;
  o->site_start = start;
  o->nsites = nsites;
}

/* A live block's bytes and blocks: what it stands for, when sampled. */
static void live_estimate(const struct memagg *agg, const struct live_block *b,
                          uint64_t *bytes, uint64_t *blocks) {
  struct live_block w;
  *bytes = b->size;
  *blocks = 1;
  if (agg->sym->memprof.sample &&
      livetab_lookup(&agg->scaled, b->addr, &w)) {
    *bytes = w.size;
    *blocks = memprof_objects(w.size, b->size);
  }
}

/* Sampled streams: what each location's live blocks stand for, in place
** of their counts (a walk of every block: fewer than the events). */
static void estimate_live(struct memagg *agg) {
  struct live_block b;
  for (size_t i = 0; i < agg->nstats; i++)
    agg->stats[i].live_bytes = agg->stats[i].live_blocks = 0;
  for (size_t pos = 0; livetab_next(&agg->live, &pos, &b);) {
    struct memstats *st = &agg->stats[b.owner]; /* counted: there */
    uint64_t bytes, blocks;
    live_estimate(agg, &b, &bytes, &blocks);
    st->live_bytes = add_sat(st->live_bytes, bytes);
    st->live_blocks = add_sat(st->live_blocks, blocks);
  }
}

/* Big blocks live at the end: their real sizes for their charges (the
** sum saturates, as any of bytes). */
static void settle_big_blocks(struct memagg *agg) {
  struct live_block b;
  for (size_t pos = 0; livetab_next_big(&agg->live, &pos, &b);) {
    struct memstats *st = &agg->stats[b.owner];
    st->live_bytes = add_sat(st->live_bytes - LIVETAB_BIG_SIZE, b.size);
  }
}

void memagg_finish(struct memagg *agg) {
  struct live_block b;
  heapline_finish(&agg->heap);
  if (agg->sym->memprof.sample)
    estimate_live(agg);
  else
    settle_big_blocks(agg);
  for (size_t pos = 0; livetab_next(&agg->pair_live, &pos, &b);) {
    struct stackpair *p = &agg->pairs[b.owner];
    uint64_t bytes, blocks;
    live_estimate(agg, &b, &bytes, &blocks);
    p->live_bytes = add_sat(p->live_bytes, bytes);
    p->live_objects = add_sat(p->live_objects, blocks);
  }
  memset(&agg->totals, 0, sizeof agg->totals);
  for (size_t i = 0; i < agg->nstats; i++) stats_add(&agg->totals, &agg->stats[i]);
}

void memagg_pack(struct memagg *agg) {
  struct overrides *kinds[] = {&agg->realloc_overrides, &agg->free_overrides};
  for (size_t k = 0; k < 2; k++)
    if (kinds[k]->mask)
      pack_overrides(kinds[k], agg->nstats);
}

/* The overrides of from counted into into's table: each merge costs what
** it adds, not what the merges before it gathered. */
static void merge_overrides(struct overrides *into,
                            const struct overrides *from) {
  for (size_t i = 0, n = override_slots(from); i < n; i++)
    if (from->items[i].events)
      override_add(into, from->items[i].site, from->items[i].owner,
                   from->items[i].events, from->items[i].bytes);
}

void memagg_merge(struct memagg *into, const struct memagg *from,
                  uint32_t stream) {
  for (size_t loc = 0; loc < from->nstats; loc++)
    stats_add(stats_of(into, (uint32_t)loc), &from->stats[loc]);
  stats_add(&into->totals, &from->totals);
  merge_overrides(&into->realloc_overrides, &from->realloc_overrides);
  merge_overrides(&into->free_overrides, &from->free_overrides);
  for (size_t i = 0; i < from->npairs; i++) {
    const struct stackpair *fp = &from->pairs[i];
    int added = keymap3_get(&into->pair_index, fp->site, fp->stack,
                            fp->labels) == HASHTAB_NONE;
    /* may move pairs */
    uint32_t id = pair_of(into, fp->site, fp->stack, fp->labels);
    struct stackpair *p = &into->pairs[id];
    if (added) p->stream = stream;
    p->alloc_objects = add_sat(p->alloc_objects, fp->alloc_objects);
    p->alloc_bytes = add_sat(p->alloc_bytes, fp->alloc_bytes);
    p->live_objects = add_sat(p->live_objects, fp->live_objects);
    p->live_bytes = add_sat(p->live_bytes, fp->live_bytes);
  }
  heapline_free(&into->heap);
  heapline_init(&into->heap);
  heapline_finish(&into->heap);
}

static int stats_empty(const struct memstats *st) {
  static const struct memstats none;
  return !memcmp(st, &none, sizeof none);
}

/* The counters by location, each moved to the location it maps to. */
static void remap_stats(struct memagg *agg, const uint32_t *loc) {
  size_t nstats = 0;
  for (size_t i = 0; i < agg->nstats; i++)
    if (!stats_empty(&agg->stats[i]) && loc[i] >= nstats) nstats = loc[i] + 1;
  struct memstats *stats = xcalloc(nstats ? nstats : 1, sizeof *stats);
  for (size_t i = 0; i < agg->nstats; i++)
    if (!stats_empty(&agg->stats[i])) stats[loc[i]] = agg->stats[i];
  free(agg->stats);
  agg->stats = stats;
  agg->nstats = agg->stats_cap = nstats;
}

/* In place, for a merge to count: the pairs stay in their slots, no
** longer where their keys hash (the table is only read from now on). */
static void remap_overrides(struct overrides *o, const uint32_t *loc) {
  for (size_t i = 0, n = override_slots(o); i < n; i++) {
    if (!o->items[i].events) continue;
    o->items[i].site = loc[o->items[i].site];
    o->items[i].owner = loc[o->items[i].owner];
  }
}

void memagg_remap(struct memagg *agg, const struct symimport *map) {
  remap_stats(agg, map->loc);
  remap_overrides(&agg->realloc_overrides, map->loc);
  remap_overrides(&agg->free_overrides, map->loc);
  for (size_t i = 0; i < agg->npairs; i++) {
    struct stackpair *p = &agg->pairs[i];
    p->site = map->loc[p->site];
    if (p->stack != MEMPROF_NO_STACK) p->stack += map->stack_base;
    p->labels = map->labels[p->labels];
  }
}

/* Room for as many pairs as another stream counted, at most half full;
** a table still empty. */
static void presize_overrides(struct overrides *o, size_t pairs) {
  size_t slots = OVERRIDES_INITIAL_SLOTS;
  while (slots / 2 <= pairs && slots < OVERRIDES_PRESIZE_MAX) slots *= 2;
  if (o->count || slots == o->mask + 1) return;
  table_free(o->items, o->mask + 1, sizeof *o->items);
  new_override_slots(o, slots);
}

void memagg_take_spare(struct memagg *agg, struct memagg_spare *spare) {
  livetab_reuse(&agg->live, &spare->blocks);
  presize_overrides(&agg->realloc_overrides, spare->realloc_pairs);
  presize_overrides(&agg->free_overrides, spare->free_pairs);
}

void memagg_leave_spare(struct memagg *agg, struct memagg_spare *spare) {
  livetab_keep(&agg->live, &spare->blocks);
  livetab_free(&agg->pair_live);
  livetab_free(&agg->scaled);
  spare->realloc_pairs = agg->realloc_overrides.count;
  spare->free_pairs = agg->free_overrides.count;
}

void memagg_spare_free(struct memagg_spare *spare) {
  livetab_free(&spare->blocks);
}

static int sampled(const struct memprof_meta *m) {
  return m->has_config && m->sample;
}

/* A v5 stream (it has a config record) is counted by (site, stack) pair
** too, even without stacks (memagg_has_stacks()); v3 and v4 by site. */
static int by_stack(const struct memprof_meta *m) {
  return m->has_config;
}

int memagg_merge_meta(struct memprof_meta *into, const struct memprof_meta *m,
                      int first, char *why, size_t size) {
  if (first) {
    *into = *m;
    return 1;
  }
  if (sampled(m) != sampled(into)) {
    snprintf(why, size, "%s, the others %s",
             sampled(m) ? "sampled" : "every event",
             sampled(into) ? "sampled" : "every event");
    return 0;
  }
  if (by_stack(m) != by_stack(into)) {
    snprintf(why, size, "%s, the others %s",
             by_stack(m) ? "version 5 (call stacks)" : "version 3 or 4",
             by_stack(into) ? "version 5 (call stacks)" : "version 3 or 4");
    return 0;
  }
  into->native &= m->native;
  into->has_stats &= m->has_stats;
  into->nstacks = add_sat(into->nstacks, m->nstacks);
  into->full = add_sat(into->full, m->full);
  into->truncated = add_sat(into->truncated, m->truncated);
  into->samples = add_sat(into->samples, m->samples);
  into->untracked = add_sat(into->untracked, m->untracked);
  return 1;
}

const struct override *memagg_overrides(const struct overrides *o,
                                        uint32_t site, size_t *count) {
  if (site >= o->nsites) {
    *count = 0;
    return NULL;
  }
  *count = o->site_start[site + 1] - o->site_start[site];
  return o->items + o->site_start[site];
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

void memagg_event_bytes(const struct memstats *st, enum memagg_view view,
                        uint64_t *events, uint64_t *added, uint64_t *removed) {
  uint64_t bytes;
  memagg_view(st, view, events, &bytes);
  *added = view == VIEW_FREE ? 0 : bytes;
  *removed = view == VIEW_ALLOC  ? 0
             : view == VIEW_FREE ? st->freed_bytes
                                 : st->realloc_old_bytes;
}

uint32_t *memagg_rank(const struct memagg *agg, enum memagg_view view,
                      enum memagg_order order, size_t *count) {
  struct rank_item *rank = xmalloc((agg->nstats ? agg->nstats : 1) *
                                   sizeof *rank);
  size_t n = 0;
  for (size_t i = 0; i < agg->nstats; i++) {
    uint64_t events, bytes;
    memagg_view(&agg->stats[i], view, &events, &bytes);
    if (events == 0) continue;
    int by_bytes = order == ORDER_BYTES;
    rank[n++] = (struct rank_item){by_bytes ? bytes : events,
                                   by_bytes ? events : bytes, (uint32_t)i};
  }
  *count = n;
  return rank_ids(rank, n);
}
