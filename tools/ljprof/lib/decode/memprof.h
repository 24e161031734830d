/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Memprof stream (`ljm`) decoder, versions 3 (the reference's) to 6
** (ours; 6 with labels): turns the events after the prologue into
** allocation events charged to resolved locations, and applies the
** symtab updates the stream carries as it meets them.
*/
#ifndef LJPROF_MEMPROF_H
#define LJPROF_MEMPROF_H

#include <stddef.h>
#include <stdint.h>

#include "lj_profstream.h"
#include "shared/reader.h"
#include "shared/symbols.h"

/* The stack of an event that carries none. */
#define MEMPROF_NO_STACK UINT32_MAX

/* The stream's events as they are numbered there, and the time marks. */
enum memprof_event_kind {
  MEMPROF_ALLOC = AEVENT_ALLOC,     /* naddr, nsize */
  MEMPROF_FREE = AEVENT_FREE,       /* oaddr, osize */
  MEMPROF_REALLOC = AEVENT_REALLOC, /* oaddr, osize -> naddr, nsize */
  MEMPROF_MARK = AEVENT_MASK + 1 /* no event's: a v5 time mark; naddr,
                                    nanoseconds since the start; oaddr, the
                                    id of the heap snapshot taken there (0:
                                    none); no location (loc 0), no stack */
};

struct memprof_event {
  enum memprof_event_kind kind;
  uint32_t loc;   /* location id in the resolver */
  uint32_t stack; /* stack id in the resolver (v5), or MEMPROF_NO_STACK */
  uint32_t labels; /* v6: the label set an alloc or realloc with a stack
                      or a weight was made under (labelsets.h); else
                      LABELS_NONE */
  uint64_t oaddr, osize;
  uint64_t naddr, nsize;
  /* A sampled stream's estimates: the bytes the old and the new block
  ** stand for; 0 where the block stands for itself. */
  uint64_t oweight, nweight;
};

/* The blocks an estimate of bytes stands for: at least one. */
static inline uint64_t memprof_objects(uint64_t weight, uint64_t size) {
  if (!weight || !size || weight <= size) return 1;
  return (weight + size / 2) / size;
}

/*
** Events reach a sink in batches, in stream order: a consumer can then work
** on several at once (prefetching what they touch hides memory latency).
** 256 of 64 bytes stay in the first-level cache, and each batch's fixed
** costs (a call, a run's set-up, the first prefetches) fall to a quarter
** of 64's: 2.6 M instructions fewer on typical.
*/
#define MEMPROF_BATCH 256

/* A batch's locations are all below nlocs: the resolver's count of them
** when the batch was made (a sink in another thread cannot ask it). */
struct memprof_sink {
  void (*events)(void *ud, const struct memprof_event *evs, size_t n,
                 size_t nlocs);
  void *ud;
  /* Optional: where the decoder writes its next batch (room for
  ** MEMPROF_BATCH events), so that a sink that keeps the events need not
  ** copy them; NULL: into the decoder's own. */
  struct memprof_event *(*next_batch)(void *ud);
};

/*
** Decode the events of a stream of that version up to and with the end
** byte, delivering every complete event to the sink (also when the stream
** is damaged: all events before the damage). Returns 1 at the end byte, 0
** on error (in the reader).
*/
int memprof_read_events(struct reader *r, struct symbols *sym, unsigned version,
                        const struct memprof_sink *sink);

#endif
