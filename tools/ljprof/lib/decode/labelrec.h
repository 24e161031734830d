/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The label records both profilers write (sysprof v4, memprof v6; the
** grammar in lj_profstream.h, "Labels"): a set announced, a set in force,
** mode D's samples by set. Read into the resolver's label sets
** (shared/labelsets.h), checked as docs/formats.md says (damage: a set
** out of order or past LJ_LABELSETS_MAX, a number not announced, a set
** out of bounds). A record cut short or damaged leaves no set behind.
*/
#ifndef LJPROF_LABELREC_H
#define LJPROF_LABELREC_H

#include <stdint.h>

#include "shared/reader.h"
#include "shared/symbols.h"

/* A set record after its record byte or info kind: its number, its set. */
int labelrec_read_set(struct reader *r, struct symbols *sym,
                      struct sbuf *scratch);

/* A labels record: the id of the set it puts in force into *id. */
int labelrec_read_in_force(struct reader *r, const struct symbols *sym,
                           uint32_t *id);

/* Mode D's samples by set: count(ud, set id, samples) for each. */
int labelrec_read_counts(struct reader *r, const struct symbols *sym,
                         void (*count)(void *ud, uint32_t id, uint64_t n),
                         void *ud);

/* The stats' trailing count of the sets folded, added to the resolver's. */
int labelrec_read_folded(struct reader *r, struct symbols *sym);

#endif
