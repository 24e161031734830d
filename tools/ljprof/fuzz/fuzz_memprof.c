/*
** libFuzzer target: a whole profile file through the reader library, as
** `ljprof report` runs it: decode, aggregate, render text and JSON.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/memagg.h"
#include "lib/report.h"
#include "lib/stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FILE *devnull;
  if (!devnull && !(devnull = fopen("/dev/null", "w"))) return 0;

  struct reader r;
  struct symbols sym;
  struct memagg agg;
  reader_init_mem(&r, data, size);
  symbols_init(&sym);
  memagg_init(&agg, &sym);
  struct stream_sinks sinks = {.memprof = {memagg_events, &agg}};
  if (stream_read(&r, &sym, &sinks) == STREAM_MEMPROF) {
    memagg_finish(&agg);
    struct report_input in = {"fuzz", &sym, &agg, &r};
    struct report_options opt = {REPORT_TEXT, ORDER_BYTES, 0, 1, 0};
    report_memprof(devnull, &in, &opt);
    opt.format = REPORT_JSON;
    opt.top = 3;
    report_memprof(devnull, &in, &opt);
  }
  memagg_free(&agg);
  symbols_free(&sym);
  reader_free(&r);
  return 0;
}
