/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The profiles of a merge read on several threads: each stream decoded
** and aggregated with a resolver and an aggregation of its own (a memory
** profile's live blocks dropped once finished), for stream_set.c to add
** to the merge in the streams' order, as if read there one after the
** other.
*/
#ifndef LJPROF_STREAM_JOBS_H
#define LJPROF_STREAM_JOBS_H

#include <stddef.h>

#include "stream_file.h"

struct stream_job {
  int open_errno; /* 0: opened, and the rest is set */
  enum stream_kind kind;
  struct reader reader; /* its status: whether, and where, it is damaged */
  struct symbols sym;
  struct memagg memagg; /* finished, without its blocks */
  struct sysagg sysagg; /* finished */
  struct sysprof_meta meta;
  int done; /* under the pool's lock */
  int started;
};

struct stream_jobs;

/* The threads to read with: LJPROF_JOBS (1 to 256; *asked set), else
** the processors online. 0, said on stderr, when LJPROF_JOBS is not such a
** number. */
unsigned stream_jobs_threads(int *asked);

/* Do files[0 .. n) weigh enough for threads (unless LJPROF_JOBS asks for
** them)? Each thread's start and resolver cost some milliseconds. */
int stream_jobs_worth(const char *const *files, size_t n);

/* Start reading files[0 .. n) (no "-") on up to `threads` threads;
** NULL when none could be started (read them in order then). */
struct stream_jobs *stream_jobs_start(const char *const *files, size_t n,
                                      unsigned threads);

/* Job i, once read (its parts the caller's to take or leave). */
struct stream_job *stream_jobs_wait(struct stream_jobs *js, size_t i);

/* What job i holds freed, once added: memory holds the jobs under way and
** those read ahead of the one the caller waits for. */
void stream_jobs_release(struct stream_jobs *js, size_t i);

/* Stop taking streams, wait for the threads, free what the jobs hold. */
void stream_jobs_end(struct stream_jobs *js);

#endif
