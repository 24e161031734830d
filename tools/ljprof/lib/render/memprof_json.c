/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** JSON report: totals, then one object per location with its counters and
** the allocation sites its reallocations and frees touched. Names are given
** in full (no aliases); JSON escaping keeps multi-line chunk names intact.
*/
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "report.h"

/* Add the counters of st to the object o; returns o. */
static json_t *json_stats(json_t *o, const struct memstats *st) {
  json_object_set_new(o, "alloc_events", json_u64(st->alloc_events));
  json_object_set_new(o, "alloc_bytes", json_u64(st->alloc_bytes));
  json_object_set_new(o, "realloc_events", json_u64(st->realloc_events));
  json_object_set_new(o, "realloc_new_bytes", json_u64(st->realloc_new_bytes));
  json_object_set_new(o, "realloc_old_bytes", json_u64(st->realloc_old_bytes));
  json_object_set_new(o, "free_events", json_u64(st->free_events));
  json_object_set_new(o, "freed_bytes", json_u64(st->freed_bytes));
  json_object_set_new(o, "live_bytes", json_u64(st->live_bytes));
  json_object_set_new(o, "live_blocks", json_u64(st->live_blocks));
  return o;
}

static json_t *json_overrides(const struct report_input *in,
                              const struct overrides *o, uint32_t site,
                              struct sbuf *scratch) {
  size_t n;
  const struct override *ov = memagg_overrides(o, site, &n);
  json_t *list = json_array();
  for (size_t i = 0; i < n; i++) {
    json_t *item = json_object();
    json_object_set_new(item, "location",
                        json_location(in->sym, ov[i].owner, scratch));
    json_object_set_new(item, "events", json_u64(ov[i].events));
    json_object_set_new(item, "bytes", json_u64(ov[i].bytes));
    json_array_append_new(list, item);
  }
  return list;
}

static json_t *json_locations(const struct report_input *in,
                              const struct report_options *opt) {
  struct sbuf scratch = {0};
  size_t count;
  uint32_t *ids = memagg_rank(in->agg, opt->leak_only ? VIEW_LIVE : VIEW_ALL,
                              opt->order, &count);
  if (opt->top && opt->top < count) count = opt->top;
  json_t *list = json_array();
  for (size_t i = 0; i < count; i++) {
    const struct memstats *st = memagg_stats(in->agg, ids[i]);
    json_t *item = json_object();
    json_object_set_new(item, "location",
                        json_location(in->sym, ids[i], &scratch));
    json_stats(item, st);
    json_object_set_new(item, "allocs_freed", json_u64(st->owned_frees));
    json_object_set_new(
        item, "realloc_overrides",
        json_overrides(in, &in->agg->realloc_overrides, ids[i], &scratch));
    json_object_set_new(
        item, "free_overrides",
        json_overrides(in, &in->agg->free_overrides, ids[i], &scratch));
    json_array_append_new(list, item);
  }
  free(ids);
  sbuf_free(&scratch);
  return list;
}

/* What a v5 stream says of its stacks and sampling. */
static void json_meta(json_t *root, const struct symbols *sym) {
  const struct memprof_meta *m = &sym->memprof;
  if (m->has_config) {
    json_object_set_new(root, "sampled_every", json_u64(m->sample));
    json_object_set_new(root, "estimates", json_boolean(m->sample != 0));
  }
  if (!m->has_stats) return;
  json_t *o = json_object();
  json_object_set_new(o, "distinct", json_u64(m->nstacks));
  json_object_set_new(o, "native", json_boolean(m->native));
  json_object_set_new(o, "truncated_events", json_u64(m->truncated));
  json_object_set_new(o, "table_full_events", json_u64(m->full));
  json_object_set_new(o, "samples", json_u64(m->samples));
  json_object_set_new(o, "untracked_blocks", json_u64(m->untracked));
  json_object_set_new(root, "stacks", o);
}

/* A pair's frames, outermost first: its stack, then its site. */
static json_t *json_top_pair(size_t item, void *ud) {
  const struct report_input *in = ud;
  const struct stackpair *p = &in->agg->pairs[item];
  struct sbuf scratch = {0};
  uint32_t depth;
  const struct symframe *f = symbols_stack(in->sym, p->stack, &depth);
  json_t *frames = json_array();
  for (uint32_t i = depth; i-- > 0;)
    json_array_append_new(frames, json_location(in->sym, f[i].loc, &scratch));
  if (!depth || f[0].loc != p->site)
    json_array_append_new(frames, json_location(in->sym, p->site, &scratch));
  sbuf_free(&scratch);
  return frames;
}

static void add_by_label(json_t *root, const struct report_input *in,
                         int live) {
  struct labeltable table;
  labeltable_memory(&table, in->agg, live, SYMBOLS_NONE);
  json_add_by_label(root, in->sym, &table, live ? "inuse_bytes" : "alloc_bytes",
                    json_top_pair, (void *)in);
  labeltable_free(&table);
}

int report_memprof_json(FILE *out, const struct report_input *in,
                        const struct report_options *opt) {
  json_t *root = json_object();
  json_object_set_new(root, "kind", json_string("memprof"));
  json_object_set_new(root, "source",
                      json_bytes(in->source, strlen(in->source)));
  json_meta(root, in->sym);
  json_add_origins(root, in->origins, PROFILE_MEMORY);
  json_object_set_new(root, "totals", json_stats(json_object(), &in->agg->totals));
  add_by_label(root, in, opt->leak_only);
  json_object_set_new(root, "locations", json_locations(in, opt));
  json_object_set_new(root, "heap_over_time",
                      json_heapline(&in->agg->heap, in->sym));
  json_add_error(root, in->reader);
  return json_write(root, out);
}
