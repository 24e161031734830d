/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Memprof aggregation: per-location counters, the live-block table, and
** which allocation sites the reallocations and frees of each location
** touched ("overrides").
**
** Ownership: a block belongs to the location that allocated it, and keeps
** that owner when it is reallocated (the realloc event itself counts for
** the realloc location). A block allocated before profiling began has no
** known owner: touching it overrides the pseudo-location "allocated before
** profiling started", and if it is reallocated the realloc location adopts
** it. live_bytes / live_blocks of a location are what the blocks it owns
** still hold at the end.
*/
#ifndef LJPROF_MEMAGG_H
#define LJPROF_MEMAGG_H

#include <stddef.h>
#include <stdint.h>

#include "heapline.h"
#include "shared/livetab.h"
#include "decode/memprof.h"
#include "shared/symbols.h"
#include "shared/symimport.h"

/*
** live_bytes and live_blocks: what the location's blocks hold, kept as they
** come and go, final once memagg_finish() ran. (Apart: side by side, GCC
** made their two adds one vector's load, add and store.)
*/
struct memstats {
  uint64_t alloc_events, alloc_bytes;
  uint64_t live_bytes;
  uint64_t realloc_events, realloc_new_bytes, realloc_old_bytes;
  uint64_t live_blocks;
  uint64_t free_events, freed_bytes;
  uint64_t owned_frees; /* blocks owned here that some free released */
};

/* (site and owner first, side by side: a probe compares them as one
** word.) */
struct override {
  uint32_t site;  /* the realloc or free location */
  uint32_t owner; /* the location owning the memory it touched */
  uint64_t events, bytes; /* no events: an empty slot of the table */
};

/*
** The overrides of one event kind. While events come, the (site, owner)
** pairs and their counters sit in the slots of an open-addressing table
** (one memory access counts an event), and a merge counts them into the
** first stream's; memagg_pack() then packs them into an array grouped by
** site: those of site s are items[site_start[s]] up to
** items[site_start[s + 1]], for s below nsites.
*/
struct overrides {
  struct override *items;
  size_t mask; /* slot count - 1 while counting, 0 once a list */
  unsigned shift; /* while counting: 64 - log2(slot count) */
  size_t count;
  size_t *site_start, nsites; /* set when packed */
};

/*
** Streams with call stacks (v5): counters by (site, stack) pair, the site
** an event's location, the stack the one it carries (MEMPROF_NO_STACK for
** none); in v6, by (site, stack, label set). A block belongs to the pair
** that allocated it, as to its site.
*/
struct stackpair {
  uint32_t site, stack;
  uint32_t stream; /* of a merge: which one it came from (0: the first) */
  uint32_t labels; /* v6: the label set its events were made under */
  uint64_t alloc_objects, alloc_bytes; /* allocations and reallocations */
  uint64_t live_objects, live_bytes;   /* set by memagg_finish() */
};

struct memagg {
  struct symbols *sym;
  struct memstats *stats; /* by location id */
  size_t nstats, stats_cap;
  struct memstats totals; /* set by memagg_finish() */
  struct livetab live;
  struct overrides realloc_overrides, free_overrides;
  uint32_t before_start; /* location id of unknown owners */
  /* With call stacks: */
  struct stackpair *pairs;
  size_t npairs, pairs_cap;
  struct keymap3 pair_index; /* (site, stack, labels) -> pair id */
  struct livetab pair_live; /* blocks by the pair that owns them */
  /* Sampled streams: address -> the bytes a live block stands for. */
  struct livetab scaled;
  /* Streams with time marks (v5): the heap at each mark. */
  struct heapline heap;
};

/* Did the stream carry call stacks? */
static inline int memagg_has_stacks(const struct memagg *agg) {
  return agg->sym->nstacks != 0;
}

void memagg_init(struct memagg *agg, struct symbols *sym);
void memagg_free(struct memagg *agg);

/* A memprof sink: pass the memagg as ud. */
void memagg_events(void *ud, const struct memprof_event *evs, size_t n,
                   size_t nlocs);

/* After the last event: settle the live figures, compute the totals. */
void memagg_finish(struct memagg *agg);

/*
** Streams merged, read one after the other into one symbol table
** (symbols_forget_bindings()), each into an aggregation of its own:
** memagg_merge() adds the finished aggregation of the stream numbered
** `stream` to the finished one of those before it, whose heap over time
** it drops (each stream has its own clock). The live blocks went with
** each stream's end: memory holds what is distinct, not what was live.
*/
void memagg_merge(struct memagg *into, const struct memagg *from,
                  uint32_t stream);

/* After memagg_finish(), or the last memagg_merge() into agg, before a
** report: its overrides grouped by site, for memagg_overrides(). Once. */
void memagg_pack(struct memagg *agg);

/* A finished aggregation of a stream read with a resolver of its own,
** its ids made the merge's (symimport_add()), for memagg_merge() into an
** aggregation of the merge's resolver, and for nothing else (its
** overrides' table can no longer be searched). Its heap over time is not. */
void memagg_remap(struct memagg *agg, const struct symimport *map);

/*
** What a stream of a merge leaves to the next one read on its thread (all
** zero before the first): its table of blocks, emptied by the finish
** (livetab_keep()), and how many override pairs of each kind it counted.
** Streams of one program count about as many: the next one's tables
** start that large, instead of doubling up to it from a few slots (each
** doubling moves every pair: 4 % of the CPU time of a merge of eight
** 20 MiB streams).
*/
struct memagg_spare {
  struct livetab blocks;
  size_t realloc_pairs, free_pairs;
};

/* After memagg_finish(), for a merge: the live blocks' tables freed (the
** figures they gave stay), what the next stream takes left in *spare. */
void memagg_leave_spare(struct memagg *agg, struct memagg_spare *spare);
/* Just after memagg_init(): take over what *spare holds. */
void memagg_take_spare(struct memagg *agg, struct memagg_spare *spare);
void memagg_spare_free(struct memagg_spare *spare);

/*
** What the streams of a merge say of themselves: a stream's own (m)
** added to those of the streams before it (*into, zeroed before the
** first). Streams of every event and sampled ones do not add up, nor
** ones of version 5 (counted by call stack) and older ones: 0, and why
** in why[size]. 1 otherwise.
*/
int memagg_merge_meta(struct memprof_meta *into, const struct memprof_meta *m,
                      int first, char *why, size_t size);

static inline const struct memstats *memagg_stats(const struct memagg *agg,
                                                  uint32_t loc) {
  static const struct memstats none;
  return loc < agg->nstats ? &agg->stats[loc] : &none;
}

/* The overrides of a site, most bytes first (after memagg_pack()). */
const struct override *memagg_overrides(const struct overrides *o,
                                        uint32_t site, size_t *count);

/* What a report section ranks locations by. */
enum memagg_view {
  VIEW_ALLOC,   /* alloc events, allocated bytes */
  VIEW_REALLOC, /* realloc events, bytes of the new blocks */
  VIEW_FREE,    /* free events, freed bytes */
  VIEW_LIVE,    /* live blocks, live bytes */
  VIEW_ALL      /* all events, bytes allocated and reallocated */
};

enum memagg_order { ORDER_BYTES, ORDER_EVENTS };

void memagg_view(const struct memstats *st, enum memagg_view view,
                 uint64_t *events, uint64_t *bytes);

/* What the reallocations (VIEW_REALLOC) or frees (VIEW_FREE) touched;
** NULL for other views. */
static inline const struct overrides *
memagg_view_overrides(const struct memagg *agg, enum memagg_view view) {
  return view == VIEW_REALLOC ? &agg->realloc_overrides
         : view == VIEW_FREE  ? &agg->free_overrides
                              : NULL;
}

/* The events of an event view (VIEW_ALLOC, VIEW_REALLOC, VIEW_FREE), the
** bytes they added and the bytes they removed. */
void memagg_event_bytes(const struct memstats *st, enum memagg_view view,
                        uint64_t *events, uint64_t *added, uint64_t *removed);

/*
** The locations a view shows (those with events, or live blocks), best
** first: by the ordering key, then the other one, then first seen.
** Returns a malloc'd array of *count location ids.
*/
uint32_t *memagg_rank(const struct memagg *agg, enum memagg_view view,
                      enum memagg_order order, size_t *count);

#endif
