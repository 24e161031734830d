/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "livetab.h"

#include <stdlib.h>

#include "util.h"

#define INITIAL_SLOTS 1024

static void map_init(struct addr_map *m, size_t nslots) {
  m->slots = table_calloc(nslots, sizeof *m->slots);
  m->mask = nslots - 1;
  m->shift = 64 - (unsigned)__builtin_ctzll(nslots);
  m->room = nslots / 2;
}

/*
** The table, half full, made four times as large: each block is moved
** 4/3 times at most, not twice, and probes are shorter (an eighth to half
** full, not a quarter to half: 237 -> 227 M instructions on typical); it
** takes at most twice the memory that doubling would.
*/
void addr_map_grow(struct addr_map *m) {
  struct addr_slot *old = m->slots;
  size_t nold = m->mask + 1;
  map_init(m, nold * 4);
  m->room -= nold / 2;
  for (size_t i = 0; i < nold; i++) {
    if (!old[i].value) continue;
    size_t j = addr_map_home(m, old[i].addr);
    while (m->slots[j].value) j = (j + 1) & m->mask;
    m->slots[j] = old[i];
  }
  table_free(old, nold, sizeof *old);
}

void livetab_init(struct livetab *t) {
  map_init(&t->blocks, INITIAL_SLOTS);
  map_init(&t->big_sizes, INITIAL_SLOTS);
}

static void map_free(struct addr_map *m) {
  table_free(m->slots, m->mask + 1, sizeof *m->slots);
  m->slots = NULL;
}

void livetab_free(struct livetab *t) {
  map_free(&t->blocks);
  map_free(&t->big_sizes);
}

void livetab_keep(struct livetab *t, struct livetab *spare) {
  size_t slots = livetab_slots(t);
  if (!spare->blocks.slots && slots > INITIAL_SLOTS &&
      livetab_count(t) >= slots / 8) {
    /* Emptied: what marks a slot used, cleared, four at a step (a power
    ** of two of them). Not memset(): under callgrind, its rep stos counts
    ** an instruction a byte. */
    struct addr_slot *s = t->blocks.slots;
    for (size_t i = 0; i < slots; i += 4)
      s[i].value = s[i + 1].value = s[i + 2].value = s[i + 3].value = 0;
    t->blocks.room = slots / 2;
    spare->blocks = t->blocks;
    t->blocks.slots = NULL;
  }
  livetab_free(t);
}

void livetab_reuse(struct livetab *t, struct livetab *spare) {
  if (!spare->blocks.slots) return;
  map_free(&t->blocks);
  t->blocks = spare->blocks;
  spare->blocks.slots = NULL;
}

/* A block of a big size was put, or put over one. */
void livetab_put_big(struct livetab *t, uint64_t addr, uint64_t size) {
  if (size >= LIVETAB_BIG_SIZE)
    addr_map_put(&t->big_sizes, addr, size);
  else
    addr_map_take(&t->big_sizes, addr);
}

/* A block of a big size was taken: its size too. */
uint64_t livetab_take_big(struct livetab *t, uint64_t addr) {
  return addr_map_take(&t->big_sizes, addr);
}

int livetab_lookup(const struct livetab *t, uint64_t addr,
                   struct live_block *out) {
  const struct addr_map *m = &t->blocks;
  for (size_t i = addr_map_home(m, addr); m->slots[i].value;
       i = (i + 1) & m->mask) {
    if (m->slots[i].addr != addr) continue;
    livetab_unpack(addr, m->slots[i].value, out);
    if (livetab_is_big(m->slots[i].value))
      out->size = livetab_big_size(t, addr);
    return 1;
  }
  return 0;
}

int livetab_next_big(const struct livetab *t, size_t *pos,
                     struct live_block *out) {
  const struct addr_map *m = &t->big_sizes;
  for (size_t i = *pos; i <= m->mask; i++) {
    if (!m->slots[i].value) continue;
    *pos = i + 1;
    /* (Each big size's block is in the table: they come and go together.) */
    return livetab_lookup(t, m->slots[i].addr, out);
  }
  *pos = m->mask + 1;
  return 0;
}
