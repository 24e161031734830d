/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Collapsed stacks, the input of flamegraph.pl: one line per stack, frames
** outermost first joined by ';', a space, the shown value (CPU: samples;
** memory: the allocation site alone, with its bytes or blocks), most first;
** stacks whose value is 0 (sites that hold nothing at the end, with
** --leak-only) are left out.
** Names are given in full, on one line (profile_frame_name()). Streams
** merged, with root_origin: under a root frame naming the process each
** came from, `[pid PID on HOST]`, or for a stream that does not say,
** `[stream FILE]`.
*/
#include <inttypes.h>

#include "report.h"

int report_collapsed(FILE *out, const struct profile *p) {
  struct sbuf line = {0};
  for (size_t s = 0; s < p->nstacks; s++) {
    const struct profile_stack *st = &p->stacks[s];
    if (!st->values[p->shown]) continue;
    sbuf_reset(&line);
    int root = p->root_origin && origins_merged(p->origins);
    if (root) {
      const struct origin *o = &p->origins->items[st->stream];
      sbuf_add(&line, "[", 1);
      if (!origin_process(o, &line)) sbuf_printf(&line, "stream %s", o->name);
      sbuf_add(&line, "]", 1);
    }
    for (size_t f = 0; f < st->depth; f++) {
      if (f || root) sbuf_add(&line, ";", 1);
      profile_frame_name(p, profile_frame_from_root(p, st, f), &line);
    }
    fwrite(line.data, 1, line.len, out);
    fprintf(out, " %" PRIu64 "\n", st->values[p->shown]);
  }
  sbuf_free(&line);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
