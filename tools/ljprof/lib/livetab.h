/*
** The live-block table: every block allocated and not yet freed, by
** address, with its size and the location that owns it. It is the one
** structure that grows with the program profiled (not with the stream), and
** it is on the hot path of every event: open addressing, linear probing,
** deletion by backward shift (no tombstones, so churn does not degrade it).
*/
#ifndef LJPROF_LIVETAB_H
#define LJPROF_LIVETAB_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define LIVETAB_EMPTY UINT32_MAX /* owner of an empty slot */

struct live_block {
  uint64_t addr;
  uint64_t size;
  uint32_t owner; /* location id */
};

struct livetab {
  struct live_block *slots;
  size_t mask; /* slot count - 1 */
  size_t count;
};

void livetab_init(struct livetab *t);
void livetab_free(struct livetab *t);

/* Where the search for addr starts: prefetch it ahead of a put or take. */
static inline void livetab_prefetch(const struct livetab *t, uint64_t addr) {
  __builtin_prefetch(&t->slots[hash_u64(addr) & t->mask]);
}

/* Add a block, replacing any block at the same address. */
void livetab_put(struct livetab *t, uint64_t addr, uint64_t size,
                 uint32_t owner);

/* Remove the block at addr into *out; 0 if there is none. */
int livetab_take(struct livetab *t, uint64_t addr, struct live_block *out);

#define LIVETAB_FOREACH(t, b)                                                \
  for (struct live_block *b = (t)->slots; b <= (t)->slots + (t)->mask; b++) \
    if (b->owner != LIVETAB_EMPTY)

#endif
