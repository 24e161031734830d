/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "heapreport.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "heapchrome.h"
#include "heaphtml.h"
#include "json_out.h"
#include "shared/sort.h"

struct by_pattern {
  uint32_t pattern;
  uint64_t count, bytes;
};

/* What the objects made by one allocation (site and stack) hold: their
** own bytes, what they retain (an object dominated by another of the same
** allocation counts in that one's), and the path pattern that reaches the
** most of their bytes. */
struct by_alloc {
  uint32_t alloc, pattern;
  uint64_t count, bytes, retained;
};

/* What every format says. */
struct summary {
  struct heap_tally types[LJH_OBJ_MASK + 1];
  struct by_pattern *patterns; /* by bytes, descending */
  uint32_t npatterns;
  uint32_t *top; /* objects by retained bytes, descending */
  uint32_t ntop;
  struct by_alloc *allocs; /* joined: by retained bytes, descending */
  uint32_t nallocs;
  struct heap_tally weak;
  uint64_t bytes;
};

static const struct heapgraph *sort_graph;

static json_t *json_sb(struct sbuf *sb) {
  return json_bytes(sb->data ? sb->data : "", sb->len);
}

static int by_retained(const void *a, const void *b) {
  uint64_t ra = sort_graph->retained[*(const uint32_t *)a];
  uint64_t rb = sort_graph->retained[*(const uint32_t *)b];
  if (ra != rb) return ra < rb ? 1 : -1;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int by_bytes(const void *a, const void *b) {
  const struct by_pattern *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
  return x->pattern < y->pattern ? -1 : 1;
}

static int by_alloc_retained(const void *a, const void *b) {
  const struct by_alloc *x = a, *y = b;
  if (x->retained != y->retained) return x->retained < y->retained ? 1 : -1;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
  return x->alloc < y->alloc ? -1 : 1;
}

/* The strongly reachable objects of each allocation, and the pattern that
** holds most of their bytes. */
static void summarize_allocs(const struct heapgraph *h,
                             const struct heapjoin *j, size_t top,
                             struct summary *m) {
  const struct heapsnap *s = h->snap;
  struct keymap cell = {0}; /* alloc << 32 | pattern -> bytes index */
  uint64_t *cell_bytes = NULL;
  size_t ncells = 0, capcells = 0;
  m->allocs = xcalloc(j->nalloc + 1, sizeof *m->allocs);
  for (uint32_t a = 0; a < j->nalloc; a++) {
    m->allocs[a].alloc = a;
    m->allocs[a].pattern = HS_NONE;
  }
  for (uint32_t v = 0; v < s->nobj; v++) {
    uint32_t a = j->of[v], d = h->idom[v];
    if (a == HS_NONE || d == HS_NONE) continue;
    struct by_alloc *b = &m->allocs[a];
    b->count++;
    b->bytes += s->obj[v].size;
    if (d == h->root || j->of[d] != a)
      b->retained = add_sat(b->retained, h->retained[v]);
    if (h->pattern[v] == HS_NONE) continue;
    uint64_t key = (uint64_t)a << 32 | h->pattern[v];
    uint32_t c = keymap_get(&cell, key);
    if (c == HASHTAB_NONE) {
      grow_array((void **)&cell_bytes, &capcells, ncells + 1,
                 sizeof *cell_bytes);
      cell_bytes[ncells] = 0;
      keymap_put(&cell, key, c = (uint32_t)ncells++);
    }
    cell_bytes[c] += s->obj[v].size;
  }
  for (size_t i = 0; cell.slots && i <= cell.mask; i++) {
    const struct keyslot *k = &cell.slots[i];
    if (!k->used) continue;
    struct by_alloc *b = &m->allocs[k->key >> 32];
    uint32_t best = b->pattern == HS_NONE
                        ? HASHTAB_NONE
                        : keymap_get(&cell, k->key >> 32 << 32 | b->pattern);
    if (best == HASHTAB_NONE || cell_bytes[k->value] > cell_bytes[best])
      b->pattern = (uint32_t)k->key;
  }
  keymap_free(&cell);
  free(cell_bytes);
  qsort(m->allocs, j->nalloc, sizeof *m->allocs, by_alloc_retained);
  m->nallocs = (uint32_t)j->nalloc;
  while (m->nallocs > 0 && m->allocs[m->nallocs - 1].count == 0) m->nallocs--;
  if (m->nallocs > top) m->nallocs = (uint32_t)top;
}

static void summarize(const struct heapgraph *h, const struct heapjoin *j,
                      size_t top, struct summary *m) {
  const struct heapsnap *s = h->snap;
  memset(m, 0, sizeof *m);
  struct heap_tally *tally = xmalloc((h->npatterns + 1) * sizeof *tally);
  heapgraph_tally(h, m->types, tally, &m->weak);
  for (unsigned t = 0; t <= LJH_OBJ_MASK; t++)
    m->bytes = add_sat(m->bytes, m->types[t].bytes);
  m->patterns = xcalloc(h->npatterns + 1, sizeof *m->patterns);
  for (uint32_t p = 0; p < h->npatterns; p++)
    m->patterns[p] = (struct by_pattern){p, tally[p].count, tally[p].bytes};
  free(tally);
  qsort(m->patterns, h->npatterns, sizeof *m->patterns, by_bytes);
  m->npatterns = h->npatterns;
  while (m->npatterns > 0 && m->patterns[m->npatterns - 1].count == 0)
    m->npatterns--;
  if (m->npatterns > top) m->npatterns = (uint32_t)top;
  uint32_t *ids = xmalloc((s->nobj + 1) * sizeof *ids), n = 0;
  for (uint32_t v = 0; v < s->nobj; v++)
    if (h->idom[v] != HS_NONE) ids[n++] = v;
  sort_graph = h;
  sort_first_inline(ids, n, top, sizeof *ids, by_retained);
  m->top = ids;
  m->ntop = n < top ? n : (uint32_t)top;
  if (j) summarize_allocs(h, j, top, m);
}

static void summary_free(struct summary *m) {
  free(m->patterns);
  free(m->top);
  free(m->allocs);
}

/* -- Allocations ----------------------------------------------------------- */

/* Where allocation a was made, each frame of its stack a JSON string
** into names (the site alone without a stack). */
static void put_alloc_frames(const struct heapjoin *j,
                             const struct heapjoin_alloc *a, struct sbuf *out,
                             json_t *names) {
  uint32_t depth;
  const struct symframe *f = symbols_stack(&j->sym, a->stack, &depth);
  if (!depth) {
    symbols_format(&j->sym, a->site, NULL, out);
    json_array_append_new(names, json_sb(out));
    return;
  }
  for (uint32_t i = 0; i < depth; i++) {
    sbuf_reset(out);
    symbols_format(&j->sym, f[i].loc, NULL, out);
    json_array_append_new(names, json_sb(out));
  }
}

/* -- Text ------------------------------------------------------------------ */

void heapreport_put_bytes(FILE *out, uint64_t bytes, char sign) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t unit;
  double v = binary_units(bytes, sizeof units / sizeof *units, &unit);
  char num[32], prefix[2] = {sign, 0};
  if (unit == 0)
    snprintf(num, sizeof num, "%s%" PRIu64, prefix, bytes);
  else
    snprintf(num, sizeof num, "%s%.1f", prefix, v);
  fprintf(out, "%10s %-3s", num, units[unit]);
}

static void put_bytes(FILE *out, uint64_t bytes) {
  heapreport_put_bytes(out, bytes, 0);
}

static void write_text(FILE *out, const struct heapreport_input *in,
                       const struct summary *m, struct sbuf *sb) {
  const struct heapgraph *h = in->graph;
  const struct heapsnap *s = h->snap;
  if (in->reader->status != READER_OK)
    fprintf(out, "WARNING: damaged stream, the report covers what came "
                 "before the damage: %s\n\n",
            in->reader->err_msg);
  fprintf(out, "HEAP SNAPSHOT %s: %zu objects, %zu references, ", in->source,
          s->nobj, s->nedge);
  put_bytes(out, m->bytes);
  if (s->has_info)
    fprintf(out, "; the VM paused %.3f ms\n", (double)s->pause_ns / 1e6);
  else
    fprintf(out, "; no pause recorded (the stream is cut)\n");
  fprintf(out, "\nLIVE HEAP BY TYPE\n");
  for (unsigned t = 0; t <= LJH_OBJ_MASK; t++) {
    if (!m->types[t].count) continue;
    put_bytes(out, m->types[t].bytes);
    fprintf(out, " %10" PRIu64 "  %s\n", m->types[t].count,
            t ? heapsnap_typename(t) : "never described (cut stream)");
  }
  if (m->weak.count) {
    put_bytes(out, m->weak.bytes);
    fprintf(out, " %10" PRIu64 "  only weakly reachable\n", m->weak.count);
  }
  const struct heapjoin *j = in->join;
  if (j)
    fprintf(out, "\nJOINED TO MEMPROF STREAM %s: %" PRIu32 " of %zu objects "
                 "with the allocation that made them (the others were "
                 "made before the stream began%s)\n",
            in->memprof, j->known, s->nobj,
            j->sample ? ", or not sampled" : "");
  fprintf(out, "\nTOP RETAINERS (retained, own size, object, shortest "
               "path%s)\n", j ? "; where it was allocated" : "");
  for (uint32_t i = 0; i < m->ntop; i++) {
    uint32_t v = m->top[i];
    const struct heapjoin_alloc *a = heapjoin_of(j, v);
    put_bytes(out, h->retained[v]);
    put_bytes(out, s->obj[v].size);
    sbuf_reset(sb);
    heapgraph_object(s, v, sb);
    sbuf_add(sb, "  ", 2);
    heapgraph_path(h, v, sb);
    fprintf(out, " %s\n", sbuf_cstr(sb));
    if (!a) continue;
    sbuf_reset(sb);
    heapjoin_where(j, a, sb);
    sbuf_add(sb, ", labels ", 9);
    if (!heapjoin_labels(j, a, sb)) sb->len -= 9;
    fprintf(out, "%28s allocated at %s\n", "", sbuf_cstr(sb));
  }
  if (j) {
    fprintf(out, "\nRETAINED BY ALLOCATION SITE (retained, own size, "
                 "objects, where allocated: the path pattern holding most)\n");
    for (uint32_t i = 0; i < m->nallocs; i++) {
      const struct by_alloc *b = &m->allocs[i];
      put_bytes(out, b->retained);
      put_bytes(out, b->bytes);
      sbuf_reset(sb);
      heapjoin_where(j, &j->alloc[b->alloc], sb);
      sbuf_add(sb, ", labels ", 9);
      if (!heapjoin_labels(j, &j->alloc[b->alloc], sb)) sb->len -= 9;
      sbuf_add(sb, ": held at ", 10);
      if (b->pattern == HS_NONE)
        sbuf_add(sb, "(a root)", 8);
      else
        heapgraph_pattern(h, b->pattern, sb);
      fprintf(out, " %10" PRIu64 "  %s\n", b->count, sbuf_cstr(sb));
    }
  }
  fprintf(out, "\nBY PATH (own sizes of the objects each path pattern "
               "reaches first)\n");
  for (uint32_t i = 0; i < m->npatterns; i++) {
    put_bytes(out, m->patterns[i].bytes);
    sbuf_reset(sb);
    heapgraph_pattern(h, m->patterns[i].pattern, sb);
    fprintf(out, " %10" PRIu64 "  %s\n", m->patterns[i].count,
            sbuf_cstr(sb));
  }
}

/* -- JSON ------------------------------------------------------------------ */

static json_t *json_graph(const struct heapgraph *h) {
  const struct heapsnap *s = h->snap;
  json_t *objs = json_array(), *edges = json_array(), *roots = json_array();
  for (uint32_t v = 0; v < s->nobj; v++) {
    json_t *o = json_pack("{s:I,s:s,s:o,s:o,s:o}", "id", (json_int_t)v,
                          "type", heapsnap_typename(s->obj[v].type), "size",
                          json_u64(s->obj[v].size), "retained",
                          json_u64(h->retained[v]), "address",
                          json_u64(s->obj[v].addr));
    uint32_t d = h->idom[v];
    json_object_set_new(o, "idom", d == HS_NONE ? json_null()
                                   : d == h->root ? json_string("root")
                                                  : json_integer(d));
    json_array_append_new(objs, o);
  }
  for (uint32_t e = 0; e < s->nedge; e++) {
    const struct hs_edge *ed = &s->edge[e];
    if (e < s->nroot) {
      json_array_append_new(roots, json_integer(ed->target));
      continue;
    }
    json_array_append_new(
        edges, json_pack("[I,I,b]", (json_int_t)heapgraph_source(s, e),
                         (json_int_t)ed->target, ed->weak));
  }
  return json_pack("{s:o,s:o,s:o}", "objects", objs, "edges", edges, "roots",
                   roots);
}

/* {"site": ..., "stack": [...]}; null for none. */
static json_t *json_alloc(const struct heapjoin *j,
                          const struct heapjoin_alloc *a, struct sbuf *sb) {
  if (!a) return json_null();
  json_t *stack = json_array();
  sbuf_reset(sb);
  symbols_format(&j->sym, a->site, NULL, sb);
  json_t *o = json_pack("{s:o}", "site", json_sb(sb));
  sbuf_reset(sb);
  put_alloc_frames(j, a, sb, stack);
  json_object_set_new(o, "stack", stack);
  json_t *labels = json_labels(&j->sym, a->labels);
  if (labels) json_object_set_new(o, "labels", labels);
  if (a->labels == LABELS_OTHER)
    json_object_set_new(o, "labels_folded", json_true());
  return o;
}

static int write_json(FILE *out, const struct heapreport_input *in,
                      const struct heapreport_options *opt,
                      const struct summary *m, struct sbuf *sb) {
  const struct heapgraph *h = in->graph;
  const struct heapsnap *s = h->snap;
  json_t *root = json_object(), *types = json_array();
  json_t *top = json_array(), *pats = json_array();
  json_object_set_new(root, "objects", json_u64(s->nobj));
  json_object_set_new(root, "references", json_u64(s->nedge));
  json_object_set_new(root, "bytes", json_u64(m->bytes));
  json_object_set_new(root, "pause_ns",
                      s->has_info ? json_u64(s->pause_ns) : json_null());
  json_object_set_new(root, "weak_only",
                      json_pack("{s:o,s:o}", "objects",
                                json_u64(m->weak.count), "bytes",
                                json_u64(m->weak.bytes)));
  for (unsigned t = 1; t <= LJH_OBJ_MASK; t++)
    if (m->types[t].count)
      json_array_append_new(
          types, json_pack("{s:s,s:o,s:o}", "type", heapsnap_typename(t),
                           "objects", json_u64(m->types[t].count), "bytes",
                           json_u64(m->types[t].bytes)));
  const struct heapjoin *j = in->join;
  for (uint32_t i = 0; i < m->ntop; i++) {
    uint32_t v = m->top[i];
    sbuf_reset(sb);
    heapgraph_path(h, v, sb);
    json_t *r = json_pack("{s:I,s:s,s:o,s:o,s:o,s:o}", "id", (json_int_t)v,
                          "type", heapsnap_typename(s->obj[v].type), "address",
                          json_u64(s->obj[v].addr), "size",
                          json_u64(s->obj[v].size), "retained",
                          json_u64(h->retained[v]), "path", json_sb(sb));
    if (j)
      json_object_set_new(r, "allocated",
                          json_alloc(j, heapjoin_of(j, v), sb));
    json_array_append_new(top, r);
  }
  if (j) {
    json_t *allocs = json_array();
    for (uint32_t i = 0; i < m->nallocs; i++) {
      const struct by_alloc *b = &m->allocs[i];
      json_t *a = json_alloc(j, &j->alloc[b->alloc], sb);
      sbuf_reset(sb);
      if (b->pattern != HS_NONE) heapgraph_pattern(h, b->pattern, sb);
      json_object_set_new(a, "objects", json_u64(b->count));
      json_object_set_new(a, "bytes", json_u64(b->bytes));
      json_object_set_new(a, "retained", json_u64(b->retained));
      json_object_set_new(a, "pattern",
                          b->pattern == HS_NONE ? json_null() : json_sb(sb));
      json_array_append_new(allocs, a);
    }
    json_object_set_new(root, "memprof",
                        json_pack("{s:s,s:o,s:o,s:o}", "source", in->memprof,
                                  "objects_known", json_u64(j->known),
                                  "sample", json_u64(j->sample), "sites",
                                  allocs));
  }
  for (uint32_t i = 0; i < m->npatterns; i++) {
    sbuf_reset(sb);
    heapgraph_pattern(h, m->patterns[i].pattern, sb);
    json_array_append_new(
        pats, json_pack("{s:o,s:o,s:o}", "pattern", json_sb(sb), "objects",
                        json_u64(m->patterns[i].count), "bytes",
                        json_u64(m->patterns[i].bytes)));
  }
  json_object_set_new(root, "types", types);
  json_object_set_new(root, "retainers", top);
  json_object_set_new(root, "patterns", pats);
  if (opt->graph) json_object_set_new(root, "graph", json_graph(h));
  json_add_error(root, in->reader);
  return json_write(root, out);
}

int heapreport_write(FILE *out, const struct heapreport_input *in,
                     const struct heapreport_options *opt) {
  if (opt->format == HEAP_HTML)
    return heaphtml_write(out, in->source, in->graph, in->reader);
  if (opt->format == HEAP_HEAPSNAPSHOT)
    return heapchrome_write(out, in->graph);
  struct summary m;
  struct sbuf sb = {0};
  int status = 0;
  summarize(in->graph, in->join, opt->top, &m);
  if (opt->format == HEAP_JSON)
    status = write_json(out, in, opt, &m, &sb);
  else
    write_text(out, in, &m, &sb);
  summary_free(&m);
  sbuf_free(&sb);
  if (fflush(out) != 0 || ferror(out)) status = -1;
  return status;
}
