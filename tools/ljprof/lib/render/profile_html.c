/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** HTML: one self-contained page with an interactive flame graph, the
** template flamegraph.html (embedded at build time as flamegraph_html[])
** with the profile inserted as JSON at its data marker. Every '<' in the
** JSON is written \u003c, so no name can end the script element it is in.
** A CPU profile's stacks say what ran (sysprof_kind_of their VM state):
** the page colours each frame by the kind most of its time was.
** A profile with labels adds to the data labelsets: [[KEY, VALUE, ...],
** escaped] and stack_labels: [an index in labelsets per stack, -1: none],
** and a selector where the template has its labels marker (nothing there
** otherwise: a page without labels is the template's alone).
*/
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "report.h"

extern const char flamegraph_html[]; /* NUL-terminated */

#define DATA_MARKER "<!--LJPROF-DATA-->"
#define LABELS_MARKER "<!--LJPROF-LABELS-->"

/*
** Of a profile with labels, at the labels marker (elsewhere nothing: the
** page of a profile without labels is the template's alone): a selector
** of the KEY=VALUE its sets carry, each with its total, that keeps the
** stacks carrying the one chosen, #label=KEY=VALUE in the address. It
** runs before the page's script and rewrites the data that one reads.
*/
static const char labels_script[] =
    "\n<script>\n"
    "\"use strict\";\n"
    "(function () {\n"
    "  const el = document.getElementById(\"profile-data\");\n"
    "  const data = JSON.parse(el.textContent);\n"
    "  const m = /(?:^#|&)label=([^&]*)/.exec(location.hash);\n"
    "  const chosen = m ? decodeURIComponent(m[1]) : \"\";\n"
    "  const has = data.labelsets.map(function (set) {\n"
    "    const s = new Set();\n"
    "    for (let i = 0; i < set.length; i += 2) s.add(set[i] + \"=\" + set[i + 1]);\n"
    "    return s;\n"
    "  });\n"
    "  const totals = new Map();\n"
    "  data.stack_labels.forEach(function (l, i) {\n"
    "    if (l >= 0) for (const kv of has[l]) totals.set(kv, (totals.get(kv) || 0) + data.values[i]);\n"
    "  });\n"
    "  const select = document.createElement(\"select\");\n"
    "  select.id = \"label\";\n"
    "  const all = document.createElement(\"option\");\n"
    "  all.value = \"\";\n"
    "  all.textContent = \"all labels\";\n"
    "  select.appendChild(all);\n"
    "  Array.from(totals.keys()).sort().forEach(function (kv) {\n"
    "    const o = document.createElement(\"option\");\n"
    "    o.value = kv;\n"
    "    o.textContent = kv + \" (\" + totals.get(kv).toLocaleString(\"en-US\") + \")\";\n"
    "    select.appendChild(o);\n"
    "  });\n"
    "  select.value = totals.has(chosen) ? chosen : \"\";\n"
    "  select.addEventListener(\"change\", function () {\n"
    "    location.hash = select.value ? \"label=\" + encodeURIComponent(select.value) : \"\";\n"
    "    location.reload();\n"
    "  });\n"
    "  document.getElementById(\"controls\").prepend(select);\n"
    "  if (!select.value) return;\n"
    "  const keep = data.stack_labels.map(function (l) { return l >= 0 && has[l].has(chosen); });\n"
    "  for (const k of [\"stacks\", \"values\", \"stack_kinds\", \"stack_labels\"])\n"
    "    if (data[k].length) data[k] = data[k].filter(function (_, i) { return keep[i]; });\n"
    "  data.total = data.values.reduce(function (a, b) { return a + b; }, 0);\n"
    "  data.what += \", label \" + chosen;\n"
    "  el.textContent = JSON.stringify(data);\n"
    "  document.body.dataset.label = chosen;\n"
    "})();\n"
    "</script>";

/* Does any stack carry labels? */
static int has_labels(const struct profile *p) {
  for (size_t s = 0; s < p->nstacks; s++)
    if (p->stacks[s].labels != LABELS_NONE) return 1;
  return 0;
}

/* "labelsets": the sets the stacks carry, each [KEY, VALUE, ...] escaped
** (the folded sets: labels=other, as pprof's), and "stack_labels". */
static void add_labels(json_t *root, const struct profile *p) {
  json_t *sets = json_array(), *of = json_array();
  uint32_t *index = xcalloc(p->sym->labels.nsets + 1, sizeof *index);
  struct sbuf sb = {0};
  for (size_t s = 0; s < p->nstacks; s++) {
    uint32_t set = p->stacks[s].labels;
    if (set != LABELS_NONE && !index[set]) {
      size_t n;
      const struct label *l = labelsets_get(&p->sym->labels, set, &n);
      json_t *pairs = json_array();
      if (set == LABELS_OTHER) {
        json_array_append_new(pairs, json_string("labels"));
        json_array_append_new(pairs, json_string("other"));
      }
      for (size_t i = 0; i < n; i++)
        for (int v = 0; v < 2; v++) {
          const struct symstring *str =
              &p->sym->strings[v ? l[i].value : l[i].key];
          sbuf_reset(&sb);
          labels_escape(&sb, str->data, str->len);
          json_array_append_new(pairs, json_bytes(sb.data, sb.len));
        }
      json_array_append_new(sets, pairs);
      index[set] = (uint32_t)json_array_size(sets);
    }
    json_array_append_new(of, json_integer(set == LABELS_NONE
                                                   ? -1
                                                   : (json_int_t)index[set] - 1));
  }
  sbuf_free(&sb);
  free(index);
  json_object_set_new(root, "labelsets", sets);
  json_object_set_new(root, "stack_labels", of);
}

#define HEAP_NOTE                                                            \
  "No chart of the heap over time: this stream has no time marks (memprof " \
  "v3 and v4 streams have none; v5, with stacks or sampling, has them)."

static const char *unit_of(const struct profile *p) {
  const char *unit = p->types[p->shown].unit;
  if (!strcmp(unit, "bytes") || !strcmp(unit, "nanoseconds")) return unit;
  return p->kind == PROFILE_CPU ? "samples" : "blocks";
}

static const char *what_of(const struct profile *p) {
  static const char *const memory[] = {
      [MEM_ALLOC_OBJECTS] = "blocks allocated by site",
      [MEM_ALLOC_SPACE] = "bytes allocated by site",
      [MEM_INUSE_OBJECTS] = "blocks in use at the end by site",
      [MEM_INUSE_SPACE] = "bytes in use at the end by site"};
  static const char *const sampled[] = {
      [MEM_ALLOC_OBJECTS] = "blocks allocated by stack (sampled: estimates)",
      [MEM_ALLOC_SPACE] = "bytes allocated by stack (sampled: estimates)",
      [MEM_INUSE_OBJECTS] = "blocks in use at the end by stack (sampled: "
                            "estimates)",
      [MEM_INUSE_SPACE] = "bytes in use at the end by stack (sampled: "
                          "estimates)"};
  if (p->what) return p->what;
  if (p->kind == PROFILE_CPU) return "samples by stack";
  return p->sample ? sampled[p->shown] : memory[p->shown];
}

static json_t *json_data(const struct profile *p) {
  struct sbuf scratch = {0};
  json_t *frames = json_array();
  for (size_t f = 0; f < p->nframes; f++) {
    sbuf_reset(&scratch);
    profile_frame_name(p, (uint32_t)f, &scratch);
    json_array_append_new(frames, json_bytes(scratch.data, scratch.len));
  }
  sbuf_free(&scratch);
  json_t *stacks = json_array(), *values = json_array();
  json_t *kinds = json_array(), *stack_kinds = json_array();
  for (size_t s = 0; s < p->nstacks; s++) {
    const struct profile_stack *st = &p->stacks[s];
    json_array_append_new(stacks, json_profile_stack(p, st));
    json_array_append_new(values, json_u64(st->values[p->shown]));
    if (p->kind == PROFILE_CPU)
      json_array_append_new(stack_kinds,
                            json_integer(sysprof_kind_of(st->vmstate)));
  }
  for (unsigned k = 0; p->kind == PROFILE_CPU && k < KIND_COUNT; k++)
    json_array_append_new(kinds, json_string(sysprof_kind_name(k)));
  json_t *root = json_object();
  json_object_set_new(root, "title", json_bytes(p->source, strlen(p->source)));
  json_object_set_new(root, "kind",
                      json_string(p->kind == PROFILE_CPU ? "cpu" : "memory"));
  json_object_set_new(root, "unit", json_string(unit_of(p)));
  json_object_set_new(root, "what", json_string(what_of(p)));
  json_object_set_new(root, "total", json_u64(p->totals[p->shown]));
  json_object_set_new(root, "period_ns",
                      p->period ? json_u64(p->period) : json_null());
  json_object_set_new(root, "damaged",
                      p->reader->status != READER_OK
                          ? json_bytes(p->reader->err_msg,
                                       strlen(p->reader->err_msg))
                          : json_null());
  if (p->heap) {
    json_object_set_new(root, "heap", json_heapline(p->heap, p->sym));
    if (!p->heap->npoints)
      json_object_set_new(root, "heap_note", json_string(HEAP_NOTE));
  }
  json_object_set_new(root, "frames", frames);
  json_object_set_new(root, "stacks", stacks);
  json_object_set_new(root, "values", values);
  json_object_set_new(root, "note", p->note && *p->note
                                        ? json_bytes(p->note, strlen(p->note))
                                        : json_null());
  json_object_set_new(root, "kinds", kinds);
  json_object_set_new(root, "stack_kinds", stack_kinds);
  if (has_labels(p)) add_labels(root, p);
  return root;
}

static int write_json_in_script(FILE *out, json_t *data) {
  char *text = json_dumps(data, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(data);
  if (!text) return -1;
  for (const char *s = text, *lt;; s = lt + 1) {
    lt = strchr(s, '<');
    fwrite(s, 1, lt ? (size_t)(lt - s) : strlen(s), out);
    if (!lt) break;
    fputs("\\u003c", out);
  }
  free(text);
  return 0;
}

int report_html(FILE *out, const struct profile *p) {
  const char *marker = strstr(flamegraph_html, DATA_MARKER);
  const char *labels = strstr(marker, LABELS_MARKER);
  fwrite(flamegraph_html, 1, (size_t)(marker - flamegraph_html), out);
  if (write_json_in_script(out, json_data(p)) != 0) return -1;
  marker += strlen(DATA_MARKER);
  fwrite(marker, 1, (size_t)(labels - marker), out);
  if (has_labels(p)) fputs(labels_script, out);
  fputs(labels + strlen(LABELS_MARKER), out);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
