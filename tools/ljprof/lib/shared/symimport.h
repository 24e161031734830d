/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** A stream read with a resolver of its own (on a thread of its own, for
** a merge), added to the merge's resolver as if read there: its strings,
** locations, stacks and label sets, each kind in the order the stream
** made them, so that the ids new to the merge come in the order reading
** the streams one after the other gives them. What the stream says of
** itself (memprof, its process) replaces the merge's, as
** symbols_forget_bindings() leaves it for the stream read next.
*/
#ifndef LJPROF_SYMIMPORT_H
#define LJPROF_SYMIMPORT_H

#include <stdint.h>

#include "symbols.h"

/* The stream's ids to the merge's. */
struct symimport {
  uint32_t *strings; /* by the stream's string id */
  uint32_t *loc;    /* by the stream's location id */
  uint32_t *labels; /* by the stream's label set id */
  uint32_t stack_base; /* the merge's id of the stream's stack 0 */
};

/* Add from to into (after symbols_forget_bindings(into) for every stream
** but the first); map says what its ids became. symimport_free() it. */
void symimport_add(struct symbols *into, const struct symbols *from,
                   struct symimport *map);
void symimport_free(struct symimport *map);

/* A location id of the stream's (or SYMBOLS_NONE) as the merge's. */
static inline uint32_t symimport_loc(const struct symimport *map,
                                     uint32_t loc) {
  return loc == SYMBOLS_NONE ? loc : map->loc[loc];
}

#endif
