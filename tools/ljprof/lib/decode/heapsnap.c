/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "heapsnap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* More objects than this is not a stream our writer makes. */
#define OBJECTS_MAX (UINT32_MAX / 2)
#define TEXT_MAX (1u << 20) /* of one name */

int heapsnap_magic(const uint8_t *p, size_t n) {
  return n >= 3 && p[0] == 'l' && p[1] == 'j' && p[2] == 'h';
}

static const char *const type_names[] = {
    "unknown", "string", "upvalue", "thread",   "proto", "function",
    "C function", "trace", "cdata", "table", "userdata"};

const char *heapsnap_typename(unsigned type) {
  return type < sizeof type_names / sizeof *type_names ? type_names[type]
                                                       : "unknown";
}

static int corrupt(struct reader *r, uint64_t at, const char *what) {
  reader_fail(r, READER_CORRUPT, at, "corrupt at offset %" PRIu64 ": %s", at,
              what);
  return 0;
}

/* A new object, named for the first time: described later. */
static uint32_t new_object(struct heapsnap *s) {
  grow_mapped((void **)&s->obj, &s->capobj, s->nobj + 1, sizeof *s->obj);
  memset(&s->obj[s->nobj], 0, sizeof *s->obj);
  return (uint32_t)s->nobj++;
}

/* A target field (0 none, 1 new, else a number named before) with
** objects numbered below nobj: its id (HS_NONE for none, nobj for a new
** one); 0 if it may not name that. */
static int target_of(uint64_t t, size_t nobj, int none_ok, uint32_t *id) {
  if (t == LJH_TARGET_NONE) {
    *id = HS_NONE;
    return none_ok;
  }
  if (t == LJH_TARGET_NEW) {
    *id = (uint32_t)nobj;
    return nobj < OBJECTS_MAX;
  }
  *id = (uint32_t)(t - LJH_TARGET_ID);
  return t - LJH_TARGET_ID < nobj;
}

/* The new object a target's id names, if it named one. */
static void add_if_new(struct heapsnap *s, uint32_t id) {
  if (id == s->nobj) new_object(s);
}

static int read_target(struct reader *r, struct heapsnap *s, int none_ok,
                       uint32_t *id, const char *what) {
  uint64_t at = reader_offset(r), t;
  if (!reader_uleb(r, &t, what)) return 0;
  if (!target_of(t, s->nobj, none_ok, id))
    return corrupt(r, at,
                   t == LJH_TARGET_NEW ? "too many objects"
                                       : "edge to an object never named");
  add_if_new(s, *id);
  return 1;
}

static void add_edge(struct heapsnap *s, uint8_t kind, uint64_t name,
                     uint32_t target, int weak) {
  grow_mapped((void **)&s->edge, &s->capedge, s->nedge + 1, sizeof *s->edge);
  s->edge[s->nedge++] = (struct hs_edge){name, target, kind, (uint8_t)weak};
}

/* A piece of text into the snapshot's own; its name's number. */
static int read_text(struct reader *r, struct heapsnap *s, uint32_t *name,
                     struct sbuf *tmp, const char *what) {
  if (!reader_string(r, tmp, TEXT_MAX, what)) return 0;
  grow_array((void **)&s->names, &s->capnames, s->nnames + 1,
             sizeof *s->names);
  s->names[s->nnames] = (struct hs_name){(uint32_t)s->text.len,
                                         (uint32_t)tmp->len};
  sbuf_add(&s->text, tmp->data, tmp->len);
  *name = (uint32_t)s->nnames++;
  return 1;
}

/* One edge of an object whose header was hdr, or of the roots (hdr 0);
** 0 at the end (or damage). */
static int read_edge(struct reader *r, struct heapsnap *s, uint8_t hdr,
                     struct sbuf *tmp) {
  uint64_t at = reader_offset(r), a = 0, b = 0;
  uint8_t kind;
  uint32_t target, name;
  int weakk = (hdr & LJH_WEAKKEY) != 0, weakv = (hdr & LJH_WEAKVAL) != 0;
  if (!reader_u8(r, &kind, "edge kind") || kind == LJH_E_END) return 0;
  /* Paths name a root by its kind, an object's edge by its object. */
  if ((hdr == 0) != (kind == LJH_E_ROOT))
    return corrupt(r, at, hdr ? "a root edge of an object" : "a root that "
                                "is no root edge");
  switch (kind) {
  case LJH_E_HSTR:
  case LJH_E_HOBJ: {
    uint32_t key;
    if (!read_target(r, s, 0, &key, "edge: key") ||
        !read_target(r, s, 1, &target, "edge: target"))
      return 0;
    add_edge(s, HS_E_KEY, 0, key, weakk);
    if (target != HS_NONE) add_edge(s, kind, key, target, weakv);
    return 1;
  }
  case LJH_E_ARRAY: case LJH_E_HINT: case LJH_E_HNUM: case LJH_E_HLIGHT:
  case LJH_E_UPVAL: case LJH_E_KGC: case LJH_E_FRAME:
    if (!reader_uleb(r, &a, "edge: name")) return 0;
    break;
  case LJH_E_HBOOL: {
    uint8_t v;
    if (!reader_u8(r, &v, "edge: boolean key")) return 0;
    a = v;
    break;
  }
  case LJH_E_SLOT:
    if (!reader_uleb(r, &b, "edge: slot") ||
        !read_text(r, s, &name, tmp, "edge: slot name"))
      return 0;
    a = b << 32 | name;
    break;
  case LJH_E_ROOT:
    if (!reader_uleb(r, &a, "edge: root kind") ||
        !reader_uleb(r, &b, "edge: root number"))
      return 0;
    if (a >= LJH_ROOT__MAX || b > UINT32_MAX)
      return corrupt(r, at, "unknown root kind");
    a = a << 32 | b;
    break;
  case LJH_E_META: case LJH_E_ENV: case LJH_E_VALUE: case LJH_E_PROTO:
  case LJH_E_CHUNK: case LJH_E_TRACE:
    break;
  default:
    return corrupt(r, at, "unknown edge kind");
  }
  if (!read_target(r, s, 0, &target, "edge: target")) return 0;
  int weak = 0;
  if (kind == LJH_E_ARRAY || kind == LJH_E_HINT || kind == LJH_E_HNUM ||
      kind == LJH_E_HBOOL || kind == LJH_E_HLIGHT)
    weak = weakv;
  add_edge(s, kind, a, target, weak);
  return 1;
}

/* The longest edge the fast path takes: a kind and two fields. */
#define FAST_EDGE_BYTES (1 + 2 * ULEB128_MAX_BYTES)

/*
** An object's edges of the kinds that carry numbers only, while the
** buffered bytes hold a longest one: what read_edge() makes of them, the
** fields decoded without a check per byte and no offsets kept for
** errors. It stops, taking nothing of it, at the end mark, an edge with
** a text or a boolean key, one that names what it may not, or one
** malformed: read_edge() reads that one and words any damage.
*/
static void fast_edges(struct reader *r, struct heapsnap *s, uint8_t hdr) {
  int weakk = (hdr & LJH_WEAKKEY) != 0, weakv = (hdr & LJH_WEAKVAL) != 0;
  const uint8_t *w;
  while ((w = reader_window(r, FAST_EDGE_BYTES)) != NULL) {
    const uint8_t *p = w + 1;
    unsigned kind = w[0];
    uint64_t a = 0, t;
    uint32_t key, target;
    int used = 0;
    switch (kind) {
    case LJH_E_HSTR:
    case LJH_E_HOBJ:
      used |= uleb128_take(&p, &a);
      used |= uleb128_take(&p, &t);
      if (used < 0 || !target_of(a, s->nobj, 0, &key) ||
          !target_of(t, s->nobj + (key == s->nobj), 1, &target))
        return;
      add_if_new(s, key);
      add_edge(s, HS_E_KEY, 0, key, weakk);
      if (target != HS_NONE) {
        add_if_new(s, target);
        add_edge(s, (uint8_t)kind, key, target, weakv);
      }
      reader_skip(r, (size_t)(p - w));
      continue;
    case LJH_E_ARRAY: case LJH_E_HINT: case LJH_E_HNUM: case LJH_E_HLIGHT:
    case LJH_E_UPVAL: case LJH_E_KGC: case LJH_E_FRAME:
      used |= uleb128_take(&p, &a);
      break;
    case LJH_E_META: case LJH_E_ENV: case LJH_E_VALUE: case LJH_E_PROTO:
    case LJH_E_CHUNK: case LJH_E_TRACE:
      break;
    default: /* the end, a slot, a boolean key, a root, or damage */
      return;
    }
    used |= uleb128_take(&p, &t);
    if (used < 0 || !target_of(t, s->nobj, 0, &target)) return;
    add_if_new(s, target);
    int weak = kind == LJH_E_ARRAY || kind == LJH_E_HINT ||
               kind == LJH_E_HNUM || kind == LJH_E_HLIGHT;
    add_edge(s, (uint8_t)kind, a, target, weak && weakv);
    reader_skip(r, (size_t)(p - w));
  }
}

static int read_ulebs(struct reader *r, uint64_t *v, int n,
                      const char *const *what) {
  for (int i = 0; i < n; i++)
    if (!reader_uleb(r, &v[i], what[i])) return 0;
  return 1;
}

/* The fields of an object of type t after its address. */
static int read_fields(struct reader *r, struct heapsnap *s,
                       struct hs_object *o, uint8_t hdr, struct sbuf *tmp) {
  static const char *const what[] = {"object: size", "object: field",
                                     "object: field", "object: field"};
  uint64_t v[4] = {0};
  uint32_t name;
  switch (o->type) {
  case LJH_OBJ_STR:
    if (!reader_uleb(r, &v[0], "string: length") ||
        !reader_uleb(r, &v[1], "string: extra bytes"))
      return 0;
    o->aux2 = v[0] > UINT32_MAX ? UINT32_MAX : (uint32_t)v[0];
    o->size = add_sat(v[0], v[1]);
    if (hdr & LJH_CONTENT) {
      if (!read_text(r, s, &name, tmp, "string: contents")) return 0;
      o->aux = name + 1;
    }
    return 1;
  case LJH_OBJ_UPVAL: {
    uint8_t closed;
    if (!reader_u8(r, &closed, "upvalue: closed")) return 0;
    o->aux = closed;
    o->size = s->upval_size;
    return 1;
  }
  case LJH_OBJ_THREAD: {
    uint8_t status;
    if (!reader_uleb(r, &o->size, "thread: size") ||
        !reader_u8(r, &status, "thread: status"))
      return 0;
    o->aux = status;
    return 1;
  }
  case LJH_OBJ_PROTO: {
    if (!read_ulebs(r, v, 4, what)) return 0;
    o->size = v[0];
    struct hs_proto p = {(uint32_t)v[1], (uint32_t)v[2],
                         (uint32_t)s->nnames, 0};
    if (v[3] > 255) return corrupt(r, reader_offset(r), "proto: upvalues");
    for (uint64_t i = 0; i < v[3]; i++, p.nuv++)
      if (!read_text(r, s, &name, tmp, "proto: upvalue name")) return 0;
    grow_array((void **)&s->proto, &s->capproto, s->nproto + 1,
               sizeof *s->proto);
    s->proto[s->nproto] = p;
    o->aux = (uint32_t)s->nproto++;
    return 1;
  }
  case LJH_OBJ_LFUNC:
    return reader_uleb(r, &o->size, "function: size");
  case LJH_OBJ_CFUNC:
    if (!read_ulebs(r, v, 3, what)) return 0;
    o->size = v[0];
    o->aux2 = (uint32_t)v[1]; /* low bits of the code address */
    o->aux = (uint32_t)v[2];
    return 1;
  case LJH_OBJ_TRACE: case LJH_OBJ_CDATA: case LJH_OBJ_UDATA:
    if (!read_ulebs(r, v, 2, what)) return 0;
    o->size = v[0];
    o->aux = (uint32_t)v[1];
    return 1;
  case LJH_OBJ_TAB:
    if (!read_ulebs(r, v, 3, what)) return 0;
    o->size = v[0];
    o->aux = (uint32_t)v[1];
    o->aux2 = (uint32_t)v[2];
    return 1;
  }
  return corrupt(r, reader_offset(r), "unknown object type");
}

static int read_object(struct reader *r, struct heapsnap *s, uint8_t hdr,
                       uint64_t *lastaddr, struct sbuf *tmp) {
  uint64_t at = reader_offset(r) - 1, delta;
  if (s->nrecorded >= s->nobj)
    return corrupt(r, at, "an object no edge named");
  struct hs_object *o = &s->obj[s->nrecorded];
  if (!reader_uleb(r, &delta, "object: address")) return 0;
  *lastaddr += (delta & 1) ? ~(delta >> 1) : delta >> 1;
  o->addr = *lastaddr;
  o->type = hdr & LJH_OBJ_MASK;
  o->flags = hdr & ~LJH_OBJ_MASK;
  o->edges = (uint32_t)s->nedge;
  if (!read_fields(r, s, o, hdr, tmp)) return 0;
  s->nrecorded++; /* its edges follow: found in a cut stream too */
  if (o->type == LJH_OBJ_STR || o->type == LJH_OBJ_CDATA) return 1;
  do fast_edges(r, s, hdr);
  while (read_edge(r, s, hdr, tmp));
  return r->status == READER_OK;
}

static int read_name(struct reader *r, struct heapsnap *s,
                     struct sbuf *tmp) {
  uint64_t at = reader_offset(r), id;
  uint32_t name;
  if (!reader_uleb(r, &id, "name: object") ||
      !read_text(r, s, &name, tmp, "name: contents"))
    return 0;
  if (id >= s->nrecorded || s->obj[id].type != LJH_OBJ_STR)
    return corrupt(r, at, "a name for no string");
  s->obj[id].aux = name + 1;
  return 1;
}

static int read_ctype(struct reader *r, struct heapsnap *s,
                      struct sbuf *tmp) {
  uint64_t id;
  uint32_t name;
  if (!reader_uleb(r, &id, "ctype: id") ||
      !read_text(r, s, &name, tmp, "ctype: name"))
    return 0;
  keymap_put(&s->ctypes, id, name);
  return 1;
}

static int read_info(struct reader *r, struct heapsnap *s) {
  static const char *const what[] = {"info: pause", "info: objects",
                                     "info: edges", "info: bytes"};
  uint64_t v[4];
  if (!read_ulebs(r, v, 4, what)) return 0;
  s->has_info = 1;
  s->pause_ns = v[0];
  s->info_objects = v[1];
  s->info_edges = v[2];
  s->info_bytes = v[3];
  return 1;
}

void heapsnap_read(struct reader *r, struct heapsnap *s) {
  static const char *const what[] = {"config: flags", "config: strings",
                                     "config: upvalue size"};
  uint64_t cfg[3], lastaddr = 0;
  uint8_t magic[3], version, reserved[3], tag;
  struct sbuf tmp = {0};
  memset(s, 0, sizeof *s);
  if (!reader_bytes(r, magic, 3, "magic 'ljh'")) return;
  if (!heapsnap_magic(magic, 3)) {
    corrupt(r, 0, "not a heap snapshot (magic 'ljh')");
    return;
  }
  if (!reader_u8(r, &version, "version byte") ||
      !reader_bytes(r, reserved, 3, "reserved prologue bytes"))
    return;
  if (version != LJH_VERSION) {
    reader_fail(r, READER_UNSUPPORTED, 3,
                "unsupported heap snapshot version %u (expected %d)", version,
                LJH_VERSION);
    return;
  }
  if (!read_ulebs(r, cfg, 3, what)) return;
  s->flags = cfg[0];
  s->strings_max = cfg[1];
  s->upval_size = cfg[2];
  while (reader_u8(r, &tag, "record")) {
    uint64_t at = reader_offset(r) - 1;
    int ok;
    if (tag == LJH_END) break;
    if (tag == LJH_REC_ROOTS) {
      if (s->nedge != 0) {
        corrupt(r, at, "roots twice");
        break;
      }
      while (read_edge(r, s, 0, &tmp)) {
      }
      s->nroot = (uint32_t)s->nedge;
      ok = r->status == READER_OK;
    } else if (tag == LJH_REC_CTYPE) {
      ok = read_ctype(r, s, &tmp);
    } else if (tag == LJH_REC_NAME) {
      ok = read_name(r, s, &tmp);
    } else if (tag == LJH_REC_INFO) {
      ok = read_info(r, s);
    } else if (tag == LJH_REC_MEMPROF && s->nedge == 0 && !s->memprof_mark) {
      ok = reader_uleb(r, &s->memprof_mark, "memprof mark: id");
    } else if ((tag & 0x90) == 0 && (tag & LJH_OBJ_MASK) != 0) {
      ok = read_object(r, s, tag, &lastaddr, &tmp);
    } else {
      ok = corrupt(r, at, "unknown record");
    }
    if (!ok) break;
  }
  if (r->status == READER_OK && tag == LJH_END && !reader_at_end(r))
    corrupt(r, reader_offset(r), "data after the end of the heap snapshot");
  /* Objects named but never described have no edges. */
  for (size_t i = s->nrecorded; i < s->nobj; i++)
    s->obj[i].edges = (uint32_t)s->nedge;
  sbuf_free(&tmp);
}

const char *heapsnap_string(const struct heapsnap *s, uint32_t id,
                            uint32_t *len) {
  if (id >= s->nobj || s->obj[id].type != LJH_OBJ_STR || !s->obj[id].aux)
    return NULL;
  return heapsnap_text(s, s->obj[id].aux - 1, len);
}

void heapsnap_free(struct heapsnap *s) {
  mapped_free(s->obj, s->capobj, sizeof *s->obj);
  mapped_free(s->edge, s->capedge, sizeof *s->edge);
  free(s->proto);
  free(s->names);
  sbuf_free(&s->text);
  keymap_free(&s->ctypes);
  memset(s, 0, sizeof *s);
}
