/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** libFuzzer target: a whole profile file through the reader library, as
** `ljprof report` runs it: decode, aggregate, render every format of the
** stream's kind (and a memprof stream's `-tm` text), and every profile
** format (collapsed, pprof, speedscope, HTML) of it. A memprof stream is also decoded through the event pipe (a
** second thread aggregates), whose text report must be the same. A heap
** snapshot goes through `ljprof heap`: every format, and --diff with
** itself.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/aggregate/event_pipe.h"
#include "lib/render/heapdiff_report.h"
#include "lib/aggregate/memagg.h"
#include "lib/aggregate/profile.h"
#include "lib/render/report.h"
#include "lib/decode/stream.h"
#include "lib/aggregate/sysagg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every profile format; then, under a root frame by the stream's first
** label key (or any), collapsed. */
static void render_profile(FILE *out, struct profile *p, struct symbols *sym) {
  for (enum report_format f = REPORT_COLLAPSED; f <= REPORT_HTML; f++)
    report_profile(out, p, f);
  uint32_t key = sym->labels.nlabels ? sym->labels.labels[0].key
                                     : symbols_intern(sym, "route", 5);
  profile_label_frames(p, sym, key);
  report_pprof(out, p);
  profile_fold_labels(p);
  report_collapsed(out, p);
}

static void render_memprof(FILE *out, struct memagg *agg,
                           struct symbols *sym, const struct reader *r) {
  memagg_finish(agg);
  memagg_pack(agg);
  struct report_input in = {"fuzz", sym, agg, r, NULL};
  struct report_options opt = {REPORT_TEXT, ORDER_BYTES, 0, 1, 0};
  report_memprof(out, &in, &opt);
  report_memprof_reference(out, &in, &opt);
  opt.format = REPORT_JSON;
  opt.top = 3;
  report_memprof(out, &in, &opt);
  struct profile profile;
  profile_from_memprof(&profile, "fuzz", agg, r, 1, ORDER_EVENTS);
  render_profile(out, &profile, sym);
  profile_free(&profile);
}

static void render_sysprof(FILE *out, const struct sysagg *agg,
                           struct symbols *sym, const struct reader *r) {
  struct sysprof_report_input in = {"fuzz", sym, agg, r, NULL};
  struct report_options opt = {REPORT_TEXT, ORDER_BYTES, 0, 0, 0};
  report_sysprof(out, &in, &opt);
  opt.format = REPORT_JSON;
  opt.top = 3;
  report_sysprof(out, &in, &opt);
  struct profile profile;
  profile_from_sysprof(&profile, "fuzz", agg, r);
  render_profile(out, &profile, sym);
  profile_free(&profile);
}

/* The text report of a memprof file, aggregated through the pipe or not. */
static char *memprof_text(const uint8_t *data, size_t size, int piped,
                          size_t *len) {
  struct reader r;
  struct symbols sym;
  struct memagg memagg;
  reader_init_mem(&r, data, size);
  symbols_init(&sym);
  memagg_init(&memagg, &sym);
  struct memprof_sink aggregate = {.events = memagg_events, .ud = &memagg};
  struct event_pipe *pipe = piped ? event_pipe_start(&aggregate) : NULL;
  struct stream_sinks sinks = {.memprof = pipe ? event_pipe_sink(pipe)
                                               : aggregate};
  stream_read(&r, &sym, &sinks);
  if (pipe) event_pipe_finish(pipe);
  memagg_finish(&memagg);
  memagg_pack(&memagg);
  char *text = NULL;
  FILE *out = open_memstream(&text, len);
  if (!out) abort();
  struct report_input in = {"fuzz", &sym, &memagg, &r, NULL};
  struct report_options opt = {REPORT_TEXT, ORDER_BYTES, 0, 0, 0};
  report_memprof(out, &in, &opt);
  fclose(out);
  memagg_free(&memagg);
  symbols_free(&sym);
  reader_free(&r);
  return text;
}

static void check_event_pipe(const uint8_t *data, size_t size) {
  size_t direct_len, piped_len;
  char *direct = memprof_text(data, size, 0, &direct_len);
  char *piped = memprof_text(data, size, 1, &piped_len);
  if (direct_len != piped_len || memcmp(direct, piped, direct_len) != 0) {
    fprintf(stderr, "the event pipe changed the report\n");
    abort();
  }
  free(direct);
  free(piped);
}

static void render_heap(FILE *out, const uint8_t *data, size_t size) {
  struct reader r;
  struct heapsnap snap;
  struct heapgraph graph;
  struct heapdiff diff;
  reader_init_mem(&r, data, size);
  heapsnap_read(&r, &snap);
  heapgraph_build(&graph, &snap);
  struct heapreport_input in = {"fuzz", &graph, &r};
  for (enum heapreport_format f = HEAP_TEXT; f <= HEAP_HEAPSNAPSHOT; f++) {
    struct heapreport_options opt = {f, 1, 3};
    heapreport_write(out, &in, &opt);
  }
  struct heapdiff_input din = {{"old", "new"}, {&r, &r}};
  heapdiff_build(&diff, &graph, &graph, NULL);
  for (enum heapreport_format f = HEAP_TEXT; f <= HEAP_JSON; f++) {
    struct heapreport_options opt = {f, 0, 3};
    heapdiff_write(out, &diff, &din, &opt);
  }
  heapdiff_free(&diff);
  heapgraph_free(&graph);
  heapsnap_free(&snap);
  reader_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FILE *devnull;
  if (!devnull && !(devnull = fopen("/dev/null", "w"))) return 0;
  if (heapsnap_magic(data, size)) {
    render_heap(devnull, data, size);
    return 0;
  }

  struct reader r;
  struct symbols sym;
  struct memagg memagg;
  struct sysagg sysagg;
  reader_init_mem(&r, data, size);
  symbols_init(&sym);
  memagg_init(&memagg, &sym);
  sysagg_init(&sysagg, &sym);
  struct stream_sinks sinks = {
      .memprof = {memagg_events, &memagg},
      .sysprof = {sysagg_sample, sysagg_jit, &sysagg, &sysagg.meta,
                  sysagg_label_count}};
  switch (stream_read(&r, &sym, &sinks)) {
  case STREAM_MEMPROF:
    render_memprof(devnull, &memagg, &sym, &r);
    check_event_pipe(data, size);
    break;
  case STREAM_SYSPROF:
    sysagg_finish(&sysagg);
    render_sysprof(devnull, &sysagg, &sym, &r);
    break;
  case STREAM_UNKNOWN:
  case STREAM_SYMTAB:
    break;
  }
  sysagg_free(&sysagg);
  memagg_free(&memagg);
  symbols_free(&sym);
  reader_free(&r);
  return 0;
}
