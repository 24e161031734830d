/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The live-block table: every block allocated and not yet freed, by
** address, with its size and the location that owns it. It is the one
** structure that grows with the program profiled (not with the stream), and
** it is on the hot path of every event: open addressing, linear probing,
** deletion by backward shift (no tombstones, so churn does not degrade it).
**
** A slot takes 16 bytes, four to a cache line: the address, and the owner
** and the size packed in one word. A size of 4 GiB or more does not fit
** there: its slot holds a marker, and the size sits in a second table of
** the same kind (such blocks are rare, and only a hostile stream has many).
*/
#ifndef LJPROF_LIVETAB_H
#define LJPROF_LIVETAB_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct live_block {
  uint64_t addr;
  uint64_t size;
  uint32_t owner; /* location id, below UINT32_MAX */
};

/* A slot of an address map; value 0 marks an empty slot. */
struct addr_slot {
  uint64_t addr;
  uint64_t value;
};

/* Addresses to nonzero values, with removal. */
struct addr_map {
  struct addr_slot *slots; /* aligned to a cache line */
  size_t mask;             /* slot count - 1 */
  size_t count;
};

struct livetab {
  struct addr_map blocks;    /* address -> (owner + 1) << 32 | size */
  struct addr_map big_sizes; /* address -> size, for sizes of 4 GiB on */
};

void livetab_init(struct livetab *t);
void livetab_free(struct livetab *t);

/* Where the search for addr starts: prefetch it ahead of a put or take. */
static inline void livetab_prefetch(const struct livetab *t, uint64_t addr) {
  __builtin_prefetch(&t->blocks.slots[hash_u64(addr) & t->blocks.mask]);
}

/* Add a block, replacing any block at the same address. */
void livetab_put(struct livetab *t, uint64_t addr, uint64_t size,
                 uint32_t owner);

/* Remove the block at addr into *out; 0 if there is none. */
int livetab_take(struct livetab *t, uint64_t addr, struct live_block *out);

/* The block at addr into *out, left in the table; 0 if there is none. */
int livetab_lookup(const struct livetab *t, uint64_t addr,
                   struct live_block *out);

/*
** The blocks, in no particular order: *pos starts at 0; returns 0 when
** there are no more.
*/
int livetab_next(const struct livetab *t, size_t *pos, struct live_block *out);

#endif
