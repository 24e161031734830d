/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "heapdiff.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "render/json_out.h"

/* -- Building -------------------------------------------------------------- */

#define WEAK_ROW "(only weakly reachable)"
#define UNKNOWN_ROW "(made before the stream began, or not sampled)"

static uint32_t row_of(struct heapdiff_rows *rows, const char *text,
                       size_t len) {
  uint32_t id = symbols_intern(&rows->names, text, len);
  if (id >= rows->n) { /* a fresh interner numbers names in order */
    grow_array_zeroed((void **)&rows->row, &rows->cap, (size_t)id + 1,
                      sizeof *rows->row);
    rows->n = (size_t)id + 1;
  }
  return id;
}

static void rows_free(struct heapdiff_rows *rows) {
  symbols_free(&rows->names);
  free(rows->row);
}

static void tally_sum(struct heap_tally *to, const struct heap_tally *from) {
  to->count += from->count;
  to->bytes = add_sat(to->bytes, from->bytes);
}

static struct heap_tally *side(struct heapdiff_row *r, int which) {
  return which ? &r->new : &r->old;
}

/* One snapshot's tallies into the rows (which: 0 OLD, 1 NEW); the row of
** each of its patterns into *row_of_pattern, the last for the weak. */
static void add_snapshot(struct heapdiff *d, const struct heapgraph *h,
                         int which, uint32_t **row_of_pattern) {
  struct heap_tally types[LJH_OBJ_MASK + 1], weak;
  struct heap_tally *pats = xmalloc((h->npatterns + 1) * sizeof *pats);
  uint32_t *rows = xmalloc((h->npatterns + 1) * sizeof *rows);
  struct sbuf sb = {0};
  heapgraph_tally(h, types, pats, &weak);
  for (unsigned t = 0; t <= LJH_OBJ_MASK; t++) {
    tally_sum(side(&d->types[t], which), &types[t]);
    tally_sum(side(&d->total, which), &types[t]);
  }
  for (uint32_t p = 0; p < h->npatterns; p++) {
    sbuf_reset(&sb);
    heapgraph_pattern(h, p, &sb);
    rows[p] = row_of(&d->patterns, sb.data ? sb.data : "", sb.len);
    tally_sum(side(&d->patterns.row[rows[p]], which), &pats[p]);
  }
  rows[h->npatterns] = row_of(&d->patterns, WEAK_ROW, strlen(WEAK_ROW));
  tally_sum(side(&d->patterns.row[rows[h->npatterns]], which), &weak);
  sbuf_free(&sb);
  free(pats);
  *row_of_pattern = rows;
}

/* The site row of each allocation of j, the last for the unknown. */
static uint32_t *site_rows(struct heapdiff *d, const struct heapjoin *j) {
  uint32_t *rows = xmalloc((j->nalloc + 1) * sizeof *rows);
  struct sbuf sb = {0};
  for (size_t a = 0; a < j->nalloc; a++) {
    sbuf_reset(&sb);
    heapjoin_where(j, &j->alloc[a], &sb);
    rows[a] = row_of(&d->sites, sb.data ? sb.data : "", sb.len);
  }
  rows[j->nalloc] = row_of(&d->sites, UNKNOWN_ROW, strlen(UNKNOWN_ROW));
  sbuf_free(&sb);
  return rows;
}

/* The site row of object v (rows from site_rows()); HS_NONE if only
** weakly reachable, as the allocation sections of heapreport count. */
static uint32_t site_of(const struct heapgraph *h, const struct heapjoin *j,
                        const uint32_t *rows, uint32_t v) {
  if (h->idom[v] == HS_NONE) return HS_NONE;
  return rows[j->of[v] == HS_NONE ? j->nalloc : j->of[v]];
}

static void add_sites(struct heapdiff *d, const struct heapgraph *h,
                      const struct heapjoin *j, int which, uint32_t *rows) {
  for (uint32_t v = 0; v < h->snap->nobj; v++) {
    uint32_t r = site_of(h, j, rows, v);
    if (r == HS_NONE) continue;
    struct heap_tally *t = side(&d->sites.row[r], which);
    t->count++;
    t->bytes = add_sat(t->bytes, h->snap->obj[v].size);
  }
}

/* Objects are matched by address and type: one of NEW with no match in
** OLD was surely allocated between them. */
static uint64_t object_key(const struct hs_object *o) {
  return o->addr << 4 | (o->type & LJH_OBJ_MASK);
}

/* sites: NEW's site rows (site_rows()), or NULL if not joined. */
static void count_fresh(struct heapdiff *d, const struct heapgraph *old,
                        const struct heapgraph *new, const uint32_t *rows,
                        const struct heapjoin *join, const uint32_t *sites) {
  struct keymap seen = {0};
  for (uint32_t v = 0; v < old->snap->nobj; v++)
    keymap_put(&seen, object_key(&old->snap->obj[v]), 1);
  for (uint32_t v = 0; v < new->snap->nobj; v++) {
    const struct hs_object *o = &new->snap->obj[v];
    if (keymap_get(&seen, object_key(o)) != HASHTAB_NONE) continue;
    uint32_t p = new->idom[v] == HS_NONE ? new->npatterns : new->pattern[v];
    d->types[o->type].fresh++;
    d->total.fresh++;
    if (p != HS_NONE) d->patterns.row[rows[p]].fresh++;
    uint32_t s = sites ? site_of(new, join, sites, v) : HS_NONE;
    if (s != HS_NONE) d->sites.row[s].fresh++;
  }
  keymap_free(&seen);
}

void heapdiff_build(struct heapdiff *d, const struct heapgraph *old,
                    const struct heapgraph *new,
                    const struct heapjoin *const join[2]) {
  const struct heapgraph *h[2] = {old, new};
  uint32_t *rows[2], *sites[2] = {NULL, NULL};
  memset(d, 0, sizeof *d);
  symbols_init(&d->patterns.names);
  symbols_init(&d->sites.names);
  d->joined = join && join[0] && join[1];
  for (int i = 0; i < 2; i++) {
    add_snapshot(d, h[i], i, &rows[i]);
    if (!d->joined) continue;
    sites[i] = site_rows(d, join[i]);
    add_sites(d, h[i], join[i], i, sites[i]);
  }
  count_fresh(d, old, new, rows[1], d->joined ? join[1] : NULL, sites[1]);
  for (int i = 0; i < 2; i++) {
    free(rows[i]);
    free(sites[i]);
  }
}

void heapdiff_free(struct heapdiff *d) {
  rows_free(&d->patterns);
  rows_free(&d->sites);
  memset(d, 0, sizeof *d);
}

/* -- Ranking ------------------------------------------------------------- */

static int64_t growth(const struct heap_tally *old, const struct heap_tally *new,
                      int bytes) {
  return bytes ? (int64_t)(new->bytes - old->bytes)
               : (int64_t)(new->count - old->count);
}

/* Signed growth, ordered as unsigned. */
static uint64_t rank_key(int64_t g) { return (uint64_t)g ^ UINT64_C(1) << 63; }

/* The rows that changed, most grown (bytes, then objects) first; at most
** top of them. A malloc'd array of *n row indexes. */
static uint32_t *ranked(const struct heapdiff_row *rows, size_t nrows,
                        size_t top, size_t *n) {
  struct rank_item *items = xmalloc((nrows + 1) * sizeof *items);
  size_t k = 0;
  for (size_t i = 0; i < nrows; i++) {
    const struct heapdiff_row *r = &rows[i];
    if (r->old.count == r->new.count && r->old.bytes == r->new.bytes)
      continue;
    items[k++] = (struct rank_item){rank_key(growth(&r->old, &r->new, 1)),
                                    rank_key(growth(&r->old, &r->new, 0)),
                                    (uint32_t)i};
  }
  *n = k < top ? k : top;
  return rank_ids(items, k);
}

/* The sections of a diff. */
enum section { BY_TYPE, BY_PATTERN, BY_SITE };

static const struct heapdiff_row *section_rows(const struct heapdiff *d,
                                               enum section k, size_t *n) {
  if (k == BY_TYPE) {
    *n = LJH_OBJ_MASK + 1;
    return d->types;
  }
  const struct heapdiff_rows *rows = k == BY_SITE ? &d->sites : &d->patterns;
  *n = rows->n;
  return rows->row;
}

static const char *row_name(const struct heapdiff *d, enum section k,
                            uint32_t i, size_t *len) {
  if (k != BY_TYPE) {
    const struct symbols *names =
        k == BY_SITE ? &d->sites.names : &d->patterns.names;
    *len = names->strings[i].len;
    return names->strings[i].data;
  }
  const char *name = i ? heapsnap_typename(i) : "never described (cut stream)";
  *len = strlen(name);
  return name;
}

/* -- Text -------------------------------------------------------------------- */

static void put_growth(FILE *out, const struct heapdiff_row *r) {
  int64_t g = growth(&r->old, &r->new, 1);
  heapreport_put_bytes(out, g < 0 ? (uint64_t)-g : (uint64_t)g,
                       g < 0 ? '-' : '+');
  fprintf(out, " %+10" PRId64 " %10" PRIu64, growth(&r->old, &r->new, 0),
          r->fresh);
}

static void text_section(FILE *out, const struct heapdiff *d, enum section k,
                         size_t top) {
  size_t nrows, n;
  const struct heapdiff_row *rows = section_rows(d, k, &nrows);
  uint32_t *ids = ranked(rows, nrows, top, &n);
  for (size_t i = 0; i < n; i++) {
    size_t len;
    const char *name = row_name(d, k, ids[i], &len);
    put_growth(out, &rows[ids[i]]);
    fprintf(out, "  %.*s\n", (int)len, name);
  }
  if (n == 0) fprintf(out, "  (no change)\n");
  free(ids);
}

static void write_text(FILE *out, const struct heapdiff *d,
                       const struct heapdiff_input *in, size_t top) {
  for (int i = 0; i < 2; i++)
    if (in->reader[i]->status != READER_OK)
      fprintf(out, "WARNING: %s is damaged, the diff covers what came "
                   "before the damage: %s\n\n",
              in->source[i], in->reader[i]->err_msg);
  fprintf(out, "HEAP DIFF %s -> %s\n", in->source[0], in->source[1]);
  for (int i = 0; i < 2; i++) {
    const struct heap_tally *t = i ? &d->total.new : &d->total.old;
    fprintf(out, "  %s: %" PRIu64 " objects, ", in->source[i], t->count);
    heapreport_put_bytes(out, t->bytes, 0);
    fputc('\n', out);
  }
  fprintf(out, "\n%14s %10s %10s\n", "bytes", "objects", "fresh");
  put_growth(out, &d->total);
  fprintf(out, "  in all (fresh: objects of %s at an address where %s had "
               "none of their type)\n",
          in->source[1], in->source[0]);
  fprintf(out, "\nGROWTH BY TYPE\n");
  text_section(out, d, BY_TYPE, top);
  fprintf(out, "\nGROWTH BY PATH (own sizes of the objects each path "
               "pattern reaches first)\n");
  text_section(out, d, BY_PATTERN, top);
  if (!d->joined) return;
  fprintf(out, "\nGROWTH BY ALLOCATION SITE (own sizes of the strongly "
               "reachable objects each site and stack made; each snapshot "
               "joined to %s at its own mark)\n", in->memprof);
  text_section(out, d, BY_SITE, top);
}

/* -- JSON ---------------------------------------------------------------- */

static json_t *json_change(uint64_t old, uint64_t new) {
  return json_pack("{s:o,s:o,s:I}", "old", json_u64(old), "new",
                   json_u64(new), "growth", (json_int_t)(new - old));
}

/* {key: name, objects, bytes, fresh}; without a key, no name. */
static json_t *json_row(const struct heapdiff_row *r, const char *key,
                        const char *name, size_t len) {
  json_t *row = json_object();
  if (key) json_object_set_new(row, key, json_bytes(name, len));
  json_object_set_new(row, "objects", json_change(r->old.count, r->new.count));
  json_object_set_new(row, "bytes", json_change(r->old.bytes, r->new.bytes));
  json_object_set_new(row, "fresh", json_u64(r->fresh));
  return row;
}

static json_t *json_section(const struct heapdiff *d, enum section k,
                            size_t top) {
  static const char *const keys[] = {
      [BY_TYPE] = "type", [BY_PATTERN] = "pattern", [BY_SITE] = "allocation"};
  size_t nrows, n;
  const struct heapdiff_row *rows = section_rows(d, k, &nrows);
  uint32_t *ids = ranked(rows, nrows, top, &n);
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) {
    size_t len;
    const char *name = row_name(d, k, ids[i], &len);
    json_array_append_new(a, json_row(&rows[ids[i]], keys[k], name, len));
  }
  free(ids);
  return a;
}

static int write_json(FILE *out, const struct heapdiff *d,
                      const struct heapdiff_input *in, size_t top) {
  json_t *root = json_object();
  for (int i = 0; i < 2; i++) {
    const struct heap_tally *t = i ? &d->total.new : &d->total.old;
    json_t *snap = json_pack("{s:o,s:o,s:o}", "source",
                             json_bytes(in->source[i], strlen(in->source[i])),
                             "objects", json_u64(t->count), "bytes",
                             json_u64(t->bytes));
    json_add_error(snap, in->reader[i]);
    json_object_set_new(root, i ? "new" : "old", snap);
  }
  json_object_set_new(root, "total", json_row(&d->total, NULL, NULL, 0));
  json_object_set_new(root, "types", json_section(d, BY_TYPE, top));
  json_object_set_new(root, "patterns", json_section(d, BY_PATTERN, top));
  if (d->joined)
    json_object_set_new(
        root, "memprof",
        json_pack("{s:s,s:o}", "source", in->memprof, "sites",
                  json_section(d, BY_SITE, top)));
  return json_write(root, out);
}

int heapdiff_write(FILE *out, const struct heapdiff *d,
                   const struct heapdiff_input *in,
                   const struct heapreport_options *opt) {
  int status = 0;
  if (opt->format == HEAP_JSON)
    status = write_json(out, d, in, opt->top);
  else
    write_text(out, d, in, opt->top);
  if (fflush(out) != 0 || ferror(out)) status = -1;
  return status;
}
