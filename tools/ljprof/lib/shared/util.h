/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Small helpers shared by the reader library: allocation that cannot fail
** silently, and a growable byte buffer for building names.
*/
#ifndef LJPROF_UTIL_H
#define LJPROF_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Allocate or die: the tool has no sensible way to go on without memory. */
void *xmalloc(size_t size);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *ptr, size_t size);

/*
** A table of count zeroed elements that will be written all over (a hash
** table's slots): from 128 KiB on, mapped with its pages already present and
** writable, from 2 MiB in huge pages. Pages of calloc()'s first read as the
** shared zero page, then each is copied at its first write: with other
** threads running, a fault and a TLB flush of every core at each page.
** table_free() it.
*/
void *table_calloc(size_t count, size_t size);
void table_free(void *table, size_t count, size_t size);

/* Grow *items (of *cap elements of elem_size bytes) to hold at least need.
** Inline: callers grow per event, and almost always have the room. */
void grow_array_slow(void **items, size_t *cap, size_t need, size_t elem_size);
static inline void grow_array(void **items, size_t *cap, size_t need,
                              size_t elem_size) {
  if (need > *cap) grow_array_slow(items, cap, need, elem_size);
}
/* The same, the elements it adds zeroed: arrays indexed by an id. */
void grow_array_zeroed_slow(void **items, size_t *cap, size_t need,
                            size_t elem_size);
static inline void grow_array_zeroed(void **items, size_t *cap, size_t need,
                                     size_t elem_size) {
  if (need > *cap) grow_array_zeroed_slow(items, cap, need, elem_size);
}

/*
** An array that may grow large (a profile's stacks and their frames): from
** 2 MiB on, mapped in huge pages (map_huge() in util.c), and grown by moving
** its pages to a larger mapping, not by copying them (none is faulted
** twice). Below, malloc()'s, whose freed pages the next stream reuses.
** mapped_free() it, with its capacity (NULL: nothing).
*/
void grow_mapped_slow(void **items, size_t *cap, size_t need,
                      size_t elem_size);
static inline void grow_mapped(void **items, size_t *cap, size_t need,
                               size_t elem_size) {
  if (need > *cap) grow_mapped_slow(items, cap, need, elem_size);
}
/* count zeroed elements, mapped as grow_mapped()'s from 2 MiB. */
void *mapped_calloc(size_t count, size_t size);
void mapped_free(void *items, size_t cap, size_t elem_size);

/* What a ranking sorts: most first by first, then by second, then the
** lower id first. */
struct rank_item {
  uint64_t first, second;
  uint32_t id;
};

/* Sort n items and return their ids in that order (malloc'd); frees
** items. */
uint32_t *rank_ids(struct rank_item *items, size_t n);

/* A growable byte buffer; not NUL-terminated unless sbuf_cstr() is called. */
struct sbuf {
  char *data;
  size_t len;
  size_t cap;
};

void sbuf_reset(struct sbuf *sb);
void sbuf_free(struct sbuf *sb);
/* Make room for len more bytes and a NUL. */
void sbuf_reserve(struct sbuf *sb, size_t len);

/* Inline: reports add their text a few bytes at a time. */
static inline void sbuf_add(struct sbuf *sb, const void *bytes, size_t len) {
  if (sb->cap - sb->len <= len) sbuf_reserve(sb, len);
  memcpy(sb->data + sb->len, bytes, len);
  sb->len += len;
}
void sbuf_printf(struct sbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Append v in decimal, as printf's "%" PRIu64 does, without its cost;
** inline for one digit, the count most often put (a report's "1 event"),
** which took 33 instructions out of line. */
void sbuf_u64_digits(struct sbuf *sb, uint64_t v);
static inline void sbuf_u64(struct sbuf *sb, uint64_t v) {
  if (v >= 10 || sb->cap - sb->len <= 1) {
    sbuf_u64_digits(sb, v);
    return;
  }
  sb->data[sb->len++] = (char)('0' + v);
}
/* Append v as printf's "%.1f" writes it, without printf's cost. */
void sbuf_tenths(struct sbuf *sb, double v);
const char *sbuf_cstr(struct sbuf *sb);

/*
** A byte count in binary units: unit 0 is the byte, each next one 1024
** times the one before. Returns the count in the largest unit (below
** nunits) it fills at least once, whose index goes to *unit.
*/
double binary_units(uint64_t bytes, size_t nunits, size_t *unit);

/*
** Inlined whatever the compiler weighs: a hot path's copy specialized by a
** caller's constant arguments; a function whose only work is a prefetch,
** which GCC finds pure (a prefetch has no effect it counts) and whose
** every call it drops, the result going unused.
*/
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define NOINLINE __attribute__((noinline))

/* Saturating addition: counters from hostile streams must not wrap. */
static inline uint64_t add_sat(uint64_t a, uint64_t b) {
  uint64_t sum = a + b;
  return sum < a ? UINT64_MAX : sum;
}

/*
** Where a key's search starts in a table of 2^(64 - shift) slots: the top
** bits of a Fibonacci multiply, which every bit of the key reaches (so no
** mixing before it).
*/
static inline size_t hash_home(uint64_t key, unsigned shift) {
  return (size_t)(key * UINT64_C(0x9E3779B97F4A7C15) >> shift);
}

/* A 64-bit to 32-bit mixing hash (a Fibonacci multiply, high bits kept). */
static inline uint32_t hash_u64(uint64_t key) {
  key ^= key >> 29;
  key *= UINT64_C(0x9E3779B97F4A7C15);
  return (uint32_t)(key >> 32);
}

/* Bytes hashed a word at a time (FNV-1a's multiply), folded to 32 bits:
** the interned strings' keys, a sample's frames. */
static inline uint32_t hash_bytes(const void *data, size_t len) {
  const uint8_t *p = data;
  uint64_t h = UINT64_C(0xcbf29ce484222325) ^ len;
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t word;
    memcpy(&word, p, sizeof word);
    h = (h ^ word) * UINT64_C(0x100000001b3);
  }
  uint64_t tail = 0;
  memcpy(&tail, p, len);
  return hash_u64(h ^ tail);
}

#endif
