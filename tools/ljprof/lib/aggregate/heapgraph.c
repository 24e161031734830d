/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "heapgraph.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* -- The strong graph ------------------------------------------------------ */

static uint32_t node_edges(const struct heapgraph *h, uint32_t v,
                           uint32_t *end) {
  uint32_t first;
  heapsnap_edges(h->snap, v == h->root ? HS_NONE : v, &first, end);
  return first;
}

uint32_t heapgraph_source(const struct heapsnap *s, uint32_t e) {
  if (e < s->nroot) return HS_NONE;
  size_t lo = 0, hi = s->nrecorded;
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (s->obj[mid].edges <= e)
      lo = mid;
    else
      hi = mid;
  }
  /* Objects without edges share their first with the next one. */
  while (lo + 1 < s->nrecorded && s->obj[lo + 1].edges <= e) lo++;
  return (uint32_t)lo;
}

static int strong(const struct hs_edge *e) { return !e->weak; }

/* -- Dominators ------------------------------------------------------------ */

/* Depth first from the root: postorder numbers, and the nodes in reverse
** postorder. Returns how many were reached. */
static uint32_t postorder(const struct heapgraph *h, uint32_t *post,
                          uint32_t *rpo) {
  const struct heapsnap *s = h->snap;
  uint32_t n = h->root + 1, top = 0, count = 0;
  uint32_t *stack = mapped_calloc(n, sizeof *stack);
  uint32_t *next = mapped_calloc(n, sizeof *next);
  for (uint32_t v = 0; v < n; v++) post[v] = HS_NONE;
  uint32_t end;
  next[h->root] = node_edges(h, h->root, &end);
  post[h->root] = 0; /* visited; numbered when done */
  stack[top++] = h->root;
  while (top > 0) {
    uint32_t v = stack[top - 1], e;
    node_edges(h, v, &end);
    for (e = next[v]; e < end; e++) {
      uint32_t w = s->edge[e].target;
      if (strong(&s->edge[e]) && post[w] == HS_NONE) break;
    }
    if (e < end) {
      uint32_t w = s->edge[e].target, wend;
      next[v] = e + 1;
      post[w] = 0;
      next[w] = node_edges(h, w, &wend);
      stack[top++] = w;
    } else {
      top--;
      post[v] = count++;
    }
  }
  for (uint32_t v = 0; v < n; v++)
    if (post[v] != HS_NONE) rpo[count - 1 - post[v]] = v;
  mapped_free(stack, n, sizeof *stack);
  mapped_free(next, n, sizeof *next);
  return count;
}

/* Predecessors by strong edges among the reached nodes. */
static void predecessors(const struct heapgraph *h, const uint32_t *post,
                         uint32_t **off, uint32_t **pred) {
  const struct heapsnap *s = h->snap;
  uint32_t n = h->root + 1, end;
  uint32_t *o = mapped_calloc((size_t)n + 1, sizeof *o);
  for (uint32_t v = 0; v < n; v++) {
    if (post[v] == HS_NONE) continue;
    for (uint32_t e = node_edges(h, v, &end); e < end; e++)
      if (strong(&s->edge[e])) o[s->edge[e].target + 1]++;
  }
  for (uint32_t v = 0; v < n; v++) o[v + 1] += o[v];
  uint32_t *p = mapped_calloc((size_t)o[n] + 1, sizeof *p);
  uint32_t *fill = mapped_calloc((size_t)n + 1, sizeof *fill);
  memcpy(fill, o, ((size_t)n + 1) * sizeof *fill);
  for (uint32_t v = 0; v < n; v++) {
    if (post[v] == HS_NONE) continue;
    for (uint32_t e = node_edges(h, v, &end); e < end; e++)
      if (strong(&s->edge[e])) p[fill[s->edge[e].target]++] = v;
  }
  mapped_free(fill, (size_t)n + 1, sizeof *fill);
  *off = o;
  *pred = p;
}

static uint32_t intersect(const uint32_t *idom, const uint32_t *post,
                          uint32_t a, uint32_t b) {
  while (a != b) {
    while (post[a] < post[b]) a = idom[a];
    while (post[b] < post[a]) b = idom[b];
  }
  return a;
}

/* The dominator of v from those of its predecessors found so far, in *d;
** 0 if one has none yet. */
static int dominator_of(const struct heapgraph *h, const uint32_t *post,
                        const uint32_t *off, const uint32_t *pred, uint32_t v,
                        uint32_t *d) {
  int all = 1;
  *d = HS_NONE;
  for (uint32_t k = off[v]; k < off[v + 1]; k++) {
    uint32_t p = pred[k];
    if (h->idom[p] == HS_NONE) {
      all = 0;
      continue;
    }
    *d = *d == HS_NONE ? p : intersect(h->idom, post, p, *d);
  }
  return all;
}

static void dominators(struct heapgraph *h) {
  const struct heapsnap *s = h->snap;
  uint32_t n = h->root + 1;
  uint32_t *post = mapped_calloc(n, sizeof *post);
  uint32_t *rpo = mapped_calloc(n, sizeof *rpo);
  uint32_t count = postorder(h, post, rpo), *off, *pred;
  predecessors(h, post, &off, &pred);
  h->idom = mapped_calloc(n, sizeof *h->idom);
  for (uint32_t v = 0; v < n; v++) h->idom[v] = HS_NONE;
  h->idom[h->root] = h->root;
  /* The first pass finds a node's dominator from those of its
  ** predecessors that come before it; the nodes that also have some after
  ** (by an edge back: a cycle) are listed, by their place. Until one
  ** changes, a later pass needs only them: the rest depend on nodes before
  ** them, none changed (most heaps' bulk is a tree under a few cycles). */
  uint32_t *back = NULL, nback = 0;
  size_t back_cap = 0;
  for (uint32_t i = 1; i < count; i++) {
    uint32_t d;
    if (!dominator_of(h, post, off, pred, rpo[i], &d)) {
      grow_array((void **)&back, &back_cap, nback + 1, sizeof *back);
      back[nback++] = i;
    }
    h->idom[rpo[i]] = d;
  }
  for (int changed = nback > 0; changed;) {
    changed = 0;
    for (uint32_t i = 1, j = 0; i < count; i++) {
      if (!changed) { /* on to the next node with an edge back */
        while (j < nback && back[j] < i) j++;
        if (j == nback) break;
        i = back[j];
      }
      uint32_t v = rpo[i], d;
      dominator_of(h, post, off, pred, v, &d);
      if (d != h->idom[v]) {
        h->idom[v] = d;
        changed = 1;
      }
    }
  }
  free(back);
  /* Children before their dominators: reverse of the reverse postorder. */
  h->retained = mapped_calloc(n, sizeof *h->retained);
  for (uint32_t i = count; i-- > 0;) {
    uint32_t v = rpo[i];
    if (v != h->root) {
      h->retained[v] = add_sat(h->retained[v], s->obj[v].size);
      h->retained[h->idom[v]] =
          add_sat(h->retained[h->idom[v]], h->retained[v]);
    }
  }
  h->reachable = count - 1;
  mapped_free(post, n, sizeof *post);
  mapped_free(rpo, n, sizeof *rpo);
  mapped_free(pred, (size_t)off[n] + 1, sizeof *pred);
  mapped_free(off, (size_t)n + 1, sizeof *off);
}

/* -- Words --------------------------------------------------------------- */

/* The root a root edge of this kind names, or HS_NONE. */
static uint32_t root_object(const struct heapsnap *s, unsigned kind) {
  for (uint32_t e = 0; e < s->nroot; e++)
    if (s->edge[e].name >> 32 == kind) return s->edge[e].target;
  return HS_NONE;
}

static int is_identifier(const char *p, uint32_t len) {
  static const char *const keywords[] = {
      "and",   "break", "do",  "else", "elseif", "end",    "false",
      "for",   "function", "goto", "if", "in",   "local",  "nil",
      "not",   "or",    "repeat", "return", "then", "true", "until",
      "while"};
  if (len == 0 || isdigit((unsigned char)p[0])) return 0;
  for (uint32_t i = 0; i < len; i++)
    if (!isalnum((unsigned char)p[i]) && p[i] != '_') return 0;
  for (size_t k = 0; k < sizeof keywords / sizeof *keywords; k++)
    if (strlen(keywords[k]) == len && !memcmp(keywords[k], p, len)) return 0;
  return 1;
}

static void add_quoted(struct sbuf *out, const char *p, uint32_t len) {
  sbuf_add(out, "\"", 1);
  for (uint32_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c == '"' || c == '\\')
      sbuf_printf(out, "\\%c", c);
    else if (c < 0x20 || c >= 0x7f)
      sbuf_printf(out, "\\%u", c);
    else
      sbuf_add(out, &p[i], 1);
  }
  sbuf_add(out, "\"", 1);
}

void heapgraph_object(const struct heapsnap *s, uint32_t v,
                      struct sbuf *out) {
  sbuf_printf(out, "%s 0x%" PRIx64, heapsnap_typename(s->obj[v].type),
              s->obj[v].addr);
}

/* The first edge of kind from v; HS_NONE if none. */
static uint32_t edge_of(const struct heapsnap *s, uint32_t v, unsigned kind) {
  uint32_t first, end;
  if (v >= s->nobj) return HS_NONE;
  heapsnap_edges(s, v, &first, &end);
  for (uint32_t e = first; e < end; e++)
    if (s->edge[e].kind == kind) return e;
  return HS_NONE;
}

/* "app.lua:15": where a Lua function is defined. */
static void add_function(const struct heapsnap *s, uint32_t fn,
                         struct sbuf *out) {
  uint32_t pe = edge_of(s, fn, LJH_E_PROTO), len;
  uint32_t pt = pe == HS_NONE ? HS_NONE : s->edge[pe].target;
  if (s->obj[fn].type == LJH_OBJ_CFUNC) {
    sbuf_printf(out, "C function 0x%" PRIx64, s->obj[fn].addr);
    return;
  }
  if (pt == HS_NONE || s->obj[pt].type != LJH_OBJ_PROTO) {
    sbuf_printf(out, "function 0x%" PRIx64, s->obj[fn].addr);
    return;
  }
  uint32_t ce = edge_of(s, pt, LJH_E_CHUNK);
  const char *chunk =
      ce == HS_NONE ? NULL : heapsnap_string(s, s->edge[ce].target, &len);
  uint32_t line = s->proto[s->obj[pt].aux].firstline;
  if (line == 0)
    sbuf_add(out, "main chunk ", 11);
  else
    sbuf_add(out, "function ", 9);
  if (chunk && len > 0 && (chunk[0] == '@' || chunk[0] == '='))
    sbuf_add(out, chunk + 1, len - 1);
  else if (chunk)
    add_quoted(out, chunk, len > 40 ? 40 : len);
  else
    sbuf_add(out, "?", 1);
  if (line != 0) sbuf_printf(out, ":%" PRIu32, line);
}

static void add_thread(const struct heapgraph *h, uint32_t th, int pat,
                       struct sbuf *out) {
  if (th == root_object(h->snap, LJH_ROOT_MAINTHREAD))
    sbuf_add(out, "main thread", 11);
  else if (pat)
    sbuf_add(out, "coroutine *", 11);
  else
    sbuf_printf(out, "coroutine 0x%" PRIx64, h->snap->obj[th].addr);
}

/* A slot's words: the frame it belongs to is the FRAME edge before it. */
static void add_slot(const struct heapgraph *h, uint32_t th, uint32_t e,
                     int pat, struct sbuf *out) {
  const struct heapsnap *s = h->snap;
  uint32_t first, end, f, len;
  heapsnap_edges(s, th, &first, &end);
  for (f = e; f > first && s->edge[f - 1].kind != LJH_E_FRAME; f--) {
  }
  const char *name = heapsnap_text(s, (uint32_t)s->edge[e].name, &len);
  if (len > 0) {
    sbuf_add(out, "<local \"", 8);
    sbuf_add(out, name, len);
    sbuf_add(out, "\"", 1);
  } else {
    sbuf_printf(out, "<slot %" PRIu64, s->edge[e].name >> 32);
  }
  if (f > first) {
    const struct hs_edge *fr = &s->edge[f - 1];
    sbuf_add(out, " of ", 4);
    add_function(s, fr->target, out);
    if (fr->name && pat) /* where it runs is no part of the structure */
      sbuf_add(out, " at line *", 10);
    else if (fr->name)
      sbuf_printf(out, " at line %" PRIu64, fr->name);
  }
  sbuf_add(out, " in ", 4);
  add_thread(h, th, pat, out);
  sbuf_add(out, ">", 1);
}

static const char *const root_words[LJH_ROOT__MAX] = {
    [LJH_ROOT_GLOBALS] = "_G",
    [LJH_ROOT_REGISTRY] = "registry",
    [LJH_ROOT_MAINTHREAD] = "<main thread>",
    [LJH_ROOT_CURTHREAD] = "<running thread>",
    [LJH_ROOT_BASEMT] = "<metatable of a type>",
    [LJH_ROOT_MMNAME] = "<metamethod name>",
    [LJH_ROOT_IO] = "<default file>",
    [LJH_ROOT_FINALIZE] = "<finalizer queue>",
    [LJH_ROOT_CDATAFIN] = "<cdata finalizers>",
    [LJH_ROOT_CURTRACE] = "<trace being recorded>"};

/* Edge e from src in words, appended to out; a step that names where a
** value lives (a root, an upvalue, a stack slot) starts the path anew:
** *fresh is set and out holds only it. pat: indexes and addresses as *. */
static void add_step(const struct heapgraph *h, uint32_t src, uint32_t e,
                     int pat, struct sbuf *out, int *fresh) {
  const struct heapsnap *s = h->snap;
  const struct hs_edge *ed = &s->edge[e];
  uint32_t len;
  *fresh = 0;
  switch (ed->kind) {
  case LJH_E_ROOT: {
    const char *w = root_words[ed->name >> 32];
    *fresh = 1;
    sbuf_reset(out);
    sbuf_add(out, w ? w : "<root>", strlen(w ? w : "<root>"));
    return;
  }
  case LJH_E_ARRAY:
  case LJH_E_HINT:
    if (pat)
      sbuf_add(out, "[*]", 3);
    else if (ed->kind == LJH_E_ARRAY)
      sbuf_printf(out, "[%" PRIu64 "]", ed->name);
    else
      sbuf_printf(out, "[%" PRId64 "]",
                  (int64_t)(ed->name >> 1) ^ -(int64_t)(ed->name & 1));
    return;
  case LJH_E_HNUM: {
    double d;
    memcpy(&d, &ed->name, sizeof d);
    if (pat)
      sbuf_add(out, "[*]", 3);
    else
      sbuf_printf(out, "[%.17g]", d);
    return;
  }
  case LJH_E_HBOOL:
    sbuf_printf(out, "[%s]", ed->name ? "true" : "false");
    return;
  case LJH_E_HLIGHT:
    if (pat)
      sbuf_add(out, "[*]", 3);
    else
      sbuf_printf(out, "[lightuserdata 0x%" PRIx64 "]", ed->name);
    return;
  case LJH_E_HSTR: {
    const char *k = heapsnap_string(s, (uint32_t)ed->name, &len);
    if (k && src != HS_NONE &&
        src == root_object(s, LJH_ROOT_REGISTRY) && len == 7 &&
        !memcmp(k, "_LOADED", 7)) {
      *fresh = 1;
      sbuf_reset(out);
      sbuf_add(out, "package.loaded", 14);
    } else if (k && is_identifier(k, len)) {
      sbuf_add(out, ".", 1);
      sbuf_add(out, k, len);
    } else if (pat) {
      sbuf_add(out, "[*]", 3);
    } else if (k) {
      sbuf_add(out, "[", 1);
      add_quoted(out, k, len);
      sbuf_add(out, "]", 1);
    } else {
      sbuf_add(out, "[string]", 8);
    }
    return;
  }
  case LJH_E_HOBJ:
    if (pat)
      sbuf_add(out, "[*]", 3);
    else {
      sbuf_add(out, "[", 1);
      heapgraph_object(s, (uint32_t)ed->name, out);
      sbuf_add(out, "]", 1);
    }
    return;
  case HS_E_KEY: sbuf_add(out, "<key>", 5); return;
  case LJH_E_META: sbuf_add(out, "<metatable>", 11); return;
  case LJH_E_ENV: sbuf_add(out, "<env>", 5); return;
  case LJH_E_VALUE: return; /* said by the upvalue */
  case LJH_E_PROTO: sbuf_add(out, "<proto>", 7); return;
  case LJH_E_KGC: sbuf_printf(out, "<constant %" PRIu64 ">", ed->name); return;
  case LJH_E_CHUNK: sbuf_add(out, "<chunk name>", 12); return;
  case LJH_E_TRACE: sbuf_add(out, "<trace>", 7); return;
  case LJH_E_UPVAL: {
    *fresh = 1;
    sbuf_reset(out);
    uint32_t pe = edge_of(s, src, LJH_E_PROTO);
    uint32_t pt = pe == HS_NONE ? HS_NONE : s->edge[pe].target;
    if (s->obj[src].type == LJH_OBJ_LFUNC && pt != HS_NONE &&
        s->obj[pt].type == LJH_OBJ_PROTO &&
        ed->name < s->proto[s->obj[pt].aux].nuv) {
      const char *n = heapsnap_text(
          s, s->proto[s->obj[pt].aux].uvnames + (uint32_t)ed->name, &len);
      sbuf_add(out, "<upvalue \"", 10);
      sbuf_add(out, n, len);
      sbuf_add(out, "\" of ", 5);
    } else {
      sbuf_printf(out, "<upvalue %" PRIu64 " of ", ed->name + 1);
    }
    if (pat && s->obj[src].type == LJH_OBJ_CFUNC)
      sbuf_add(out, "C function *", 12);
    else
      add_function(s, src, out);
    sbuf_add(out, ">", 1);
    return;
  }
  case LJH_E_FRAME:
    *fresh = 1;
    sbuf_reset(out);
    sbuf_add(out, "<function of a frame in ", 24);
    add_thread(h, src, pat, out);
    sbuf_add(out, ">", 1);
    return;
  case LJH_E_SLOT:
    *fresh = 1;
    sbuf_reset(out);
    add_slot(h, src, e, pat, out);
    return;
  }
}

void heapgraph_step(const struct heapgraph *h, uint32_t src, uint32_t e,
                    struct sbuf *out) {
  int fresh;
  add_step(h, src, e, 0, out, &fresh);
}

void heapgraph_name(const struct heapsnap *s, uint32_t v, struct sbuf *out) {
  const struct hs_object *o = &s->obj[v];
  const char *text = NULL;
  uint32_t len, name;
  switch (o->type) {
  case LJH_OBJ_LFUNC:
  case LJH_OBJ_CFUNC:
    add_function(s, v, out);
    return;
  case LJH_OBJ_STR:
    text = heapsnap_string(s, v, &len);
    if (text) add_quoted(out, text, len > 40 ? 40 : len);
    break;
  case LJH_OBJ_CDATA:
    name = keymap_get(&s->ctypes, o->aux);
    if (name != HASHTAB_NONE) {
      text = heapsnap_text(s, name, &len);
      sbuf_add(out, "cdata ", 6);
      sbuf_add(out, text, len);
    }
    break;
  case LJH_OBJ_THREAD:
    text = "coroutine";
    sbuf_add(out, text, strlen(text));
    break;
  }
  if (!text) {
    text = heapsnap_typename(o->type);
    sbuf_add(out, text, strlen(text));
  }
}

/* -- Shortest paths and their patterns ------------------------------------- */

struct pattern_key {
  const struct heapgraph *h;
  uint32_t parent;
  const char *text;
  size_t len;
};

static int same_pattern(const void *ctx, uint32_t id) {
  const struct pattern_key *k = ctx;
  const struct heapgraph *h = k->h;
  const struct hs_name *n = &h->step_names[h->pattern_step[id]];
  return h->pattern_parent[id] == k->parent && n->len == k->len &&
         !memcmp(h->steps.data + n->off, k->text, k->len);
}

static uint32_t intern_pattern(struct heapgraph *h, struct hashtab *t,
                               size_t *cap, uint32_t parent,
                               const char *text, size_t len) {
  struct pattern_key k = {h, parent, text, len};
  uint32_t hash = hash_u64(parent) ^ 2166136261u;
  for (size_t i = 0; i < len; i++) hash = (hash ^ (uint8_t)text[i]) * 16777619u;
  uint32_t id = hashtab_find(t, hash, same_pattern, &k);
  if (id != HASHTAB_NONE) return id;
  id = h->npatterns++;
  grow_array((void **)&h->pattern_parent, cap, h->npatterns,
             sizeof *h->pattern_parent);
  size_t cap2 = *cap;
  h->pattern_step = xrealloc(h->pattern_step, cap2 * sizeof *h->pattern_step);
  grow_array((void **)&h->step_names, &h->capsteps, h->nsteps + 1,
             sizeof *h->step_names);
  h->step_names[h->nsteps] =
      (struct hs_name){(uint32_t)h->steps.len, (uint32_t)len};
  sbuf_add(&h->steps, text, len);
  h->pattern_parent[id] = parent;
  h->pattern_step[id] = (uint32_t)h->nsteps++;
  hashtab_add(t, hash, id);
  return id;
}

/* Breadth first over strong edges: each object's first path is a
** shortest one; its pattern is its parent's and one step more. */
static void shortest_paths(struct heapgraph *h) {
  const struct heapsnap *s = h->snap;
  uint32_t n = h->root + 1, head = 0, tail = 0, end;
  uint32_t *queue = mapped_calloc(n, sizeof *queue);
  struct hashtab t = {0};
  struct sbuf step = {0};
  size_t cap = 0;
  h->via = mapped_calloc(n, sizeof *h->via);
  h->pattern = mapped_calloc(n, sizeof *h->pattern);
  for (uint32_t v = 0; v < n; v++) h->via[v] = h->pattern[v] = HS_NONE;
  queue[tail++] = h->root;
  h->via[h->root] = 0;
  while (head < tail) {
    uint32_t v = queue[head++];
    uint32_t src = v == h->root ? HS_NONE : v;
    for (uint32_t e = node_edges(h, v, &end); e < end; e++) {
      uint32_t w = s->edge[e].target;
      int fresh;
      if (!strong(&s->edge[e]) || h->via[w] != HS_NONE) continue;
      h->via[w] = e;
      queue[tail++] = w;
      sbuf_reset(&step);
      add_step(h, src, e, 1, &step, &fresh);
      uint32_t parent = fresh || v == h->root ? HS_NONE : h->pattern[v];
      if (!fresh && step.len == 0) { /* an upvalue's value */
        h->pattern[w] = h->pattern[v];
        continue;
      }
      h->pattern[w] = intern_pattern(h, &t, &cap, parent,
                                     step.data ? step.data : "", step.len);
    }
  }
  h->via[h->root] = HS_NONE;
  hashtab_free(&t);
  sbuf_free(&step);
  mapped_free(queue, n, sizeof *queue);
}

void heapgraph_build(struct heapgraph *h, const struct heapsnap *s) {
  memset(h, 0, sizeof *h);
  h->snap = s;
  h->root = (uint32_t)s->nobj;
  dominators(h);
  shortest_paths(h);
}

void heapgraph_path(const struct heapgraph *h, uint32_t v, struct sbuf *out) {
  const struct heapsnap *s = h->snap;
  uint32_t depth = 0, *chain = NULL;
  size_t cap = 0;
  if (h->via[v] == HS_NONE) {
    sbuf_add(out, "(only weakly reachable)", 23);
    return;
  }
  for (uint32_t w = v; w != h->root && h->via[w] != HS_NONE;) {
    grow_array((void **)&chain, &cap, depth + 1, sizeof *chain);
    chain[depth++] = h->via[w];
    uint32_t src = heapgraph_source(s, h->via[w]);
    w = src == HS_NONE ? h->root : src;
  }
  struct sbuf path = {0};
  for (uint32_t i = depth; i-- > 0;) {
    int fresh;
    add_step(h, heapgraph_source(s, chain[i]), chain[i], 0, &path, &fresh);
  }
  sbuf_add(out, path.data ? path.data : "", path.len);
  sbuf_free(&path);
  free(chain);
}

void heapgraph_pattern(const struct heapgraph *h, uint32_t p,
                       struct sbuf *out) {
  uint32_t depth = 0, *chain = NULL;
  size_t cap = 0;
  for (; p != HS_NONE; p = h->pattern_parent[p]) {
    grow_array((void **)&chain, &cap, depth + 1, sizeof *chain);
    chain[depth++] = p;
  }
  for (uint32_t i = depth; i-- > 0;) {
    const struct hs_name *n = &h->step_names[h->pattern_step[chain[i]]];
    sbuf_add(out, h->steps.data + n->off, n->len);
  }
  free(chain);
}

static void tally_add(struct heap_tally *t, uint64_t bytes) {
  t->count++;
  t->bytes = add_sat(t->bytes, bytes);
}

void heapgraph_tally(const struct heapgraph *h, struct heap_tally *types,
                     struct heap_tally *patterns, struct heap_tally *weak) {
  const struct heapsnap *s = h->snap;
  memset(types, 0, (LJH_OBJ_MASK + 1) * sizeof *types);
  memset(patterns, 0, h->npatterns * sizeof *patterns);
  memset(weak, 0, sizeof *weak);
  for (uint32_t v = 0; v < s->nobj; v++) {
    const struct hs_object *o = &s->obj[v];
    tally_add(&types[o->type], o->size);
    if (h->idom[v] == HS_NONE)
      tally_add(weak, o->size);
    else if (h->pattern[v] != HS_NONE)
      tally_add(&patterns[h->pattern[v]], o->size);
  }
}

void heapgraph_free(struct heapgraph *h) {
  size_t n = (size_t)h->root + 1; /* the arrays by object, and the root */
  mapped_free(h->idom, n, sizeof *h->idom);
  mapped_free(h->retained, n, sizeof *h->retained);
  mapped_free(h->via, n, sizeof *h->via);
  mapped_free(h->pattern, n, sizeof *h->pattern);
  free(h->pattern_parent);
  free(h->pattern_step);
  free(h->step_names);
  sbuf_free(&h->steps);
  memset(h, 0, sizeof *h);
}
