/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** A sort the compiler specializes for each element type and order:
** sort_inline() is inlined where it is called, with a constant element
** size and a comparison function of that file, so that comparing and
** moving an element take a few instructions (qsort()'s calls through a
** pointer and byte-wise copies took most of a report of many sites). A
** merge sort: stable, and O(n log n) whatever the order of the input (a
** hostile stream chooses the counters sorted).
*/
#ifndef LJPROF_SORT_H
#define LJPROF_SORT_H

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Elements up to this size; runs of this many sorted by insertion first. */
#define SORT_MAX_SIZE 64
#define SORT_RUN 16

/* As qsort(): cmp(a, b) < 0 when a goes before b. */
ALWAYS_INLINE void
sort_inline(void *base, size_t n, size_t size,
            int (*cmp)(const void *, const void *)) {
  char *src = base, *dst, *tmp, held[SORT_MAX_SIZE];
  if (size > SORT_MAX_SIZE) {
    qsort(base, n, size, cmp);
    return;
  }
  for (size_t lo = 0; lo < n; lo += SORT_RUN) {
    size_t hi = n - lo < SORT_RUN ? n : lo + SORT_RUN;
    for (size_t i = lo + 1; i < hi; i++) {
      size_t j = i;
      memcpy(held, src + i * size, size);
      for (; j > lo && cmp(held, src + (j - 1) * size) < 0; j--)
        memcpy(src + j * size, src + (j - 1) * size, size);
      memcpy(src + j * size, held, size);
    }
  }
  if (n <= SORT_RUN) return;
  dst = tmp = xmalloc(n * size);
  for (size_t width = SORT_RUN; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = n - lo < width ? n : lo + width;
      size_t hi = n - mid < width ? n : mid + width;
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        if (cmp(src + j * size, src + i * size) < 0)
          memcpy(dst + k++ * size, src + j++ * size, size);
        else
          memcpy(dst + k++ * size, src + i++ * size, size);
      }
      memcpy(dst + k * size, src + i * size, (mid - i) * size);
      k += mid - i;
      memcpy(dst + k * size, src + j * size, (hi - j) * size);
    }
    char *swap = src;
    src = dst;
    dst = swap;
  }
  if (src != base) memcpy(base, src, n * size);
  free(tmp);
}

/* Of the heap b[0 .. n) (each element after its children), b[i] moved
** down to its place. */
ALWAYS_INLINE void
sort_sift_down(char *b, size_t i, size_t n, size_t size,
               int (*cmp)(const void *, const void *)) {
  char held[SORT_MAX_SIZE];
  memcpy(held, b + i * size, size);
  for (size_t c; (c = 2 * i + 1) < n; i = c) {
    if (c + 1 < n && cmp(b + (c + 1) * size, b + c * size) > 0) c++;
    if (cmp(b + c * size, held) <= 0) break;
    memcpy(b + i * size, b + c * size, size);
  }
  memcpy(b + i * size, held, size);
}

/*
** The first k elements as sort_inline() orders them, the others after
** them in no order, for an order without ties (cmp never 0): a report's
** top k of a million elements. The k first so far are kept in a heap, the
** last of them at its root, which each other element is compared with.
*/
ALWAYS_INLINE void
sort_first_inline(void *base, size_t n, size_t k, size_t size,
                  int (*cmp)(const void *, const void *)) {
  char *b = base, held[SORT_MAX_SIZE];
  if (k >= n || size > SORT_MAX_SIZE) {
    sort_inline(base, n, size, cmp);
    return;
  }
  if (k == 0) return;
  for (size_t i = k / 2; i-- > 0;) sort_sift_down(b, i, k, size, cmp);
  for (size_t i = k; i < n; i++) {
    if (cmp(b + i * size, b) >= 0) continue;
    memcpy(held, b, size);
    memcpy(b, b + i * size, size);
    memcpy(b + i * size, held, size);
    sort_sift_down(b, 0, k, size, cmp);
  }
  sort_inline(base, k, size, cmp);
}

#endif
