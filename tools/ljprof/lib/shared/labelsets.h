/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Label sets (sysprof v4, memprof v6): the sets the streams named,
** interned by their content, so that the streams of a merge, each with its
** own numbers, meet in one set when they name the same labels. A set's
** labels are a key and a value, both interned strings of the resolver
** (symbols_intern()), sorted by the key's bytes as the stream has them.
**
** Set ids are dense: LABELS_NONE (no labels in force), LABELS_OTHER (the
** sets a stream folded past its limit), then the sets in the order first
** named. Each stream's own numbers map to ids until the next stream of a
** merge (labelsets_forget_stream()).
*/
#ifndef LJPROF_LABELSETS_H
#define LJPROF_LABELSETS_H

#include <stddef.h>
#include <stdint.h>

#include "hashtab.h"
#include "util.h"

#define LABELS_NONE 0
#define LABELS_OTHER 1

struct symbols;

struct label {
  uint32_t key, value; /* string ids */
};

struct labelset {
  uint32_t first, n; /* its labels at labels[first ..] */
};

struct labelsets {
  struct label *labels;
  size_t nlabels, labels_cap;
  struct labelset *sets; /* by id */
  size_t nsets, sets_cap;
  struct hashtab index;
  uint32_t *local; /* the stream's set number - 1 -> id */
  size_t nlocal, local_cap;
  uint64_t folded; /* distinct sets folded, as the streams' stats say */
  int folded_more; /* a stream told LJ_LABELS_FOLDMAX apart: or more */
};

void labelsets_init(struct labelsets *ls);
void labelsets_free(struct labelsets *ls);

/* The id of the set of these labels (sorted by key), added if new. */
uint32_t labelsets_intern(struct labelsets *ls, const struct label *labels,
                          size_t n);

/* The stream's next set number (1, 2, ...) names set id. */
void labelsets_announce(struct labelsets *ls, uint32_t id);
/* The id a set number of the stream names: LABELS_NONE for 0,
** LABELS_OTHER for LJ_LABELS_OTHER; HASHTAB_NONE if not announced. */
uint32_t labelsets_local(const struct labelsets *ls, uint64_t number);
/* Before the next stream of a merge: its numbers are its own. */
void labelsets_forget_stream(struct labelsets *ls);

static inline const struct label *labelsets_get(const struct labelsets *ls,
                                                uint32_t id, size_t *n) {
  *n = id < ls->nsets ? ls->sets[id].n : 0;
  return *n ? ls->labels + ls->sets[id].first : NULL;
}

/* The value (string id) a set gives key (string id), or UINT32_MAX. */
uint32_t labelsets_value(const struct labelsets *ls, uint32_t id,
                         uint32_t key);

/*
** A key or value as every report writes it (docs/ljprof.md, "Labels"):
** its bytes as they are but '%', ';', '=', control bytes (below 0x20, and
** 0x7f) and bytes that are not valid UTF-8, each written as '%' and two
** upper-case hexadecimal digits. Such text is one line, one frame of
** collapsed stacks, one `KEY=VALUE`, and reads back whole.
*/
void labels_escape(struct sbuf *sb, const char *s, size_t len);
/* The bytes escaped text stands for, appended to sb; 0 at a '%' not
** followed by two hexadecimal digits. */
int labels_unescape(struct sbuf *sb, const char *s, size_t len);

#endif
