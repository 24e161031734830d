/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** A heap snapshot as a graph: who retains what. Node n = the snapshot's
** object count is the root, whose edges are the VM's roots; weak edges
** (weak tables' keys or values) retain nothing and make no path.
**
**  - the dominator tree: idom[v], the object all strong paths from the
**    root to v pass through last (Cooper, Harvey and Kennedy's iterative
**    algorithm over the reverse postorder), and retained[v], the bytes
**    freed if v's references were dropped: its size and those of the
**    objects it dominates;
**  - the shortest strong path from the root to each object (breadth
**    first), rendered in Lua's words, and its pattern: the same path with
**    indexes and addresses as *, so that one structure is one line.
*/
#ifndef LJPROF_HEAPGRAPH_H
#define LJPROF_HEAPGRAPH_H

#include "decode/heapsnap.h"

struct heapgraph {
  const struct heapsnap *snap;
  uint32_t root;       /* = snap->nobj */
  uint32_t *idom;      /* HS_NONE: not strongly reachable */
  uint64_t *retained;
  uint32_t *via;       /* the edge a shortest path reaches v by */
  uint32_t *pattern;   /* of v's path; HS_NONE when it has none */
  uint32_t npatterns;
  uint32_t *pattern_parent;
  uint32_t *pattern_step; /* a name in steps */
  struct sbuf steps;
  struct hs_name *step_names;
  size_t nsteps, capsteps;
  uint32_t reachable; /* strongly, objects */
};

void heapgraph_build(struct heapgraph *h, const struct heapsnap *s);
void heapgraph_free(struct heapgraph *h);

/* Objects and their own bytes. */
struct heap_tally {
  uint64_t count, bytes;
};

/* Every object by type, into types[LJH_OBJ_MASK + 1] (zeroed first); the
** strongly reachable ones by their path's pattern, into
** patterns[npatterns]; those only weakly reachable into *weak. */
void heapgraph_tally(const struct heapgraph *h, struct heap_tally *types,
                     struct heap_tally *patterns, struct heap_tally *weak);

/* The path to object v, or "(only weakly reachable)". */
void heapgraph_path(const struct heapgraph *h, uint32_t v, struct sbuf *out);
/* The object edge e leaves; HS_NONE for the root's. */
uint32_t heapgraph_source(const struct heapsnap *s, uint32_t e);
/* A pattern's text. */
void heapgraph_pattern(const struct heapgraph *h, uint32_t p,
                       struct sbuf *out);
/* Edge e, which leaves src (HS_NONE: the root), in the words of a path:
** ".cache", "[3]", "<upvalue "memo" of function app.lua:5>", "_G". */
void heapgraph_step(const struct heapgraph *h, uint32_t src, uint32_t e,
                    struct sbuf *out);
/* What object v is, in a few words: its type, or for a function where it
** is defined, for a string its contents (if written), for a cdata its
** ctype. */
void heapgraph_name(const struct heapsnap *s, uint32_t v, struct sbuf *out);
/* "table 0x55...": an object's type and address. */
void heapgraph_object(const struct heapsnap *s, uint32_t v, struct sbuf *out);

#endif
