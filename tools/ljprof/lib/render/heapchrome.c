/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "heapchrome.h"

#include <inttypes.h>
#include <string.h>

#include "json_out.h"
#include "shared/symbols.h"

/* The format's own type lists, in its order (V8's). */
static const char *const node_types[] = {
    "hidden", "array",  "string",    "object",
    "code",   "closure", "regexp",   "number",
    "native", "synthetic", "concatenated string", "sliced string",
    "symbol", "bigint", "object shape"};
enum { N_HIDDEN, N_STRING = 2, N_OBJECT, N_CODE, N_CLOSURE, N_NATIVE = 8,
       N_SYNTHETIC };

static const char *const edge_types[] = {"context",  "element", "property",
                                         "internal", "hidden",  "shortcut",
                                         "weak"};
enum { E_CONTEXT, E_ELEMENT, E_PROPERTY, E_INTERNAL, E_WEAK = 6 };

static const unsigned char node_type[LJH_OBJ_MASK + 1] = {
    [LJH_OBJ_STR] = N_STRING,    [LJH_OBJ_THREAD] = N_OBJECT,
    [LJH_OBJ_PROTO] = N_CODE,    [LJH_OBJ_LFUNC] = N_CLOSURE,
    [LJH_OBJ_CFUNC] = N_CLOSURE, [LJH_OBJ_TRACE] = N_CODE,
    [LJH_OBJ_CDATA] = N_NATIVE,  [LJH_OBJ_TAB] = N_OBJECT,
    [LJH_OBJ_UDATA] = N_NATIVE}; /* the rest (upvalues): hidden */

#define NODE_FIELDS 7

/* "name":["item",...], or without a name the list alone. */
static void put_list(FILE *out, const char *name, const char *const *items,
                     size_t n) {
  if (name) fprintf(out, "\"%s\":", name);
  fputc('[', out);
  for (size_t i = 0; i < n; i++)
    fprintf(out, "%s\"%s\"", i ? "," : "", items[i]);
  fputc(']', out);
}

static void put_meta(FILE *out, const struct heapsnap *s) {
  static const char *const node_fields[NODE_FIELDS] = {
      "type", "name", "id", "self_size", "edge_count", "trace_node_id",
      "detachedness"};
  static const char *const edge_fields[] = {"type", "name_or_index",
                                            "to_node"};
  static const char *const none[] = {""};
  fputs("{\"snapshot\":{\"meta\":{", out);
  put_list(out, "node_fields", node_fields, NODE_FIELDS);
  fputs(",\"node_types\":[", out);
  put_list(out, NULL, node_types, sizeof node_types / sizeof *node_types);
  fputs(",\"string\",\"number\",\"number\",\"number\",\"number\",\"number\"],",
        out);
  put_list(out, "edge_fields", edge_fields, 3);
  fputs(",\"edge_types\":[", out);
  put_list(out, NULL, edge_types, sizeof edge_types / sizeof *edge_types);
  fputs(",\"string_or_number\",\"node\"],", out);
  put_list(out, "trace_function_info_fields", none, 0);
  fputc(',', out);
  put_list(out, "trace_node_fields", none, 0);
  fputc(',', out);
  put_list(out, "sample_fields", none, 0);
  fputs(",\"location_fields\":[\"object_index\",\"script_id\",\"line\","
        "\"column\"]},",
        out);
  fprintf(out,
          "\"node_count\":%zu,\"edge_count\":%zu,\"trace_function_count\":0"
          "},\n",
          s->nobj + 1, s->nedge);
}

static uint32_t u32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : v; }

static uint32_t intern(struct symbols *strings, struct sbuf *sb) {
  return symbols_intern(strings, sb->data ? sb->data : "", sb->len);
}

/* The kind of edge e and its name (a string index) or index. */
static unsigned edge_of(const struct heapgraph *h, uint32_t src, uint32_t e,
                        struct symbols *strings, struct sbuf *sb,
                        uint32_t *name_or_index) {
  const struct hs_edge *ed = &h->snap->edge[e];
  if (!ed->weak && ed->kind == LJH_E_ARRAY && ed->name <= UINT32_MAX) {
    *name_or_index = (uint32_t)ed->name;
    return E_ELEMENT;
  }
  sbuf_reset(sb);
  heapgraph_step(h, src, e, sb);
  if (sb->len > 1 && sb->data[0] == '.') { /* .key: the key */
    memmove(sb->data, sb->data + 1, --sb->len);
  } else if (sb->len == 0) {
    sbuf_add(sb, "value", 5); /* an upvalue's */
  }
  *name_or_index = intern(strings, sb);
  if (ed->weak) return E_WEAK;
  switch (ed->kind) {
  case LJH_E_HSTR:
  case LJH_E_HINT:
  case LJH_E_HNUM:
  case LJH_E_HBOOL:
  case LJH_E_HLIGHT:
  case LJH_E_HOBJ:
  case LJH_E_ARRAY:
    return E_PROPERTY;
  case LJH_E_UPVAL:
  case LJH_E_SLOT:
    return E_CONTEXT;
  default:
    return E_INTERNAL;
  }
}

static void put_strings(FILE *out, const struct symbols *strings) {
  fputs("\"strings\":[", out);
  for (size_t i = 0; i < strings->nstrings; i++) {
    json_t *str = json_bytes(strings->strings[i].data, strings->strings[i].len);
    if (i) fputs(",\n", out);
    json_dumpf(str, out, JSON_ENCODE_ANY);
    json_decref(str);
  }
  fputs("]}\n", out);
}

int heapchrome_write(FILE *out, const struct heapgraph *h) {
  const struct heapsnap *s = h->snap;
  struct symbols strings;
  struct sbuf sb = {0};
  uint32_t first, end;
  symbols_init(&strings);
  put_meta(out, s);
  sbuf_add(&sb, "", 0);
  fprintf(out, "\"nodes\":[%d,%" PRIu32 ",1,0,%" PRIu32 ",0,0", N_SYNTHETIC,
          intern(&strings, &sb), s->nroot);
  for (uint32_t v = 0; v < s->nobj; v++) {
    sbuf_reset(&sb);
    heapgraph_name(s, v, &sb);
    heapsnap_edges(s, v, &first, &end);
    fprintf(out, ",\n%u,%" PRIu32 ",%" PRIu64 ",%" PRIu32 ",%" PRIu32 ",0,0",
            node_type[s->obj[v].type & LJH_OBJ_MASK], intern(&strings, &sb),
            2 * (uint64_t)v + 3, u32(s->obj[v].size), end - first);
  }
  fputs("],\n\"edges\":[", out);
  for (uint32_t node = 0; node <= s->nobj; node++) {
    uint32_t src = node == 0 ? HS_NONE : node - 1, name;
    heapsnap_edges(s, src, &first, &end);
    for (uint32_t e = first; e < end; e++) {
      unsigned type = edge_of(h, src, e, &strings, &sb, &name);
      fprintf(out, "%s%u,%" PRIu32 ",%" PRIu64, e ? ",\n" : "", type, name,
              ((uint64_t)s->edge[e].target + 1) * NODE_FIELDS);
    }
  }
  fputs("],\n\"trace_function_infos\":[],\"trace_tree\":[],\"samples\":[],"
        "\"locations\":[],\n",
        out);
  put_strings(out, &strings);
  symbols_free(&strings);
  sbuf_free(&sb);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
