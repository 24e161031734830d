/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_POPULATE, mremap() */
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sort.h"

static void out_of_memory(size_t size) {
  fprintf(stderr, "ljprof: out of memory (requesting %zu bytes)\n", size);
  abort();
}

void *xmalloc(size_t size) {
  void *p = malloc(size ? size : 1);
  if (!p) out_of_memory(size);
  return p;
}

void *xcalloc(size_t count, size_t size) {
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p) out_of_memory(count * size);
  return p;
}

#define TABLE_MAPPED_FROM (1u << 17)
#define HUGE_PAGE (2u << 20)

/* Called at a mapping's making and unmaking only. */
static size_t page_round(size_t bytes) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return (bytes + page - 1) & ~(page - 1);
}

/* Mapped on a boundary of 2 MiB and asked for in huge pages (where the
** kernel gives them on madvise): a 64 MiB table is 32 faults, not 16384,
** and a probe at random one TLB entry in 512 as many. */
static char *map_huge(size_t bytes) {
  size_t len = bytes + HUGE_PAGE;
  char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) out_of_memory(bytes);
  char *start =
      (char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
  char *end = start + page_round(bytes);
  if (start > p) munmap(p, (size_t)(start - p));
  if (p + len > end) munmap(end, (size_t)(p + len - end));
#ifdef MADV_HUGEPAGE
  madvise(start, bytes, MADV_HUGEPAGE);
#endif
  return start;
}

void *table_calloc(size_t count, size_t size) {
  size_t bytes = count * size;
  if (bytes < TABLE_MAPPED_FROM) return xcalloc(count, size);
  if (bytes >= HUGE_PAGE) {
    /* Present at once, as below; kernels before 5.14 fault it in. */
    char *p = map_huge(bytes);
#ifdef MADV_POPULATE_WRITE
    madvise(p, bytes, MADV_POPULATE_WRITE);
#endif
    return p;
  }
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) out_of_memory(bytes);
  return p;
}

void table_free(void *table, size_t count, size_t size) {
  if (!table) return;
  if (count * size < TABLE_MAPPED_FROM) free(table);
  else munmap(table, count * size);
}

void *xrealloc(void *ptr, size_t size) {
  void *p = realloc(ptr, size ? size : 1);
  if (!p) out_of_memory(size);
  return p;
}

static size_t grown_capacity(size_t cap, size_t need, size_t elem_size) {
  size_t ncap = cap ? cap : 16;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2 / elem_size) out_of_memory(SIZE_MAX);
    ncap *= 2;
  }
  return ncap;
}

void grow_array_slow(void **items, size_t *cap, size_t need,
                     size_t elem_size) {
  size_t ncap = grown_capacity(*cap, need, elem_size);
  *items = xrealloc(*items, ncap * elem_size);
  *cap = ncap;
}

void grow_mapped_slow(void **items, size_t *cap, size_t need,
                      size_t elem_size) {
  size_t old = *cap * elem_size;
  size_t ncap = grown_capacity(*cap, need, elem_size);
  size_t bytes = ncap * elem_size;
  if (bytes < HUGE_PAGE) {
    grow_array_slow(items, cap, need, elem_size);
    return;
  }
  char *to = map_huge(bytes);
  if (old < HUGE_PAGE) {
    if (old) memcpy(to, *items, old);
    free(*items);
  } else if (mremap(*items, page_round(old), page_round(old),
                    MREMAP_MAYMOVE | MREMAP_FIXED, to) == MAP_FAILED) {
    memcpy(to, *items, old);
    munmap(*items, page_round(old));
  }
  *items = to;
  *cap = ncap;
}

void *mapped_calloc(size_t count, size_t size) {
  if (count * size < HUGE_PAGE) return xcalloc(count, size);
  return map_huge(count * size); /* zeroed */
}

void mapped_free(void *items, size_t cap, size_t elem_size) {
  if (!items) return;
  if (cap * elem_size < HUGE_PAGE) free(items);
  else munmap(items, page_round(cap * elem_size));
}

void grow_array_zeroed_slow(void **items, size_t *cap, size_t need,
                            size_t elem_size) {
  size_t old = *cap;
  grow_array_slow(items, cap, need, elem_size);
  memset((char *)*items + old * elem_size, 0, (*cap - old) * elem_size);
}

static int by_rank(const void *a, const void *b) {
  const struct rank_item *x = a, *y = b;
  if (x->first != y->first) return x->first > y->first ? -1 : 1;
  if (x->second != y->second) return x->second > y->second ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

uint32_t *rank_ids(struct rank_item *items, size_t n) {
  sort_inline(items, n, sizeof *items, by_rank);
  uint32_t *ids = xmalloc((n ? n : 1) * sizeof *ids);
  for (size_t i = 0; i < n; i++) ids[i] = items[i].id;
  free(items);
  return ids;
}

void sbuf_reset(struct sbuf *sb) { sb->len = 0; }

void sbuf_free(struct sbuf *sb) {
  free(sb->data);
  sb->data = NULL;
  sb->len = sb->cap = 0;
}

void sbuf_reserve(struct sbuf *sb, size_t len) {
  grow_array((void **)&sb->data, &sb->cap, sb->len + len + 1, 1);
}

/* Formatted into the room left first; only what does not fit is formatted
** twice, into a buffer grown to fit. */
void sbuf_printf(struct sbuf *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = sb->cap - sb->len;
  int n = vsnprintf(room ? sb->data + sb->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= room) {
    grow_array((void **)&sb->data, &sb->cap, sb->len + (size_t)n + 1, 1);
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  sb->len += (size_t)n;
}

/* Written in place, two digits at a time (half the divisions). */
void sbuf_u64_digits(struct sbuf *sb, uint64_t v) {
  static const char pairs[] = "00010203040506070809101112131415161718192021"
                              "22232425262728293031323334353637383940414243"
                              "44454647484950515253545556575859606162636465"
                              "66676869707172737475767778798081828384858687"
                              "888990919293949596979899";
  static const uint64_t powers[20] = {
      UINT64_C(1), UINT64_C(10), UINT64_C(100), UINT64_C(1000),
      UINT64_C(10000), UINT64_C(100000), UINT64_C(1000000),
      UINT64_C(10000000), UINT64_C(100000000), UINT64_C(1000000000),
      UINT64_C(10000000000), UINT64_C(100000000000),
      UINT64_C(1000000000000), UINT64_C(10000000000000),
      UINT64_C(100000000000000), UINT64_C(1000000000000000),
      UINT64_C(10000000000000000), UINT64_C(100000000000000000),
      UINT64_C(1000000000000000000), UINT64_C(10000000000000000000)};
  /* The digits from the bits (log10(2) ~ 1233 / 4096), then one check
  ** (of v | 1: 0 has a digit too; the powers from 10 on are even). */
  size_t bits = 64 - (size_t)__builtin_clzll(v | 1);
  size_t digits = (bits * 1233 >> 12) + 1;
  digits -= (v | 1) < powers[digits - 1];
  if (sb->cap - sb->len <= digits) sbuf_reserve(sb, digits);
  char *p = sb->data + sb->len + digits;
  sb->len += digits;
  for (; v >= 100; v /= 100) {
    p -= 2;
    memcpy(p, pairs + 2 * (v % 100), 2);
  }
  if (v >= 10)
    memcpy(p - 2, pairs + 2 * v, 2);
  else
    p[-1] = (char)('0' + v);
}

/*
** The tenths of v, rounded as printf rounds: on v's exact binary value,
** mantissa * 2^-shift, to nearest, ties to even. Below 2^52, ten times the
** 53-bit mantissa fits in 64 bits.
*/
void sbuf_tenths(struct sbuf *sb, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  unsigned field = (unsigned)(bits >> 52); /* the sign too: 0 for v >= 0 */
  if (field >= 1023 + 52) { /* negative, 2^52 or more, NaN, infinite */
    sbuf_printf(sb, "%.1f", v);
    return;
  }
  uint64_t mantissa = bits & ((UINT64_C(1) << 52) - 1);
  if (field) mantissa |= UINT64_C(1) << 52;
  unsigned shift = 1075 - (field ? field : 1); /* 1 to 1074 */
  uint64_t tenths = 0;
  if (shift < 60) { /* from 60 bits on, v * 10 is below one half */
    uint64_t scaled = mantissa * 10, half = UINT64_C(1) << (shift - 1);
    uint64_t rest = scaled & ((half << 1) - 1);
    tenths = scaled >> shift;
    if (rest > half || (rest == half && (tenths & 1))) tenths++;
  }
  sbuf_u64(sb, tenths / 10);
  char last[2] = {'.', (char)('0' + tenths % 10)};
  sbuf_add(sb, last, sizeof last);
}

const char *sbuf_cstr(struct sbuf *sb) {
  grow_array((void **)&sb->data, &sb->cap, sb->len + 1, 1);
  sb->data[sb->len] = '\0';
  return sb->data;
}

double binary_units(uint64_t bytes, size_t nunits, size_t *unit) {
  double value = (double)bytes;
  *unit = 0;
  while (value >= 1024 && *unit + 1 < nunits) {
    value /= 1024;
    ++*unit;
  }
  return value;
}
