/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "stream_file.h"

#include <sys/stat.h>

#include "lib/aggregate/event_pipe.h"

#define READ_BUFFER_SIZE (1u << 20)

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

void stream_file_read(struct stream_file *f, int fd) {
  reader_init_fd(&f->reader, fd, READ_BUFFER_SIZE);
  symbols_init(&f->sym);
  memagg_init(&f->memagg, &f->sym);
  sysagg_init(&f->sysagg, &f->sym);
  /* On two threads, the counters by site are kept on the decoder's: the
  ** other thread's share, the live blocks, is the larger. */
  struct memprof_sink sites = {memagg_count_sites, &f->memagg};
  struct memprof_sink owners = {memagg_count_owners, &f->memagg};
  struct event_pipe *pipe =
      worth_a_thread(fd) ? event_pipe_start(&sites, &owners) : NULL;
  struct stream_sinks sinks = {
      .memprof = pipe ? event_pipe_sink(pipe)
                      : (struct memprof_sink){memagg_events, &f->memagg},
      .sysprof = {sysagg_sample, sysagg_jit, &f->sysagg, &f->sysagg.meta}};
  f->kind = stream_read(&f->reader, &f->sym, &sinks);
  if (pipe) event_pipe_finish(pipe);
  if (f->kind == STREAM_MEMPROF) memagg_finish(&f->memagg);
  if (f->kind == STREAM_SYSPROF) sysagg_finish(&f->sysagg);
}

void stream_file_free(struct stream_file *f) {
  sysagg_free(&f->sysagg);
  memagg_free(&f->memagg);
  symbols_free(&f->sym);
  reader_free(&f->reader);
}
