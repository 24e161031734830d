/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "stream_file.h"

#include <sys/stat.h>

#include "lib/aggregate/event_pipe.h"

/* Read a slice at a time small enough to be decoded from the core's own
** cache (with 1 MiB, two threads reading at once evicted each other's). */
#define READ_BUFFER_SIZE (128u << 10)

/* Inputs from this size on are aggregated on a second thread. */
#define PIPE_MIN_INPUT (4u << 20)

/*
** Is the input long enough for a second thread to pay (or of unknown
** length: a pipe)? Short ones are read on one thread, without the cost of
** starting another.
*/
static int worth_a_thread(int fd) {
  struct stat st;
  return fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
         st.st_size >= PIPE_MIN_INPUT;
}

enum stream_kind stream_decode(int fd, struct reader *r, struct symbols *sym,
                               struct memagg *memagg, struct sysagg *sysagg,
                               struct sysprof_meta *meta,
                               struct labelfilter *filter,
                               const struct decode_limits *limits) {
  static const struct decode_limits none = {0};
  if (!limits) limits = &none;
  reader_init_fd(r, fd, READ_BUFFER_SIZE);
  /* On two threads, one decodes and names, the other aggregates. */
  struct memprof_sink aggregate = {.events = memagg_events, .ud = memagg};
  struct event_pipe *pipe = !limits->one_thread && worth_a_thread(fd)
                                ? event_pipe_start(&aggregate)
                                : NULL;
  struct stream_sinks sinks = {
      .memprof = pipe ? event_pipe_sink(pipe) : aggregate,
      .sysprof = {sysagg_sample, sysagg_jit, sysagg, meta,
                  sysagg_label_count}};
  /* A filter's gate before the aggregations (on the decoder's thread). */
  struct labelgate gate;
  if (filter) {
    labelgate_init(&gate, filter, &sinks.memprof, &sinks.sysprof);
    sinks.memprof = labelgate_memprof(&gate);
    sinks.sysprof = labelgate_sysprof(&gate);
  }
  enum stream_kind kind = stream_read(r, sym, &sinks);
  if (filter) labelgate_free(&gate);
  if (pipe) event_pipe_finish(pipe);
  if (kind == STREAM_MEMPROF) memagg_finish(memagg);
  if (kind == STREAM_SYSPROF) sysagg_finish(sysagg);
  return kind;
}

void stream_file_read(struct stream_file *f, int fd) {
  symbols_init(&f->sym);
  memagg_init(&f->memagg, &f->sym);
  sysagg_init(&f->sysagg, &f->sym);
  f->kind = stream_decode(fd, &f->reader, &f->sym, &f->memagg, &f->sysagg,
                          &f->sysagg.meta, NULL, NULL);
  if (f->kind == STREAM_MEMPROF) memagg_pack(&f->memagg);
}

void stream_file_free(struct stream_file *f) {
  sysagg_free(&f->sysagg);
  memagg_free(&f->memagg);
  symbols_free(&f->sym);
  reader_free(&f->reader);
}
