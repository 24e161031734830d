/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void *xrealloc(void *ptr, size_t size) {
  void *p = realloc(ptr, size ? size : 1);
  if (!p) out_of_memory(size);
  return p;
}

#define CACHE_LINE 64

void *xmalloc_table(size_t size) {
  void *p;
  if (posix_memalign(&p, CACHE_LINE, size ? size : 1) != 0) out_of_memory(size);
  return p;
}

void grow_array(void **items, size_t *cap, size_t need, size_t elem_size) {
  if (need <= *cap) return;
  size_t ncap = *cap ? *cap : 16;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2 / elem_size) out_of_memory(SIZE_MAX);
    ncap *= 2;
  }
  *items = xrealloc(*items, ncap * elem_size);
  *cap = ncap;
}

void grow_array_zeroed(void **items, size_t *cap, size_t need,
                       size_t elem_size) {
  size_t old = *cap;
  grow_array(items, cap, need, elem_size);
  memset((char *)*items + old * elem_size, 0, (*cap - old) * elem_size);
}

static int by_rank(const void *a, const void *b) {
  const struct rank_item *x = a, *y = b;
  if (x->first != y->first) return x->first > y->first ? -1 : 1;
  if (x->second != y->second) return x->second > y->second ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

uint32_t *rank_ids(struct rank_item *items, size_t n) {
  qsort(items, n, sizeof *items, by_rank);
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

void sbuf_add(struct sbuf *sb, const void *bytes, size_t len) {
  grow_array((void **)&sb->data, &sb->cap, sb->len + len + 1, 1);
  memcpy(sb->data + sb->len, bytes, len);
  sb->len += len;
}

void sbuf_printf(struct sbuf *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  grow_array((void **)&sb->data, &sb->cap, sb->len + (size_t)n + 1, 1);
  va_start(ap, fmt);
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb->len += (size_t)n;
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
