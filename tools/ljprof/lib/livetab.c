#include "livetab.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define INITIAL_SLOTS 1024

static struct live_block *new_slots(size_t count) {
  struct live_block *slots = xmalloc(count * sizeof *slots);
  memset(slots, 0xff, count * sizeof *slots); /* owner = LIVETAB_EMPTY */
  return slots;
}

static size_t home(const struct livetab *t, uint64_t addr) {
  return hash_u64(addr) & t->mask;
}

void livetab_init(struct livetab *t) {
  t->slots = new_slots(INITIAL_SLOTS);
  t->mask = INITIAL_SLOTS - 1;
  t->count = 0;
}

void livetab_free(struct livetab *t) {
  free(t->slots);
  t->slots = NULL;
}

static void grow(struct livetab *t) {
  struct live_block *old = t->slots;
  size_t nold = t->mask + 1;
  t->slots = new_slots(nold * 2);
  t->mask = nold * 2 - 1;
  for (size_t i = 0; i < nold; i++) {
    if (old[i].owner == LIVETAB_EMPTY) continue;
    size_t j = home(t, old[i].addr);
    while (t->slots[j].owner != LIVETAB_EMPTY) j = (j + 1) & t->mask;
    t->slots[j] = old[i];
  }
  free(old);
}

void livetab_put(struct livetab *t, uint64_t addr, uint64_t size,
                 uint32_t owner) {
  size_t i = home(t, addr);
  for (;; i = (i + 1) & t->mask) {
    struct live_block *b = &t->slots[i];
    if (b->owner == LIVETAB_EMPTY) break;
    if (b->addr == addr) {
      b->size = size;
      b->owner = owner;
      return;
    }
  }
  t->slots[i] = (struct live_block){addr, size, owner};
  /* Load at most one half. */
  if (++t->count * 2 > t->mask + 1) grow(t);
}

int livetab_take(struct livetab *t, uint64_t addr, struct live_block *out) {
  size_t i = home(t, addr);
  for (;; i = (i + 1) & t->mask) {
    struct live_block *b = &t->slots[i];
    if (b->owner == LIVETAB_EMPTY) return 0;
    if (b->addr == addr) break;
  }
  *out = t->slots[i];
  t->count--;
  /* Backward shift: pull later blocks of the run into the hole when their
  ** home position does not lie cyclically within (hole, j]. */
  size_t hole = i;
  for (size_t j = (i + 1) & t->mask;; j = (j + 1) & t->mask) {
    struct live_block *b = &t->slots[j];
    if (b->owner == LIVETAB_EMPTY) break;
    size_t h = home(t, b->addr);
    if (((j - h) & t->mask) >= ((j - hole) & t->mask)) {
      t->slots[hole] = *b;
      hole = j;
    }
  }
  t->slots[hole].owner = LIVETAB_EMPTY;
  return 1;
}
