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
  uint32_t owner;  /* location id, below UINT32_MAX */
  uint32_t charge; /* livetab_charge(size) */
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
  unsigned shift;          /* 64 - log2(slot count) */
  size_t room; /* new addresses it takes before it grows, at half load
                  (one count to step and test at every put) */
};

struct livetab {
  struct addr_map blocks;    /* address -> (owner + 1) << 32 | size */
  struct addr_map big_sizes; /* address -> size, for sizes of 4 GiB on */
};

void livetab_init(struct livetab *t);
void livetab_free(struct livetab *t);

/*
** Streams read one after the other on a thread (a merge) reuse one table
** of blocks: each stream's grew and faulted in what the next one needs
** again, page by page. livetab_keep(): t is done with; its table of
** blocks goes to *spare, emptied, if it holds at least an eighth of what
** it can (so that a small stream after a big one does not keep clearing
** a big table), else it is freed; the rest is freed. livetab_reuse(): t,
** just initialised, takes the table of *spare if it holds one.
*/
void livetab_keep(struct livetab *t, struct livetab *spare);
void livetab_reuse(struct livetab *t, struct livetab *spare);

/* The size field of a block whose size is in big_sizes. */
#define LIVETAB_BIG_SIZE UINT32_MAX

/*
** What a block counts in a sum of live bytes kept as blocks come and go:
** its size, or LIVETAB_BIG_SIZE for a big one (whose real size is added
** once at the end: livetab_next_big()). Fewer than 2^32 blocks of less
** than 2^32 bytes each: such a sum never wraps.
*/
static inline uint64_t livetab_charge(uint64_t size) {
  return size < LIVETAB_BIG_SIZE ? size : LIVETAB_BIG_SIZE;
}

/* Where the search for addr starts. */
static inline size_t addr_map_home(const struct addr_map *m, uint64_t addr) {
  return hash_home(addr, m->shift);
}

/* Where the search for addr starts: prefetch it ahead of a put or take. */
ALWAYS_INLINE void livetab_prefetch(const struct livetab *t, uint64_t addr) {
  __builtin_prefetch(&t->blocks.slots[addr_map_home(&t->blocks, addr)]);
}

/* Out of the hot paths below: the table grown, a block's big size. */
void addr_map_grow(struct addr_map *m);
void livetab_put_big(struct livetab *t, uint64_t addr, uint64_t size);
uint64_t livetab_take_big(struct livetab *t, uint64_t addr);

/* Set the value at addr; returns the value it replaced, 0 if none. */
static inline uint64_t addr_map_put(struct addr_map *m, uint64_t addr,
                                    uint64_t value) {
  struct addr_slot *slots = m->slots;
  size_t i = addr_map_home(m, addr);
  for (; slots[i].value; i = (i + 1) & m->mask) {
    if (slots[i].addr == addr) {
      uint64_t old = slots[i].value;
      slots[i].value = value;
      return old;
    }
  }
  slots[i] = (struct addr_slot){addr, value};
  if (--m->room == 0) addr_map_grow(m);
  return 0;
}

/*
** Close the hole at slot i by backward shift: each later slot of the run
** moves into the hole when its home does not lie cyclically within
** (hole, j]. Without branches on that test: a slot that stays is copied
** onto itself.
*/
static inline void addr_map_close_hole(struct addr_map *m, size_t hole) {
  struct addr_slot *slots = m->slots;
  for (size_t j = (hole + 1) & m->mask; slots[j].value;
       j = (j + 1) & m->mask) {
    size_t from_home = (j - addr_map_home(m, slots[j].addr)) & m->mask;
    int moves = from_home >= ((j - hole) & m->mask);
    size_t to = moves ? hole : j;
    hole = moves ? j : hole;
    slots[to] = slots[j];
  }
  slots[hole].value = 0;
}

/* Remove the value at addr and return it; 0 if there is none. */
static inline uint64_t addr_map_take(struct addr_map *m, uint64_t addr) {
  const struct addr_slot *slots = m->slots;
  size_t i = addr_map_home(m, addr);
  for (; slots[i].addr != addr; i = (i + 1) & m->mask)
    if (!slots[i].value) return 0;
  uint64_t value = slots[i].value;
  if (value) {
    m->room++;
    addr_map_close_hole(m, i);
  }
  return value;
}

static inline int livetab_is_big(uint64_t packed) {
  return (uint32_t)packed == LIVETAB_BIG_SIZE;
}

/*
** Add a block, replacing any block at the same address. Returns the
** replaced block's word (0: there was none), of which
** livetab_word_owner() and livetab_word_charge() read its owner and its
** charge.
*/
static inline uint64_t livetab_put(struct livetab *t, uint64_t addr,
                                   uint64_t size, uint32_t owner) {
  uint64_t packed = ((uint64_t)owner + 1) << 32 | livetab_charge(size);
  uint64_t replaced = addr_map_put(&t->blocks, addr, packed);
  if (livetab_is_big(packed) || (replaced && livetab_is_big(replaced)))
    livetab_put_big(t, addr, size);
  return replaced;
}

static inline uint32_t livetab_word_owner(uint64_t word) {
  return (uint32_t)(word >> 32) - 1;
}

static inline uint64_t livetab_word_charge(uint64_t word) {
  return (uint32_t)word;
}

static inline void livetab_unpack(uint64_t addr, uint64_t packed,
                                  struct live_block *out) {
  out->addr = addr;
  out->owner = livetab_word_owner(packed);
  out->size = out->charge = (uint32_t)livetab_word_charge(packed);
}

/* Remove the block at addr into *out; 0 if there is none. */
static inline int livetab_take(struct livetab *t, uint64_t addr,
                               struct live_block *out) {
  uint64_t packed = addr_map_take(&t->blocks, addr);
  if (!packed) return 0;
  livetab_unpack(addr, packed, out);
  /* (*out not passed on: it can stay in registers.) */
  if (livetab_is_big(packed)) out->size = livetab_take_big(t, addr);
  return 1;
}

/* The block at addr into *out, left in the table; 0 if there is none. */
int livetab_lookup(const struct livetab *t, uint64_t addr,
                   struct live_block *out);

/* The size of a big block still in the table. Inline: a walk of every
** slot calls nothing, and keeps the table's fields in registers. */
static inline uint64_t livetab_big_size(const struct livetab *t,
                                        uint64_t addr) {
  const struct addr_map *m = &t->big_sizes;
  size_t i = addr_map_home(m, addr);
  while (m->slots[i].addr != addr) i = (i + 1) & m->mask;
  return m->slots[i].value;
}

/* The blocks in the table. */
static inline size_t livetab_count(const struct livetab *t) {
  return (t->blocks.mask + 1) / 2 - t->blocks.room;
}

/* The blocks, slot by slot: livetab_slot() gives the block in slot i
** (below livetab_slots()), 0 if it is empty. */
static inline size_t livetab_slots(const struct livetab *t) {
  return t->blocks.mask + 1;
}

static inline int livetab_slot(const struct livetab *t, size_t i,
                               struct live_block *out) {
  const struct addr_slot *s = &t->blocks.slots[i];
  if (!s->value) return 0;
  livetab_unpack(s->addr, s->value, out);
  if (livetab_is_big(s->value)) out->size = livetab_big_size(t, s->addr);
  return 1;
}

/* The blocks, in no particular order: *pos starts at 0; returns 0 when
** there are no more. */
static inline int livetab_next(const struct livetab *t, size_t *pos,
                               struct live_block *out) {
  for (size_t i = *pos, n = livetab_slots(t); i < n; i++) {
    if (livetab_slot(t, i, out)) {
      *pos = i + 1;
      return 1;
    }
  }
  *pos = livetab_slots(t);
  return 0;
}

/* The big blocks alone, as livetab_next(). */
int livetab_next_big(const struct livetab *t, size_t *pos,
                     struct live_block *out);

#endif
