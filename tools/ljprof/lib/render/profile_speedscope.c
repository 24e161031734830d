/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** speedscope's file format (https://www.speedscope.app/file-format-schema.json):
** the frames shared (name; file and line where the frame has a source),
** and one "sampled" profile: each stack as frame indices from the root to
** the leaf, its weight the shown value. CPU weights are nanoseconds
** (samples x interval) when the stream states its interval, else samples
** (unit "none"); memory weights are bytes, or blocks (unit "none").
*/
#include <string.h>

#include "json_out.h"
#include "report.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

static json_t *json_frames(const struct profile *p) {
  json_t *frames = json_array();
  struct sbuf scratch = {0};
  for (size_t f = 0; f < p->nframes; f++) {
    json_t *frame = json_object();
    sbuf_reset(&scratch);
    profile_frame_name(p, (uint32_t)f, &scratch);
    json_object_set_new(frame, "name", json_bytes(scratch.data, scratch.len));
    sbuf_reset(&scratch);
    int64_t line;
    if (profile_frame_source(p, (uint32_t)f, 0, &scratch, &line)) {
      json_object_set_new(frame, "file", json_bytes(scratch.data, scratch.len));
      json_object_set_new(frame, "line", json_integer(line));
    }
    json_array_append_new(frames, frame);
  }
  sbuf_free(&scratch);
  return frames;
}

static json_t *json_sampled(const struct profile *p) {
  size_t value = profile_weight(p);
  const char *unit = p->types[value].unit;
  if (strcmp(unit, "nanoseconds") && strcmp(unit, "bytes")) unit = "none";
  json_t *samples = json_array(), *weights = json_array();
  for (size_t s = 0; s < p->nstacks; s++) {
    const struct profile_stack *st = &p->stacks[s];
    json_array_append_new(samples, json_profile_stack(p, st));
    json_array_append_new(weights, json_u64(st->values[value]));
  }
  json_t *profile = json_object();
  json_object_set_new(profile, "type", json_string("sampled"));
  json_object_set_new(profile, "name",
                      json_string(p->types[value].type));
  json_object_set_new(profile, "unit", json_string(unit));
  json_object_set_new(profile, "startValue", json_integer(0));
  json_object_set_new(profile, "endValue", json_u64(p->totals[value]));
  json_object_set_new(profile, "samples", samples);
  json_object_set_new(profile, "weights", weights);
  return profile;
}

int report_speedscope(FILE *out, const struct profile *p) {
  json_t *root = json_object();
  json_object_set_new(root, "$schema", json_string(SPEEDSCOPE_SCHEMA));
  json_t *shared = json_object();
  json_object_set_new(shared, "frames", json_frames(p));
  json_object_set_new(root, "shared", shared);
  json_t *profiles = json_array();
  json_array_append_new(profiles, json_sampled(p));
  json_object_set_new(root, "profiles", profiles);
  json_object_set_new(root, "name",
                      json_bytes(p->source, strlen(p->source)));
  json_object_set_new(root, "activeProfileIndex", json_integer(0));
  json_object_set_new(root, "exporter", json_string("ljprof"));
  return json_write(root, out);
}
