/*
** Renderers of memprof and sysprof aggregations. Each reads a finished
** aggregation and its resolver and writes one document; none changes what
** it reads, except the alias numbering a text report assigns as it names
** locations.
*/
#ifndef LJPROF_REPORT_H
#define LJPROF_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "memagg.h"
#include "reader.h"
#include "symbols.h"
#include "sysagg.h"

enum report_format {
  REPORT_TEXT,
  REPORT_JSON,
  REPORT_COLLAPSED /* sysprof only: one line per stack (flamegraph.pl) */
};

struct report_options {
  enum report_format format;
  enum memagg_order order; /* memprof */
  int leak_only; /* memprof: only what is still allocated at the end */
  int human;     /* memprof: sizes in B, KiB, MiB, GiB (text) */
  size_t top;    /* at most this many locations per section; 0: all */
};

struct report_input {
  const char *source; /* the stream's name, as the user gave it */
  const struct symbols *sym;
  const struct memagg *agg;
  const struct reader *reader; /* its error, if any, is reported */
};

/* Both return 0, or -1 if writing failed. */
int report_memprof_text(FILE *out, const struct report_input *in,
                        const struct report_options *opt);
int report_memprof_json(FILE *out, const struct report_input *in,
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
};

int report_sysprof_text(FILE *out, const struct sysprof_report_input *in,
                        const struct report_options *opt);
int report_sysprof_json(FILE *out, const struct sysprof_report_input *in,
                        const struct report_options *opt);
int report_sysprof_collapsed(FILE *out, const struct sysprof_report_input *in);

static inline int report_sysprof(FILE *out,
                                 const struct sysprof_report_input *in,
                                 const struct report_options *opt) {
  switch (opt->format) {
  case REPORT_JSON:
    return report_sysprof_json(out, in, opt);
  case REPORT_COLLAPSED:
    return report_sysprof_collapsed(out, in);
  default:
    return report_sysprof_text(out, in, opt);
  }
}

#endif
