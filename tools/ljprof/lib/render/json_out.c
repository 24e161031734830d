/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "json_out.h"

#include <string.h>

json_t *json_u64(uint64_t v) {
  return v <= INT64_MAX ? json_integer((json_int_t)v) : json_real((double)v);
}

json_t *json_bytes(const char *data, size_t len) {
  json_t *s = json_stringn(data, len);
  if (s) return s;
  struct sbuf esc = {0};
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)data[i];
    if (c < 0x80)
      sbuf_add(&esc, &data[i], 1);
    else
      sbuf_printf(&esc, "\\x%02x", c);
  }
  s = json_stringn(esc.data ? esc.data : "", esc.len);
  sbuf_free(&esc);
  return s;
}

json_t *json_profile_stack(const struct profile *p,
                           const struct profile_stack *st) {
  json_t *stack = json_array();
  for (size_t f = 0; f < st->depth; f++)
    json_array_append_new(stack,
                          json_integer(profile_frame_from_root(p, st, f)));
  return stack;
}

json_t *json_location(const struct symbols *sym, uint32_t loc,
                      struct sbuf *scratch) {
  sbuf_reset(scratch);
  symbols_format(sym, loc, NULL, scratch);
  return json_bytes(scratch->data, scratch->len);
}

void json_add_origins(json_t *root, const struct origins *o,
                      enum profile_kind kind) {
  if (!origins_merged(o)) return;
  json_t *list = json_array();
  for (size_t i = 0; i < o->n; i++) {
    const struct origin *it = &o->items[i];
    json_t *item = json_object();
    json_object_set_new(item, "name", json_bytes(it->name, strlen(it->name)));
    if (it->process.known) {
      json_object_set_new(item, "pid", json_u64(it->process.pid));
      json_object_set_new(item, "host", json_bytes(it->process.host,
                                                   strlen(it->process.host)));
      json_object_set_new(item, "started_ns", json_u64(it->process.epoch_ns));
    }
    if (kind == PROFILE_CPU) {
      json_object_set_new(item, "samples", json_u64(it->value));
    } else {
      json_object_set_new(item, "alloc_bytes", json_u64(it->value));
      json_object_set_new(item, "inuse_bytes", json_u64(it->inuse));
    }
    json_array_append_new(list, item);
  }
  json_object_set_new(root, "streams", list);
}

void json_add_error(json_t *root, const struct reader *r) {
  if (r->status == READER_OK) return;
  json_t *err = json_object();
  json_object_set_new(err, "offset", json_u64(r->err_offset));
  json_object_set_new(err, "message",
                      json_bytes(r->err_msg, strlen(r->err_msg)));
  json_object_set_new(root, "error", err);
}

int json_write(json_t *root, FILE *out) {
  int rc = json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (rc == 0) fputc('\n', out);
  return rc == 0 && fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

/* The values of one series at every point. */
static json_t *json_series(const struct heapline *h, uint32_t loc,
                           uint64_t *peak) {
  json_t *list = json_array();
  *peak = 0;
  for (size_t i = 0; i < h->npoints; i++) {
    uint64_t v = heapline_value(&h->points[i], loc);
    if (v > *peak) *peak = v;
    json_array_append_new(list, json_u64(v));
  }
  return list;
}

json_t *json_heapline(const struct heapline *h, const struct symbols *sym) {
  if (!h || !h->npoints) return json_null();
  struct sbuf scratch = {0};
  uint32_t top[HEAPLINE_TOP];
  size_t ntop = heapline_top(h, top);
  json_t *times = json_array(), *events = json_array(), *total = json_array(),
         *other = json_array(), *sites = json_array();
  for (size_t i = 0; i < h->npoints; i++) {
    const struct heapline_point *p = &h->points[i];
    uint64_t rest = p->total;
    for (size_t s = 0; s < ntop; s++) rest -= heapline_value(p, top[s]);
    json_array_append_new(times, json_u64(p->ns));
    json_array_append_new(events, json_u64(p->events));
    json_array_append_new(total, json_u64(p->total));
    json_array_append_new(other, json_u64(rest));
  }
  for (size_t s = 0; s < ntop; s++) {
    uint64_t peak;
    json_t *site = json_object();
    json_object_set_new(site, "location", json_location(sym, top[s], &scratch));
    json_t *bytes = json_series(h, top[s], &peak);
    json_object_set_new(site, "peak_bytes", json_u64(peak));
    json_object_set_new(site, "bytes", bytes);
    json_array_append_new(sites, site);
  }
  sbuf_free(&scratch);
  json_t *o = json_object();
  json_object_set_new(o, "marks", json_u64(h->nmarks));
  json_object_set_new(o, "points", json_u64(h->npoints));
  json_object_set_new(o, "peak_bytes", json_u64(h->peak));
  json_object_set_new(o, "peak_ns", json_u64(h->peak_ns));
  json_object_set_new(o, "time_ns", times);
  json_object_set_new(o, "events", events);
  json_object_set_new(o, "total", total);
  json_object_set_new(o, "sites", sites);
  json_object_set_new(o, "other", other);
  return o;
}

json_t *json_labels(const struct symbols *sym, uint32_t set) {
  size_t n;
  const struct label *l = labelsets_get(&sym->labels, set, &n);
  if (!n) return NULL;
  json_t *o = json_object();
  for (size_t i = 0; i < n; i++) {
    const struct symstring *k = &sym->strings[l[i].key];
    const struct symstring *v = &sym->strings[l[i].value];
    json_t *key = json_bytes(k->data, k->len);
    json_object_set_new(o, json_string_value(key), json_bytes(v->data, v->len));
    json_decref(key);
  }
  return o;
}

void json_add_by_label(json_t *root, const struct symbols *sym,
                       const struct labeltable *t, const char *what,
                       json_t *(*top)(size_t item, void *ud), void *ud) {
  if (!t->n) return;
  json_t *rows = json_array();
  for (size_t i = 0; i < t->n; i++) {
    const struct labelrow *r = &t->rows[i];
    json_t *row = json_object();
    const struct symstring *k = &sym->strings[r->key];
    json_object_set_new(row, "key", json_bytes(k->data, k->len));
    json_object_set_new(row, "value",
                        r->value < LABEL_VALUE_OTHER
                            ? json_bytes(sym->strings[r->value].data,
                                         sym->strings[r->value].len)
                            : json_null());
    if (r->value == LABEL_VALUE_OTHER)
      json_object_set_new(row, "folded", json_true());
    json_object_set_new(row, what, json_u64(r->total));
    json_object_set_new(row, "top",
                        r->top == SIZE_MAX ? json_null() : top(r->top, ud));
    json_array_append_new(rows, row);
  }
  json_t *o = json_object();
  json_object_set_new(o, "folded", json_u64(sym->labels.folded));
  if (sym->labels.folded_more)
    json_object_set_new(o, "folded_at_least", json_true());
  json_object_set_new(o, "rows", rows);
  json_object_set_new(root, "by_label", o);
}
