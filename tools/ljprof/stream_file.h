/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** A profile file read whole: its stream decoded and aggregated, ready for
** any renderer. What `report`, `record` and the `-t` tools share.
*/
#ifndef LJPROF_STREAM_FILE_H
#define LJPROF_STREAM_FILE_H

#include "lib/aggregate/labels.h"
#include "lib/aggregate/memagg.h"
#include "lib/shared/reader.h"
#include "lib/decode/stream.h"
#include "lib/shared/symbols.h"
#include "lib/aggregate/sysagg.h"

struct stream_file {
  enum stream_kind kind;
  struct reader reader; /* its status says whether, and where, it is damaged */
  struct symbols sym;
  struct memagg memagg; /* finished and packed for a memprof stream */
  struct sysagg sysagg;
};

/* Read fd up to its end or its damage. The aggregations point into f:
** it must stay where it is until stream_file_free(). */
void stream_file_read(struct stream_file *f, int fd);
void stream_file_free(struct stream_file *f);

/* For a stream read on a thread of a merge's (stream_jobs.h): no second
** thread of its own. */
struct decode_limits {
  int one_thread;
};

/* What stream_file_read() does, into parts the caller keeps (those of
** several streams, stream_set.h): read fd with r (reader_free() it),
** decode into sym, aggregate into memagg or sysagg (sysprof's own
** figures into *meta), finish the aggregation (a memagg is left for
** memagg_merge() or memagg_pack()); with a filter (NULL: none), only what
** it keeps (labels.h); within limits (NULL: none). Returns the kind. */
enum stream_kind stream_decode(int fd, struct reader *r, struct symbols *sym,
                               struct memagg *memagg, struct sysagg *sysagg,
                               struct sysprof_meta *meta,
                               struct labelfilter *filter,
                               const struct decode_limits *limits);

#endif
