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
