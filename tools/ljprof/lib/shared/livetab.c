/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "livetab.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define INITIAL_SLOTS 1024

/* The size field of a block whose size is in big_sizes. */
#define BIG_SIZE UINT32_MAX

static void map_init(struct addr_map *m, size_t nslots) {
  m->slots = xcalloc(nslots, sizeof *m->slots);
  m->mask = nslots - 1;
  m->count = 0;
}

static size_t home(const struct addr_map *m, uint64_t addr) {
  return hash_u64(addr) & m->mask;
}

static void map_grow(struct addr_map *m) {
  struct addr_slot *old = m->slots;
  size_t nold = m->mask + 1, count = m->count;
  map_init(m, nold * 2);
  m->count = count;
  for (size_t i = 0; i < nold; i++) {
    if (!old[i].value) continue;
    size_t j = home(m, old[i].addr);
    while (m->slots[j].value) j = (j + 1) & m->mask;
    m->slots[j] = old[i];
  }
  free(old);
}

/* Set the value at addr; returns the value it replaced, 0 if none. */
static uint64_t map_put(struct addr_map *m, uint64_t addr, uint64_t value) {
  size_t i = home(m, addr);
  for (; m->slots[i].value; i = (i + 1) & m->mask) {
    if (m->slots[i].addr == addr) {
      uint64_t old = m->slots[i].value;
      m->slots[i].value = value;
      return old;
    }
  }
  m->slots[i] = (struct addr_slot){addr, value};
  /* Load at most one half. */
  if (++m->count * 2 > m->mask + 1) map_grow(m);
  return 0;
}

/*
** Close the hole at slot i by backward shift: each later slot of the run
** moves into the hole when its home does not lie cyclically within
** (hole, j]. Without branches on that test: a slot that stays is copied
** onto itself.
*/
static void close_hole(struct addr_map *m, size_t hole) {
  struct addr_slot *slots = m->slots;
  for (size_t j = (hole + 1) & m->mask; slots[j].value;
       j = (j + 1) & m->mask) {
    size_t from_home = (j - home(m, slots[j].addr)) & m->mask;
    int moves = from_home >= ((j - hole) & m->mask);
    size_t to = moves ? hole : j;
    hole = moves ? j : hole;
    slots[to] = slots[j];
  }
  slots[hole].value = 0;
}

/* Remove the value at addr and return it; 0 if there is none. */
static uint64_t map_take(struct addr_map *m, uint64_t addr) {
  size_t i = home(m, addr);
  for (; m->slots[i].addr != addr; i = (i + 1) & m->mask)
    if (!m->slots[i].value) return 0;
  uint64_t value = m->slots[i].value;
  if (value) {
    m->count--;
    close_hole(m, i);
  }
  return value;
}

void livetab_init(struct livetab *t) {
  map_init(&t->blocks, INITIAL_SLOTS);
  map_init(&t->big_sizes, INITIAL_SLOTS);
}

void livetab_free(struct livetab *t) {
  free(t->blocks.slots);
  free(t->big_sizes.slots);
  t->blocks.slots = t->big_sizes.slots = NULL;
}

static uint64_t pack(uint32_t owner, uint64_t size) {
  return ((uint64_t)owner + 1) << 32 | (size < BIG_SIZE ? size : BIG_SIZE);
}

static int is_big(uint64_t packed) { return (uint32_t)packed == BIG_SIZE; }

void livetab_put(struct livetab *t, uint64_t addr, uint64_t size,
                 uint32_t owner) {
  uint64_t replaced = map_put(&t->blocks, addr, pack(owner, size));
  if (size >= BIG_SIZE)
    map_put(&t->big_sizes, addr, size);
  else if (replaced && is_big(replaced))
    map_take(&t->big_sizes, addr);
}

static void unpack(uint64_t addr, uint64_t packed, struct live_block *out) {
  out->addr = addr;
  out->owner = (uint32_t)(packed >> 32) - 1;
  out->size = (uint32_t)packed;
}

int livetab_take(struct livetab *t, uint64_t addr, struct live_block *out) {
  uint64_t packed = map_take(&t->blocks, addr);
  if (!packed) return 0;
  unpack(addr, packed, out);
  if (is_big(packed)) out->size = map_take(&t->big_sizes, addr);
  return 1;
}

/* The size of a big block still in the table. */
static uint64_t big_size(const struct livetab *t, uint64_t addr) {
  const struct addr_map *m = &t->big_sizes;
  size_t i = home(m, addr);
  while (m->slots[i].addr != addr) i = (i + 1) & m->mask;
  return m->slots[i].value;
}

int livetab_next(const struct livetab *t, size_t *pos, struct live_block *out) {
  const struct addr_map *m = &t->blocks;
  for (; *pos <= m->mask; ++*pos) {
    const struct addr_slot *s = &m->slots[*pos];
    if (!s->value) continue;
    unpack(s->addr, s->value, out);
    if (is_big(s->value)) out->size = big_size(t, s->addr);
    ++*pos;
    return 1;
  }
  return 0;
}

int livetab_lookup(const struct livetab *t, uint64_t addr,
                   struct live_block *out) {
  const struct addr_map *m = &t->blocks;
  for (size_t i = home(m, addr); m->slots[i].value; i = (i + 1) & m->mask) {
    if (m->slots[i].addr != addr) continue;
    unpack(addr, m->slots[i].value, out);
    if (is_big(m->slots[i].value)) out->size = big_size(t, addr);
    return 1;
  }
  return 0;
}
