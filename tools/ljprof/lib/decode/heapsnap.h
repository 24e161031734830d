/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Heap snapshots ('ljh', lj_profstream.h) decoded into memory: objects by
** number, each with its edges, and the roots as the edges of a root that
** is no object. A damaged stream keeps what came before the damage:
** objects named but never described have type 0.
*/
#ifndef LJPROF_HEAPSNAP_H
#define LJPROF_HEAPSNAP_H

#include <stdint.h>

#include "shared/hashtab.h"
#include "lj_profstream.h"
#include "shared/reader.h"
#include "shared/util.h"

/* The key edge of a hash slot with a GC key: its own kind here (in the
** stream, HSTR and HOBJ stand for both). */
#define HS_E_KEY LJH_E__MAX
#define HS_NONE UINT32_MAX

struct hs_object {
  uint64_t addr;
  uint64_t size;  /* bytes the object takes, as the VM accounts them */
  uint32_t edges; /* its first edge */
  uint32_t aux;   /* string: name + 1 (0: no contents); table: asize;
                     proto: index in protos; cdata: ctype id; trace: its
                     number; C function: ffid; thread: status; upvalue:
                     closed; userdata: udtype */
  uint32_t aux2;  /* string: length; table: hash slots */
  uint8_t type;   /* LJH_OBJ_*; 0: never described */
  uint8_t flags;  /* the header's high bits */
};

struct hs_edge {
  uint64_t name; /* by kind: index, key object, number, line, slot << 32 |
                    name, root kind << 32 | arg */
  uint32_t target;
  uint8_t kind; /* LJH_E_*, HS_E_KEY */
  uint8_t weak;
};

/* A piece of text: an offset into the snapshot's text, a length. */
struct hs_name {
  uint32_t off, len;
};

struct hs_proto {
  uint32_t firstline, numline;
  uint32_t uvnames, nuv; /* names[uvnames .. +nuv] */
};

struct heapsnap {
  struct hs_object *obj;
  size_t nobj, capobj;
  uint32_t nrecorded; /* objects whose records came */
  struct hs_edge *edge; /* the roots' first, then each object's */
  size_t nedge, capedge;
  uint32_t nroot; /* edges of the roots */
  struct hs_proto *proto;
  size_t nproto, capproto;
  struct hs_name *names;
  size_t nnames, capnames;
  struct sbuf text;
  struct keymap ctypes; /* ctype id -> name */
  uint64_t flags, strings_max, upval_size;
  uint64_t memprof_mark; /* the id a memprof stream marks it by; 0: none */
  /* The info record, if it came. */
  int has_info;
  uint64_t pause_ns, info_objects, info_edges, info_bytes;
};

/* Is this stream a heap snapshot? (Its first 3 bytes.) */
int heapsnap_magic(const uint8_t *p, size_t n);

/* Decode r to its end or its damage (the reader says which). */
void heapsnap_read(struct reader *r, struct heapsnap *s);
void heapsnap_free(struct heapsnap *s);

/* Edges of object id (the root: HS_NONE): [*first, *end). */
static inline void heapsnap_edges(const struct heapsnap *s, uint32_t id,
                                  uint32_t *first, uint32_t *end) {
  if (id == HS_NONE) {
    *first = 0;
    *end = s->nroot;
    return;
  }
  *first = s->obj[id].edges;
  *end = id + 1 < s->nobj ? s->obj[id + 1].edges : (uint32_t)s->nedge;
}

static inline const char *heapsnap_text(const struct heapsnap *s,
                                        uint32_t name, uint32_t *len) {
  *len = s->names[name].len;
  return s->text.data + s->names[name].off;
}

/* The contents of a string object, if written; NULL if not. */
const char *heapsnap_string(const struct heapsnap *s, uint32_t id,
                            uint32_t *len);
/* A type's name: "table", "string", ... */
const char *heapsnap_typename(unsigned type);

#endif
