/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Renderers of memprof and sysprof aggregations. Each reads a finished
** aggregation and its resolver and writes one document; none changes what
** it reads, except the alias numbering a text report assigns as it names
** locations.
*/
#ifndef LJPROF_REPORT_H
#define LJPROF_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "aggregate/labels.h"
#include "aggregate/memagg.h"
#include "aggregate/profile.h"
#include "shared/reader.h"
#include "shared/symbols.h"
#include "aggregate/sysagg.h"

enum report_format {
  REPORT_TEXT,
  REPORT_JSON,
  /* The profile formats of other tools, for both kinds of stream: */
  REPORT_COLLAPSED,  /* one line per stack (flamegraph.pl) */
  REPORT_PPROF,      /* gzip'd profile.proto (go tool pprof) */
  REPORT_SPEEDSCOPE, /* speedscope's JSON file format */
  REPORT_HTML        /* a self-contained page with a flame graph */
};

struct report_options {
  enum report_format format;
  enum memagg_order order; /* memprof */
  int leak_only; /* memprof: only what is still allocated at the end */
  int human;     /* memprof: sizes in B, KiB, MiB, GiB (text) */
  size_t top;    /* at most this many locations per section; 0: all */
  enum memagg_order count; /* memprof profile formats: bytes or blocks */
  int jit; /* sysprof: the JIT's story (report_jit_*) */
  int root_origin; /* collapsed: each stack under its stream's frame */
  /* Labels (docs/ljprof.md, "Labels"): keep what carries every term
  ** (--label); split a text report by a key's values (--by); a profile
  ** format's stacks under their key's value (--label-frames). Bytes,
  ** unescaped; by and frames NULL: none. */
  const struct labelterm *labels;
  size_t nlabels;
  const char *by, *label_frames;
  size_t by_len, label_frames_len;
};

struct report_input {
  const char *source; /* the stream's name, as the user gave it */
  const struct symbols *sym;
  const struct memagg *agg;
  const struct reader *reader; /* its error, if any, is reported */
  const struct origins *origins; /* the streams merged; NULL: one */
};

/* Both return 0, or -1 if writing failed. */
int report_memprof_text(FILE *out, const struct report_input *in,
                        const struct report_options *opt);
int report_memprof_json(FILE *out, const struct report_input *in,
                        const struct report_options *opt);

/* The shape of the reference's parser (`luajit -tm`); options leak_only
** and human. */
int report_memprof_reference(FILE *out, const struct report_input *in,
                             const struct report_options *opt);

static inline int report_memprof(FILE *out, const struct report_input *in,
                                 const struct report_options *opt) {
  return opt->format == REPORT_JSON ? report_memprof_json(out, in, opt)
                                    : report_memprof_text(out, in, opt);
}

struct sysprof_report_input {
  const char *source;
  const struct symbols *sym;
  const struct sysagg *agg;
  const struct reader *reader;
  const struct origins *origins; /* the streams merged; NULL: one */
};

int report_sysprof_text(FILE *out, const struct sysprof_report_input *in,
                        const struct report_options *opt);
int report_sysprof_json(FILE *out, const struct sysprof_report_input *in,
                        const struct report_options *opt);
static inline int report_sysprof(FILE *out,
                                 const struct sysprof_report_input *in,
                                 const struct report_options *opt) {
  return opt->format == REPORT_JSON ? report_sysprof_json(out, in, opt)
                                    : report_sysprof_text(out, in, opt);
}

/*
** The JIT's story (jitagg.h): where time went by kind, compiler time by
** trace start and outcome, interpreted lines with the reasons the
** compiler gave there, hot exits, flushes. report_jit_says() writes the
** text report's short summary when the compiler or the interpreter took
** much of the time (nothing otherwise).
*/
int report_jit_text(FILE *out, const struct sysprof_report_input *in,
                    const struct report_options *opt);
int report_jit_json(FILE *out, const struct sysprof_report_input *in,
                    const struct report_options *opt);
void report_jit_says(FILE *out, const struct sysprof_report_input *in);

/*
** The table by label of a text report (render/labels_text.c), appended to
** sb: title, then `KEY=VALUE: VALUE (SHARE%)` and a tab before the top
** stack, as the callbacks write them; nothing when the table is empty.
*/
struct labels_text {
  const char *title;
  void (*value)(struct sbuf *sb, uint64_t value, void *ud);
  void (*stack)(struct sbuf *sb, size_t item, void *ud);
  void *ud;
};
void report_labels_text(struct sbuf *sb, const struct symbols *sym,
                        const struct labeltable *t,
                        const struct labels_text *how);

/* `Only what carries: KEY=VALUE, no KEY` of --label; nothing without. */
void report_labels_kept(struct sbuf *sb, const struct report_options *opt);

/* The profile formats; each returns 0, or -1 if writing failed. */
int report_collapsed(FILE *out, const struct profile *p);
int report_pprof(FILE *out, const struct profile *p);
int report_speedscope(FILE *out, const struct profile *p);
int report_html(FILE *out, const struct profile *p);

static inline int report_is_profile_format(enum report_format format) {
  return format >= REPORT_COLLAPSED;
}

static inline int report_profile(FILE *out, const struct profile *p,
                                 enum report_format format) {
  switch (format) {
  case REPORT_PPROF:
    return report_pprof(out, p);
  case REPORT_SPEEDSCOPE:
    return report_speedscope(out, p);
  case REPORT_HTML:
    return report_html(out, p);
  default:
    return report_collapsed(out, p);
  }
}

#endif
