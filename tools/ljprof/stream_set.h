/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Profile files of one kind read into one aggregation: the workers of a
** server, the windows of rotate=, one service on several hosts. The
** streams are read one after the other into one symbol table (each
** stream's own addresses and trace numbers forgotten before the next, so
** frames merge by what they name) and one aggregation that keeps, for
** each sample, the stream it came from (origins.h). Memory grows with
** what is distinct, never with the sum of the streams. Memory streams
** are read on several threads (stream_jobs.h) and added in order, as if
** read one after the other: the same aggregation.
*/
#ifndef LJPROF_STREAM_SET_H
#define LJPROF_STREAM_SET_H

#include <stddef.h>

#include "lib/aggregate/labels.h"
#include "lib/aggregate/memagg.h"
#include "lib/aggregate/origins.h"
#include "lib/aggregate/profile.h"
#include "lib/aggregate/sysagg.h"
#include "lib/decode/stream.h"
#include "lib/shared/reader.h"
#include "lib/shared/symbols.h"

struct stream_set {
  enum stream_kind kind; /* of them all */
  const char *source;    /* their names, for the reports' titles */
  struct symbols sym;
  struct memagg memagg; /* finished, for memprof streams */
  struct sysagg sysagg; /* finished, for sysprof streams */
  struct memprof_meta memprof; /* what memprof streams say, merged */
  struct origins origins; /* one per file, in the order given */
  size_t opened; /* files that could be opened */
  /* The first damaged stream's reader (its error), or one at READER_OK. */
  struct reader damage;
  struct sbuf joined; /* source, when it joins several names */
  struct labelfilter filter; /* what is kept (no terms: everything) */
};

/*
** Read the files names[0 .. n) ("-": stdin) to their ends or their
** damage, keeping only the samples and events that carry every label
** term of terms[0 .. nterms) (labels.h; none: all). Returns EXIT_OK; EXIT_FAILED when one cannot be opened or is
** damaged (what was read is kept: report it); EXIT_USAGE when they do
** not merge (kinds, intervals, modes; nothing to report) or LJPROF_JOBS
** is bad. Each problem is said on stderr, naming its file.
** stream_set_free() in every case.
*/
int stream_set_read(struct stream_set *set, const char *const *names,
                    size_t n, const struct labelterm *terms, size_t nterms);
void stream_set_free(struct stream_set *set);

/* The profile of a set read (profile_from_sysprof(), _memprof()), its
** samples keeping their streams; profile_free() it first. */
void stream_set_profile(struct profile *p, const struct stream_set *set,
                        int leak_only, enum memagg_order count);

#endif
