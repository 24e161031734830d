/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Labels in the aggregations: which samples and events a report keeps
** (`--label=KEY=VALUE`, a split by a key's values), and the table by
** label (each key's values, what each holds, the top stack under each).
**
** - A filter is terms that must all hold: a key with a value, a key
**   absent, or the folded sets (LABELS_OTHER, a split's part of them).
**   Folded sets may carry any key: only that last term keeps them.
** - Memory: a filter keeps an allocation or reallocation by its set, and
**   a block's later events with it (its reallocations under a set the
**   filter drops count as its free, those the filter keeps of a dropped
**   block as an allocation); a free of a block allocated before the
**   profile began is kept.
*/
#ifndef LJPROF_LABELS_H
#define LJPROF_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "decode/memprof.h"
#include "decode/sysprof.h"
#include "shared/livetab.h"
#include "shared/symbols.h"

/* A term as the command line gives it: bytes, unescaped. */
struct labelterm {
  const char *key, *value; /* value NULL: the key absent */
  size_t key_len, value_len;
  int other; /* the folded sets (key and value unused) */
};

/* The value of a key in no set (`(none)`) or in the folded sets. */
#define LABEL_VALUE_NONE UINT32_MAX
#define LABEL_VALUE_OTHER (UINT32_MAX - 1)

struct labelfilter {
  const struct symbols *sym;
  struct label *terms; /* key, value: string ids, LABEL_VALUE_NONE (absent)
                          or LABEL_VALUE_OTHER (the folded sets) */
  size_t n;
  uint8_t *memo; /* by set id: 0 not yet known, 1 kept, 2 dropped */
  size_t memo_cap;
};

/* Terms compiled against the resolver that will name the sets. */
void labelfilter_init(struct labelfilter *f, struct symbols *sym,
                      const struct labelterm *terms, size_t n);
void labelfilter_free(struct labelfilter *f);
int labelfilter_keeps(struct labelfilter *f, uint32_t set);

/* The value a set gives a key: a string id, LABEL_VALUE_NONE or
** LABEL_VALUE_OTHER. */
uint32_t labels_value_of(const struct symbols *sym, uint32_t set,
                         uint32_t key);

/* A sink that passes on what the filter keeps to another one. */
struct labelgate {
  struct labelfilter *filter;
  struct memprof_sink mem; /* where events go */
  struct livetab dropped;  /* blocks the filter dropped, by address */
  struct memprof_event batch[MEMPROF_BATCH];
  struct sysprof_sink cpu; /* where samples go */
};

void labelgate_init(struct labelgate *g, struct labelfilter *filter,
                    const struct memprof_sink *mem,
                    const struct sysprof_sink *cpu);
void labelgate_free(struct labelgate *g);
/* The gate's sinks. */
struct memprof_sink labelgate_memprof(struct labelgate *g);
struct sysprof_sink labelgate_sysprof(struct labelgate *g);

/* What a table by label counts: per label set, a value (samples, bytes),
** and the items (stacks) whose top is shown, each with its set. */
struct labelitem {
  uint32_t set;
  uint64_t value;
};

/* A row: a key's value (string id, LABEL_VALUE_NONE or _OTHER), what its
** sets hold, its top item (SIZE_MAX: none). */
struct labelrow {
  uint32_t key, value;
  uint64_t total;
  size_t top;
};

struct labeltable {
  struct labelrow *rows; /* by key (its bytes), then most first */
  size_t n;
  uint64_t total; /* of all sets */
};

/* The items of an aggregation (*n of them, to free), asked for only by a
** table that has rows: a merge without labels has many stacks. */
typedef struct labelitem *(*labelitems_fn)(const void *agg, size_t *n);

/*
** The table of the sets' values (set_values[id] for ids below nsets) and
** the items of agg; empty when nothing was counted under a set with
** labels (a stream without labels: its reports stay as they were). Keys
** limits the table to one key (string id), or SYMBOLS_NONE for all.
*/
void labeltable_build(struct labeltable *t, const struct symbols *sym,
                      const uint64_t *set_values, size_t nsets,
                      labelitems_fn items_of, const void *agg,
                      uint32_t key);
void labeltable_free(struct labeltable *t);

struct sysagg;
struct memagg;
/* The table of a CPU aggregation: samples; the items its stacks. */
void labeltable_cpu(struct labeltable *t, const struct sysagg *agg,
                    uint32_t key);
/* Of a memory one: bytes allocated (or in use at the end, live); the
** items its (site, stack, set) pairs. */
void labeltable_memory(struct labeltable *t, const struct memagg *agg,
                       int live, uint32_t key);

/* A row's value as reports write it: escaped, `(none)`, or
** `(other: N sets folded)`. */
void labels_format_value(const struct symbols *sym, uint32_t value,
                         struct sbuf *sb);

#endif
