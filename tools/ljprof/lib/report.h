/*
** Renderers of memprof aggregations. Each reads a finished memagg and its
** resolver and writes one document; none changes what it reads, except the
** alias numbering a text report assigns as it names locations.
*/
#ifndef LJPROF_REPORT_H
#define LJPROF_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "memagg.h"
#include "reader.h"
#include "symbols.h"

enum report_format { REPORT_TEXT, REPORT_JSON };

struct report_options {
  enum report_format format;
  enum memagg_order order;
  int leak_only; /* only what is still allocated at the end */
  int human;     /* sizes in B, KiB, MiB, GiB (text) */
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

#endif
