/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Sysprof JSON report: the stream's configuration and statistics, samples
** by VM state, every distinct stack (frames outermost first) with its
** count, and functions and lines with self and total samples. Names are
** given in full (no aliases); a Lua function's source name, when its
** source gives one (srcname.h), as `lua_name`.
*/
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "report.h"
#include "shared/srcname.h"

static json_t *json_vmstates(const struct sysagg *agg) {
  json_t *o = json_object();
  for (unsigned s = 0; s < VMSTATE_COUNT; s++)
    json_object_set_new(o, sysprof_vmstate_name(s),
                        json_u64(sysagg_vmstate_samples(agg, s)));
  return o;
}

static json_t *json_stacks(const struct sysprof_report_input *in,
                           struct sbuf *scratch) {
  const struct sysagg *agg = in->agg;
  uint32_t *order = sysagg_rank_stacks(agg);
  json_t *list = json_array();
  for (size_t i = 0; i < agg->nstacks; i++) {
    const struct sysagg_stack *st = &agg->stacks[order[i]];
    json_t *frames = json_array();
    for (size_t f = st->depth; f-- > 0;)
      json_array_append_new(
          frames, json_location(in->sym, agg->frames[st->first + f].loc,
                                scratch));
    json_t *item = json_object();
    json_object_set_new(item, "frames", frames);
    json_object_set_new(item, "count", json_u64(st->count));
    if (origins_merged(in->origins))
      json_object_set_new(item, "stream", json_integer(st->stream));
    json_t *labels = json_labels(in->sym, st->labels);
    if (labels) json_object_set_new(item, "labels", labels);
    if (st->labels == LABELS_OTHER)
      json_object_set_new(item, "labels_folded", json_true());
    json_array_append_new(list, item);
  }
  free(order);
  return list;
}

static json_t *json_ranking(const struct sysprof_report_input *in,
                            const struct sysagg_table *table, size_t top,
                            int functions, struct sbuf *scratch) {
  struct srcnames srcnames = {0};
  size_t count;
  uint32_t *ids = sysagg_rank(table, KEY_SELF, &count);
  if (top && top < count) count = top;
  json_t *list = json_array();
  for (size_t i = 0; i < count; i++) {
    const struct sysagg_counts *c = sysagg_counts(table, ids[i]);
    json_t *item = json_object();
    sbuf_reset(scratch);
    if (functions)
      symbols_format_function(in->sym, ids[i], NULL, scratch);
    else
      symbols_format(in->sym, ids[i], NULL, scratch);
    json_object_set_new(item, "name", json_bytes(scratch->data, scratch->len));
    const struct location *l = &in->sym->locations[ids[i]];
    sbuf_reset(scratch);
    if (functions && l->kind == LOC_LUA && l->name != SYMBOLS_NONE &&
        srcnames_find(&srcnames, in->sym->strings[l->name].data,
                      in->sym->strings[l->name].len, l->line, scratch))
      json_object_set_new(item, "lua_name",
                          json_bytes(scratch->data, scratch->len));
    json_object_set_new(item, "self", json_u64(c->self));
    json_object_set_new(item, "total", json_u64(c->total));
    json_array_append_new(list, item);
  }
  free(ids);
  srcnames_free(&srcnames);
  return list;
}

/* What the stream says about itself: config and stats, null if absent. */
static void add_meta(json_t *root, const struct sysagg *agg) {
  static const char *const clocks[] = {"thread-cpu", "monotonic",
                                       "thread-cpu-perf"};
  const struct sysprof_meta *m = &agg->meta;
  json_object_set_new(root, "version", json_integer(m->version));
  json_object_set_new(root, "mode", m->has_config
                                        ? json_string(sysprof_mode_name(m->mode))
                                        : json_null());
  json_object_set_new(root, "interval_ms",
                      m->has_config ? json_real((double)m->interval_us / 1000.0)
                                    : json_null());
  json_object_set_new(root, "clock", m->has_config
                                         ? json_string(clocks[m->clock])
                                         : json_null());
  json_object_set_new(root, "samples", json_u64(sysagg_samples(agg)));
  json_object_set_new(root, "samples_with_stacks", json_u64(agg->samples));
  json_object_set_new(root, "samples_line_unknown",
                      json_u64(agg->line_unknown));
  json_object_set_new(root, "dropped",
                      m->has_stats ? json_u64(m->dropped) : json_null());
  json_object_set_new(root, "overruns",
                      m->has_stats ? json_u64(m->overruns) : json_null());
  json_object_set_new(root, "elapsed_ns",
                      m->has_stats ? json_u64(m->elapsed_ns) : json_null());
  double achieved, asked;
  int rate = sysagg_rate(agg, &achieved, &asked);
  json_object_set_new(root, "rate_achieved",
                      rate ? json_real(achieved) : json_null());
  json_object_set_new(root, "rate_asked", rate ? json_real(asked) : json_null());
}

/* A stack's frames, outermost first. */
static json_t *json_top_stack(size_t item, void *ud) {
  const struct sysprof_report_input *in = ud;
  const struct sysagg_stack *st = &in->agg->stacks[item];
  struct sbuf scratch = {0};
  json_t *frames = json_array();
  for (size_t f = st->depth; f-- > 0;)
    json_array_append_new(
        frames, json_location(in->sym, in->agg->frames[st->first + f].loc,
                              &scratch));
  sbuf_free(&scratch);
  return frames;
}

static void add_by_label(json_t *root, const struct sysprof_report_input *in) {
  struct labeltable table;
  labeltable_cpu(&table, in->agg, SYMBOLS_NONE);
  json_add_by_label(root, in->sym, &table, "samples", json_top_stack,
                    (void *)in);
  labeltable_free(&table);
}

int report_sysprof_json(FILE *out, const struct sysprof_report_input *in,
                        const struct report_options *opt) {
  struct sbuf scratch = {0};
  json_t *root = json_object();
  json_object_set_new(root, "kind", json_string("sysprof"));
  json_object_set_new(root, "source",
                      json_bytes(in->source, strlen(in->source)));
  add_meta(root, in->agg);
  json_add_origins(root, in->origins, PROFILE_CPU);
  json_object_set_new(root, "vmstate", json_vmstates(in->agg));
  add_by_label(root, in);
  json_object_set_new(root, "stacks", json_stacks(in, &scratch));
  json_object_set_new(root, "functions",
                      json_ranking(in, &in->agg->funcs, opt->top, 1, &scratch));
  json_object_set_new(root, "lines",
                      json_ranking(in, &in->agg->lines, opt->top, 0, &scratch));
  json_add_error(root, in->reader);
  sbuf_free(&scratch);
  return json_write(root, out);
}
