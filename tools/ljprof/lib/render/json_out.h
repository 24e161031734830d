/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** What the JSON reports share: numbers and byte strings as JSON values,
** the error object of a damaged stream, writing a document.
*/
#ifndef LJPROF_JSON_OUT_H
#define LJPROF_JSON_OUT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "aggregate/heapline.h"
#include "aggregate/labels.h"
#include "aggregate/profile.h"
#include "shared/reader.h"
#include "shared/symbols.h"

/* Counters above what a JSON integer holds come out as (inexact) reals. */
json_t *json_u64(uint64_t v);

/* A JSON string from arbitrary bytes: bytes that are not UTF-8 become the
** text \xNN, so any name (symbols are raw bytes) prints. */
json_t *json_bytes(const char *data, size_t len);

/* A profile stack as the frame indexes from its root to its leaf. */
json_t *json_profile_stack(const struct profile *p,
                           const struct profile_stack *st);

/* The full name of a location (no aliases). */
json_t *json_location(const struct symbols *sym, uint32_t loc,
                      struct sbuf *scratch);

/*
** Heap over time: {marks, points, peak_bytes, peak_ns, time_ns: [..],
** events: [..], total: [..], sites: [{location, peak_bytes, bytes: [..]}],
** other: [..]}, a value per point in each list; the sites are the top
** ones by peak, and other what the rest held. JSON null when the stream
** had no time marks (or h is NULL).
*/
json_t *json_heapline(const struct heapline *h, const struct symbols *sym);

/* Of several streams merged, add "streams": [{name, samples}] (CPU) or
** [{name, alloc_bytes, inuse_bytes}] (memory), in the order given, with
** pid, host and started_ns (the wall clock, ns since the epoch) when the
** stream says. */
void json_add_origins(json_t *root, const struct origins *o,
                      enum profile_kind kind);

/* A label set as an object, key to value (json_bytes()); NULL for none
** (LABELS_NONE) and for the folded sets. */
json_t *json_labels(const struct symbols *sym, uint32_t set);

/*
** Add "by_label" to root when the table has rows: {folded: the sets
** folded, rows: [{key, value (null: none, or the folded sets when
** "folded" is true), WHAT: the row's total, top: the frames of its top
** item, outermost first, as top(item, ud) gives them}]}.
*/
void json_add_by_label(json_t *root, const struct symbols *sym,
                       const struct labeltable *t, const char *what,
                       json_t *(*top)(size_t item, void *ud), void *ud);

/* Add "error": {offset, message} to root if the reader failed. */
void json_add_error(json_t *root, const struct reader *r);

/* Write root (and a newline), release it; 0, or -1 if writing failed. */
int json_write(json_t *root, FILE *out);

#endif
