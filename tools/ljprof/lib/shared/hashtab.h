/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Open-addressing hash tables, linear probing, load at most one half.
**
** A keymap maps 64-bit keys to 32-bit values, both held in the slot: a
** lookup touches one cache line. It backs every address-keyed table.
**
** A hashtab indexes records the caller keeps (variable-size keys such as
** strings): it maps a key to the record's id, keeping only the 32-bit hash
** and the id, and asks the caller whether a record matches. Neither table
** deletes: symbols and locations are only added or rebound.
*/
#ifndef LJPROF_HASHTAB_H
#define LJPROF_HASHTAB_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define HASHTAB_NONE UINT32_MAX

struct keyslot {
  uint64_t key;
  uint32_t value;
  uint32_t used;
};

struct keymap {
  struct keyslot *slots;
  size_t mask; /* slot count - 1 */
  size_t count;
};

/* The value under key, or HASHTAB_NONE. */
static inline uint32_t keymap_get(const struct keymap *m, uint64_t key) {
  if (!m->slots) return HASHTAB_NONE;
  for (size_t i = hash_u64(key) & m->mask;; i = (i + 1) & m->mask) {
    const struct keyslot *s = &m->slots[i];
    if (!s->used) return HASHTAB_NONE;
    if (s->key == key) return s->value;
  }
}

/* Set the value under key (adding or replacing). */
void keymap_put(struct keymap *m, uint64_t key, uint32_t value);
void keymap_free(struct keymap *m);

/*
** Triples of 32-bit numbers (a, b, c) to ids the caller numbers, on two
** keymaps: (a, b) to the id of (a, b, 0), that id and c to (a, b, c)'s.
** keymap3_id() adds what is missing by add(ud, a, b, c), which returns the
** new triple's id: (a, b, 0)'s first when c is not 0.
*/
struct keymap3 {
  struct keymap ab, abc;
};
typedef uint32_t (*keymap3_add_fn)(void *ud, uint32_t a, uint32_t b,
                                   uint32_t c);
uint32_t keymap3_get(const struct keymap3 *m, uint32_t a, uint32_t b,
                     uint32_t c); /* or HASHTAB_NONE */
uint32_t keymap3_id(struct keymap3 *m, uint32_t a, uint32_t b, uint32_t c,
                    keymap3_add_fn add, void *ud);
void keymap3_free(struct keymap3 *m);

struct hashslot {
  uint32_t hash;
  uint32_t ref; /* id + 1; 0 marks an empty slot */
};

struct hashtab {
  struct hashslot *slots;
  uint32_t mask;
  uint32_t count;
};

/* Does the record with this id match the key the caller looks up? */
typedef int (*hashtab_same_fn)(const void *ctx, uint32_t id);

static inline uint32_t hashtab_find(const struct hashtab *t, uint32_t hash,
                                    hashtab_same_fn same, const void *ctx) {
  if (!t->slots) return HASHTAB_NONE;
  for (uint32_t i = hash & t->mask;; i = (i + 1) & t->mask) {
    const struct hashslot *s = &t->slots[i];
    if (!s->ref) return HASHTAB_NONE;
    if (s->hash == hash && same(ctx, s->ref - 1)) return s->ref - 1;
  }
}

/* Add an id under hash; the caller has checked that the key is absent. */
void hashtab_add(struct hashtab *t, uint32_t hash, uint32_t id);
void hashtab_free(struct hashtab *t);

#endif
