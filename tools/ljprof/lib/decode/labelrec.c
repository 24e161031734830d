/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "labelrec.h"

#include <string.h>

static int damage(struct reader *r, uint64_t at, const char *problem,
                  uint64_t value) {
  return reader_corrupt_value(r, at, "label set", problem, value);
}

/* Is a key, of its bytes, after the one before? (Sorted and distinct.) */
static int key_after(const char *prev, size_t prev_len, const char *key,
                     size_t len) {
  int c = memcmp(prev, key, prev_len < len ? prev_len : len);
  return c < 0 || (c == 0 && prev_len < len);
}

int labelrec_read_set(struct reader *r, struct symbols *sym,
                      struct sbuf *scratch) {
  struct labelsets *ls = &sym->labels;
  uint64_t at = reader_offset(r), number, n;
  if (!reader_uleb(r, &number, "label set: number")) return 0;
  if (number != ls->nlocal + 1)
    return damage(r, at, "announced out of order, number", number);
  if (number > LJ_LABELSETS_MAX)
    return damage(r, at, "past the sets a stream names, number", number);
  at = reader_offset(r);
  if (!reader_uleb(r, &n, "label set: number of labels")) return 0;
  if (n == 0 || n > LJ_LABELS_MAXN)
    return damage(r, at, "number of labels out of bounds", n);
  /* Keys and values read whole first, then their strings interned, so
  ** that a set cut short leaves nothing: label i's key is at buf[off[2i]
  ** .. off[2i + 1]), its value at buf[off[2i + 1] .. off[2i + 2]). */
  struct sbuf buf = {0};
  size_t off[2 * LJ_LABELS_MAXN + 1] = {0};
  int ok = 1;
  for (uint64_t i = 0; ok && i < n; i++) {
    uint64_t kat = reader_offset(r);
    ok = reader_string(r, scratch, LJ_LABEL_MAXKEY, "label set: key");
    if (!ok) break;
    if (scratch->len == 0) {
      ok = damage(r, kat, "empty key, label", i + 1);
      break;
    }
    size_t prev = off[2 * i - 2 * (i > 0)];
    if (i && !key_after(buf.data + prev, off[2 * i - 1] - prev, scratch->data,
                        scratch->len)) {
      ok = damage(r, kat, "keys not sorted or repeated, label", i + 1);
      break;
    }
    sbuf_add(&buf, scratch->data, scratch->len);
    off[2 * i + 1] = buf.len;
    ok = reader_string(r, scratch, LJ_LABEL_MAXVALUE, "label set: value");
    if (!ok) break;
    sbuf_add(&buf, scratch->data, scratch->len);
    off[2 * i + 2] = buf.len;
  }
  if (ok) {
    struct label labels[LJ_LABELS_MAXN];
    for (uint64_t i = 0; i < n; i++) {
      labels[i].key = symbols_intern(sym, buf.data + off[2 * i],
                                     off[2 * i + 1] - off[2 * i]);
      labels[i].value = symbols_intern(sym, buf.data + off[2 * i + 1],
                                       off[2 * i + 2] - off[2 * i + 1]);
    }
    labelsets_announce(ls, labelsets_intern(ls, labels, (size_t)n));
  }
  sbuf_free(&buf);
  return ok;
}

/* A set number a record names: announced, none or the folded sets. */
static int read_number(struct reader *r, const struct symbols *sym,
                       uint32_t *id, const char *what) {
  uint64_t at = reader_offset(r), number;
  if (!reader_uleb(r, &number, what)) return 0;
  *id = labelsets_local(&sym->labels, number);
  if (*id == HASHTAB_NONE)
    return damage(r, at, "names a set not announced, number", number);
  return 1;
}

int labelrec_read_in_force(struct reader *r, const struct symbols *sym,
                           uint32_t *id) {
  return read_number(r, sym, id, "labels: set number");
}

int labelrec_read_counts(struct reader *r, const struct symbols *sym,
                         void (*count)(void *ud, uint32_t id, uint64_t n),
                         void *ud) {
  uint64_t nsets, at = reader_offset(r);
  if (!reader_uleb(r, &nsets, "samples by set: count")) return 0;
  /* The sets named, none and the folded ones. */
  enum { COUNTS_MAX = LJ_LABELSETS_MAX + 2 };
  if (nsets > COUNTS_MAX)
    return damage(r, at, "more sets than a stream names", nsets);
  /* Delivered once whole: a record cut short counts nothing. */
  uint32_t ids[COUNTS_MAX];
  uint64_t samples[COUNTS_MAX];
  for (uint64_t i = 0; i < nsets; i++)
    if (!read_number(r, sym, &ids[i], "samples by set: set number") ||
        !reader_uleb(r, &samples[i], "samples by set: samples"))
      return 0;
  for (uint64_t i = 0; count && i < nsets; i++) count(ud, ids[i], samples[i]);
  return 1;
}

int labelrec_read_folded(struct reader *r, struct symbols *sym) {
  uint64_t n;
  if (!reader_uleb(r, &n, "stats: label sets folded")) return 0;
  sym->labels.folded = add_sat(sym->labels.folded, n);
  if (n >= LJ_LABELS_FOLDMAX) sym->labels.folded_more = 1;
  return 1;
}
