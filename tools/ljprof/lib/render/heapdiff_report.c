/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "heapdiff_report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"

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
