/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** HTML: one self-contained page with an interactive flame graph, the
** template flamegraph.html (embedded at build time as flamegraph_html[])
** with the profile inserted as JSON at its data marker. Every '<' in the
** JSON is written \u003c, so no name can end the script element it is in.
** A CPU profile's stacks say what ran (sysprof_kind_of their VM state):
** the page colours each frame by the kind most of its time was.
*/
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "report.h"

extern const char flamegraph_html[]; /* NUL-terminated */

#define DATA_MARKER "<!--LJPROF-DATA-->"

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
  fwrite(flamegraph_html, 1, (size_t)(marker - flamegraph_html), out);
  if (write_json_in_script(out, json_data(p)) != 0) return -1;
  fputs(marker + strlen(DATA_MARKER), out);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
