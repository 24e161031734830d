/*
** Collapsed stacks, the input of flamegraph.pl: one line per distinct
** stack, frames outermost first joined by ';', a space, the sample count,
** most samples first. Names are given in full, a newline inside one (the
** source text of load(string) as a chunk name) written as the two
** characters '\n', so that every stack stays on one line.
*/
#include <inttypes.h>
#include <stdlib.h>

#include "report.h"

static void put_frame(const struct symbols *sym, uint32_t loc,
                      struct sbuf *name, FILE *out) {
  sbuf_reset(name);
  symbols_format(sym, loc, NULL, name);
  for (size_t i = 0; i < name->len; i++) {
    if (name->data[i] == '\n')
      fputs("\\n", out);
    else
      fputc(name->data[i], out);
  }
}

int report_sysprof_collapsed(FILE *out, const struct sysprof_report_input *in) {
  const struct sysagg *agg = in->agg;
  struct sbuf name = {0};
  uint32_t *order = sysagg_rank_stacks(agg);
  for (size_t i = 0; i < agg->nstacks; i++) {
    const struct sysagg_stack *st = &agg->stacks[order[i]];
    for (size_t f = st->depth; f-- > 0;) {
      put_frame(in->sym, agg->frame_ids[st->first + f], &name, out);
      if (f) fputc(';', out);
    }
    fprintf(out, " %" PRIu64 "\n", st->count);
  }
  free(order);
  sbuf_free(&name);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
