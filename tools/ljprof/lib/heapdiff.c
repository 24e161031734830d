#include "heapdiff.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"

#define WEAK_ROW "(only weakly reachable)"

/* -- Building -------------------------------------------------------------- */

static struct heapdiff_row *row_of(struct heapdiff *d, const char *text,
                                   size_t len) {
  uint32_t id = symbols_intern(&d->names, text, len);
  if (id >= d->npatterns) { /* a fresh interner numbers names in order */
    grow_array_zeroed((void **)&d->patterns, &d->cap, (size_t)id + 1,
                      sizeof *d->patterns);
    d->npatterns = (size_t)id + 1;
  }
  return &d->patterns[id];
}

static void tally_sum(struct heap_tally *to, const struct heap_tally *from) {
  to->count += from->count;
  to->bytes = add_sat(to->bytes, from->bytes);
}

static struct heap_tally *side(struct heapdiff_row *r, int which) {
  return which ? &r->new : &r->old;
}

/* One snapshot's tallies into the rows (which: 0 OLD, 1 NEW); *row_of_pattern
** gets the row of each of its patterns, the last for the weak. */
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
    struct heapdiff_row *r = row_of(d, sb.data ? sb.data : "", sb.len);
    rows[p] = (uint32_t)(r - d->patterns);
    tally_sum(side(r, which), &pats[p]);
  }
  struct heapdiff_row *r = row_of(d, WEAK_ROW, strlen(WEAK_ROW));
  rows[h->npatterns] = (uint32_t)(r - d->patterns);
  tally_sum(side(r, which), &weak);
  sbuf_free(&sb);
  free(pats);
  *row_of_pattern = rows;
}

/* Objects are matched by address and type: one of NEW with no match in
** OLD was surely allocated between them. */
static uint64_t object_key(const struct hs_object *o) {
  return o->addr << 4 | (o->type & LJH_OBJ_MASK);
}

static void count_fresh(struct heapdiff *d, const struct heapgraph *old,
                        const struct heapgraph *new, const uint32_t *rows) {
  struct keymap seen = {0};
  for (uint32_t v = 0; v < old->snap->nobj; v++)
    keymap_put(&seen, object_key(&old->snap->obj[v]), 1);
  for (uint32_t v = 0; v < new->snap->nobj; v++) {
    const struct hs_object *o = &new->snap->obj[v];
    if (keymap_get(&seen, object_key(o)) != HASHTAB_NONE) continue;
    uint32_t p = new->idom[v] == HS_NONE ? new->npatterns : new->pattern[v];
    d->types[o->type].fresh++;
    d->total.fresh++;
    if (p != HS_NONE) d->patterns[rows[p]].fresh++;
  }
  keymap_free(&seen);
}

void heapdiff_build(struct heapdiff *d, const struct heapgraph *old,
                    const struct heapgraph *new) {
  uint32_t *old_rows, *new_rows;
  memset(d, 0, sizeof *d);
  symbols_init(&d->names);
  add_snapshot(d, old, 0, &old_rows);
  add_snapshot(d, new, 1, &new_rows);
  count_fresh(d, old, new, new_rows);
  free(old_rows);
  free(new_rows);
}

void heapdiff_free(struct heapdiff *d) {
  symbols_free(&d->names);
  free(d->patterns);
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

static const char *row_name(const struct heapdiff *d, int patterns,
                            uint32_t i, size_t *len) {
  if (patterns) {
    *len = d->names.strings[i].len;
    return d->names.strings[i].data;
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

static void text_section(FILE *out, const struct heapdiff *d, int patterns,
                         size_t top) {
  const struct heapdiff_row *rows = patterns ? d->patterns : d->types;
  size_t nrows = patterns ? d->npatterns : LJH_OBJ_MASK + 1, n;
  uint32_t *ids = ranked(rows, nrows, top, &n);
  for (size_t i = 0; i < n; i++) {
    size_t len;
    const char *name = row_name(d, patterns, ids[i], &len);
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
  text_section(out, d, 0, top);
  fprintf(out, "\nGROWTH BY PATH (own sizes of the objects each path "
               "pattern reaches first)\n");
  text_section(out, d, 1, top);
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

static json_t *json_section(const struct heapdiff *d, int patterns,
                            size_t top) {
  const struct heapdiff_row *rows = patterns ? d->patterns : d->types;
  size_t nrows = patterns ? d->npatterns : LJH_OBJ_MASK + 1, n;
  uint32_t *ids = ranked(rows, nrows, top, &n);
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) {
    size_t len;
    const char *name = row_name(d, patterns, ids[i], &len);
    json_array_append_new(a, json_row(&rows[ids[i]],
                                      patterns ? "pattern" : "type", name,
                                      len));
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
  json_object_set_new(root, "types", json_section(d, 0, top));
  json_object_set_new(root, "patterns", json_section(d, 1, top));
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
