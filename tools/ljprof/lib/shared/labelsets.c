/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "labelsets.h"

#include <stdlib.h>
#include <string.h>

#include "lj_profstream.h"

static void add_set(struct labelsets *ls, uint32_t first, uint32_t n) {
  grow_array((void **)&ls->sets, &ls->sets_cap, ls->nsets + 1,
             sizeof *ls->sets);
  ls->sets[ls->nsets++] = (struct labelset){first, n};
}

void labelsets_init(struct labelsets *ls) {
  memset(ls, 0, sizeof *ls);
  add_set(ls, 0, 0); /* LABELS_NONE */
  add_set(ls, 0, 0); /* LABELS_OTHER */
}

void labelsets_free(struct labelsets *ls) {
  free(ls->labels);
  free(ls->sets);
  free(ls->local);
  hashtab_free(&ls->index);
  memset(ls, 0, sizeof *ls);
}

static uint32_t hash_labels(const struct label *labels, size_t n) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < n; i++)
    h = (h ^ ((uint64_t)labels[i].key << 32 | labels[i].value)) *
        UINT64_C(0x100000001b3);
  return hash_u64(h);
}

struct set_probe {
  const struct labelsets *ls;
  const struct label *labels;
  size_t n;
};

static int same_set(const void *ctx, uint32_t id) {
  const struct set_probe *p = ctx;
  const struct labelset *s = &p->ls->sets[id];
  return s->n == p->n && memcmp(p->ls->labels + s->first, p->labels,
                                p->n * sizeof *p->labels) == 0;
}

uint32_t labelsets_intern(struct labelsets *ls, const struct label *labels,
                          size_t n) {
  struct set_probe probe = {ls, labels, n};
  uint32_t hash = hash_labels(labels, n);
  uint32_t id = hashtab_find(&ls->index, hash, same_set, &probe);
  if (id != HASHTAB_NONE) return id;
  grow_array((void **)&ls->labels, &ls->labels_cap, ls->nlabels + n,
             sizeof *ls->labels);
  memcpy(ls->labels + ls->nlabels, labels, n * sizeof *labels);
  id = (uint32_t)ls->nsets;
  add_set(ls, (uint32_t)ls->nlabels, (uint32_t)n);
  ls->nlabels += n;
  hashtab_add(&ls->index, hash, id);
  return id;
}

void labelsets_announce(struct labelsets *ls, uint32_t id) {
  grow_array((void **)&ls->local, &ls->local_cap, ls->nlocal + 1,
             sizeof *ls->local);
  ls->local[ls->nlocal++] = id;
}

uint32_t labelsets_local(const struct labelsets *ls, uint64_t number) {
  if (number == LJ_LABELS_NONE) return LABELS_NONE;
  if (number == LJ_LABELS_OTHER) return LABELS_OTHER;
  return number <= ls->nlocal ? ls->local[number - 1] : HASHTAB_NONE;
}

void labelsets_forget_stream(struct labelsets *ls) { ls->nlocal = 0; }

uint32_t labelsets_value(const struct labelsets *ls, uint32_t id,
                         uint32_t key) {
  size_t n;
  const struct label *l = labelsets_get(ls, id, &n);
  for (size_t i = 0; i < n; i++)
    if (l[i].key == key) return l[i].value;
  return UINT32_MAX;
}

/* The length of the valid UTF-8 sequence of 2 to 4 bytes at s, or 0. */
static size_t utf8_length(const unsigned char *s, size_t len) {
  unsigned char c = s[0], lo = 0x80, hi = 0xbf;
  size_t n;
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) n = 3;
  else if (c >= 0xf0 && c <= 0xf4) n = 4;
  else return 0;
  if (c == 0xe0) lo = 0xa0;
  if (c == 0xed) hi = 0x9f;
  if (c == 0xf0) lo = 0x90;
  if (c == 0xf4) hi = 0x8f;
  if (len < n || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xbf) return 0;
  return n;
}

void labels_escape(struct sbuf *sb, const char *s, size_t len) {
  static const char hex[] = "0123456789ABCDEF";
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < len;) {
    unsigned char c = p[i];
    size_t n = c >= 0x80 ? utf8_length(p + i, len - i) : 1;
    if (n > 1 || (n == 1 && c >= 0x20 && c != 0x7f && c != '%' && c != ';' &&
                  c != '=')) {
      sbuf_add(sb, p + i, n);
      i += n;
      continue;
    }
    char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
    sbuf_add(sb, esc, 3);
    i++;
  }
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int labels_unescape(struct sbuf *sb, const char *s, size_t len) {
  for (size_t i = 0; i < len; i++) {
    if (s[i] != '%') {
      sbuf_add(sb, s + i, 1);
      continue;
    }
    int hi = i + 2 < len ? hex_digit(s[i + 1]) : -1;
    int lo = hi >= 0 ? hex_digit(s[i + 2]) : -1;
    if (lo < 0) return 0;
    char c = (char)(hi << 4 | lo);
    sbuf_add(sb, &c, 1);
    i += 2;
  }
  return 1;
}
