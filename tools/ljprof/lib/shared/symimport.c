/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "symimport.h"

#include <stdlib.h>

static uint32_t *import_strings(struct symbols *into,
                                const struct symbols *from) {
  uint32_t *map = xmalloc((from->nstrings + 1) * sizeof *map);
  for (size_t i = 0; i < from->nstrings; i++)
    map[i] = symbols_intern(into, from->strings[i].data, from->strings[i].len);
  return map;
}

static uint32_t string_of(const uint32_t *strings, uint32_t id) {
  return id == SYMBOLS_NONE ? id : strings[id];
}

static void import_locations(struct symbols *into, const struct symbols *from,
                             const uint32_t *strings, struct symimport *map) {
  map->loc = xmalloc((from->nlocations + 1) * sizeof *map->loc);
  for (size_t i = 0; i < from->nlocations; i++) {
    struct location loc = from->locations[i];
    loc.name = string_of(strings, loc.name);
    map->loc[i] = symbols_location_id(into, loc);
  }
}

static void import_stacks(struct symbols *into, const struct symbols *from,
                          struct symimport *map) {
  map->stack_base = (uint32_t)into->nstacks;
  grow_array((void **)&into->stack_frames, &into->stack_frames_cap,
             into->nstack_frames + from->nstack_frames,
             sizeof *into->stack_frames);
  grow_array((void **)&into->stacks, &into->stacks_cap,
             into->nstacks + from->nstacks, sizeof *into->stacks);
  uint32_t frame_base = (uint32_t)into->nstack_frames;
  for (size_t i = 0; i < from->nstack_frames; i++) {
    const struct symframe *f = &from->stack_frames[i];
    into->stack_frames[into->nstack_frames++] =
        (struct symframe){map->loc[f->loc], map->loc[f->func]};
  }
  for (size_t i = 0; i < from->nstacks; i++)
    into->stacks[into->nstacks++] = (struct symstack){
        frame_base + from->stacks[i].first, from->stacks[i].depth};
}

static void import_labels(struct labelsets *into, const struct labelsets *from,
                          const uint32_t *strings, struct symimport *map) {
  map->labels = xmalloc((from->nsets + 2) * sizeof *map->labels);
  map->labels[LABELS_NONE] = LABELS_NONE;
  map->labels[LABELS_OTHER] = LABELS_OTHER;
  struct label *labels = NULL;
  size_t cap = 0;
  for (uint32_t id = LABELS_OTHER + 1; id < from->nsets; id++) {
    size_t n;
    const struct label *l = labelsets_get(from, id, &n);
    grow_array((void **)&labels, &cap, n + 1, sizeof *labels);
    for (size_t i = 0; i < n; i++)
      labels[i] = (struct label){strings[l[i].key], strings[l[i].value]};
    map->labels[id] = labelsets_intern(into, labels, n);
  }
  free(labels);
  into->folded = add_sat(into->folded, from->folded);
  into->folded_more |= from->folded_more;
}

void symimport_add(struct symbols *into, const struct symbols *from,
                   struct symimport *map) {
  map->strings = import_strings(into, from);
  import_locations(into, from, map->strings, map);
  import_stacks(into, from, map);
  import_labels(&into->labels, &from->labels, map->strings, map);
  into->memprof = from->memprof;
  into->process = from->process;
}

void symimport_free(struct symimport *map) {
  free(map->strings);
  free(map->loc);
  free(map->labels);
  map->strings = map->loc = map->labels = NULL;
}
