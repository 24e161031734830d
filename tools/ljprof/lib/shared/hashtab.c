/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "hashtab.h"

#include <stdlib.h>

#define INITIAL_SLOTS 64

static void keymap_resize(struct keymap *m, size_t nslots) {
  struct keyslot *old = m->slots;
  size_t nold = old ? m->mask + 1 : 0;
  m->slots = table_calloc(nslots, sizeof *m->slots);
  m->mask = nslots - 1;
  for (size_t i = 0; i < nold; i++) {
    if (!old[i].used) continue;
    size_t j = hash_u64(old[i].key) & m->mask;
    while (m->slots[j].used) j = (j + 1) & m->mask;
    m->slots[j] = old[i];
  }
  table_free(old, nold, sizeof *old);
}

void keymap_put(struct keymap *m, uint64_t key, uint32_t value) {
  if (!m->slots) keymap_resize(m, INITIAL_SLOTS);
  size_t i = hash_u64(key) & m->mask;
  for (; m->slots[i].used; i = (i + 1) & m->mask) {
    if (m->slots[i].key == key) {
      m->slots[i].value = value;
      return;
    }
  }
  m->slots[i] = (struct keyslot){key, value, 1};
  if (++m->count * 2 > m->mask + 1) keymap_resize(m, (m->mask + 1) * 2);
}

uint32_t keymap3_get(const struct keymap3 *m, uint32_t a, uint32_t b,
                     uint32_t c) {
  uint32_t id = keymap_get(&m->ab, (uint64_t)a << 32 | b);
  if (id == HASHTAB_NONE || c == 0) return id;
  return keymap_get(&m->abc, (uint64_t)id << 32 | c);
}

uint32_t keymap3_id(struct keymap3 *m, uint32_t a, uint32_t b, uint32_t c,
                    keymap3_add_fn add, void *ud) {
  uint64_t key = (uint64_t)a << 32 | b;
  uint32_t id = keymap_get(&m->ab, key);
  if (id == HASHTAB_NONE) {
    id = add(ud, a, b, 0);
    keymap_put(&m->ab, key, id);
  }
  if (c == 0) return id;
  key = (uint64_t)id << 32 | c;
  id = keymap_get(&m->abc, key);
  if (id == HASHTAB_NONE) {
    id = add(ud, a, b, c);
    keymap_put(&m->abc, key, id);
  }
  return id;
}

void keymap3_free(struct keymap3 *m) {
  keymap_free(&m->ab);
  keymap_free(&m->abc);
}

void keymap_free(struct keymap *m) {
  table_free(m->slots, m->mask + 1, sizeof *m->slots);
  m->slots = NULL;
  m->mask = m->count = 0;
}

static void place(struct hashslot *slots, uint32_t mask, struct hashslot s) {
  uint32_t i = s.hash & mask;
  while (slots[i].ref) i = (i + 1) & mask;
  slots[i] = s;
}

static void resize(struct hashtab *t, uint32_t nslots) {
  struct hashslot *slots = table_calloc(nslots, sizeof *slots);
  if (t->slots) {
    for (uint32_t i = 0; i <= t->mask; i++)
      if (t->slots[i].ref) place(slots, nslots - 1, t->slots[i]);
    table_free(t->slots, (size_t)t->mask + 1, sizeof *t->slots);
  }
  t->slots = slots;
  t->mask = nslots - 1;
}

void hashtab_add(struct hashtab *t, uint32_t hash, uint32_t id) {
  if (!t->slots)
    resize(t, INITIAL_SLOTS);
  else if ((t->count + 1) * 2 > t->mask + 1)
    resize(t, (t->mask + 1) * 2);
  place(t->slots, t->mask, (struct hashslot){hash, id + 1});
  t->count++;
}

void hashtab_free(struct hashtab *t) {
  table_free(t->slots, (size_t)t->mask + 1, sizeof *t->slots);
  t->slots = NULL;
  t->mask = t->count = 0;
}
