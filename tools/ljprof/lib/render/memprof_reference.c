/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Memprof text in the shape of the reference's parser, what `luajit -tm`
** prints there: ALLOCATIONS, REALLOCATIONS and DEALLOCATIONS, a line per
** location with its events and the bytes they added and removed (most
** events first), for reallocations and frees the owners of the memory
** they touched ("Overrides"); HEAP SUMMARY, what each owner still holds
** (most first); ALIASES, the chunk names that span lines, line by line.
** Sizes are "123B", or with --human-readable in B, KiB, MiB or GiB with
** two decimals unless whole ("2KiB", "2.52KiB"). The figures are those of
** the aggregation, as in ljprof's own text report.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

struct ref_text {
  FILE *out;
  const struct report_input *in;
  int human;
  struct aliases aliases;
  struct sbuf name;
};

static void put_name(struct ref_text *t, uint32_t loc) {
  sbuf_reset(&t->name);
  symbols_format(t->in->sym, loc, &t->aliases, &t->name);
  fputs(sbuf_cstr(&t->name), t->out);
}

static void put_size(struct ref_text *t, uint64_t bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
  if (!t->human || bytes < 1024) {
    fprintf(t->out, "%" PRIu64 "B", bytes);
    return;
  }
  size_t unit;
  double value = binary_units(bytes, sizeof units / sizeof *units, &unit);
  int whole = value == (double)(uint64_t)value;
  fprintf(t->out, whole ? "%.0f%s" : "%.2f%s", value, units[unit]);
}

static void put_overrides(struct ref_text *t, const struct overrides *o,
                          uint32_t site) {
  size_t n;
  const struct override *ov = memagg_overrides(o, site, &n);
  if (n == 0) return;
  fputs("\tOverrides:\n", t->out);
  for (size_t i = 0; i < n; i++) {
    fputs("\t\t", t->out);
    put_name(t, ov[i].owner);
    fputc('\n', t->out);
  }
  fputc('\n', t->out);
}

static void put_event_section(struct ref_text *t, const char *title,
                              enum memagg_view view) {
  const struct overrides *o = memagg_view_overrides(t->in->agg, view);
  size_t count;
  uint32_t *ids = memagg_rank(t->in->agg, view, ORDER_EVENTS, &count);
  fprintf(t->out, "%s\n", title);
  for (size_t i = 0; i < count; i++) {
    uint64_t events, added, removed;
    memagg_event_bytes(memagg_stats(t->in->agg, ids[i]), view, &events,
                       &added, &removed);
    put_name(t, ids[i]);
    fprintf(t->out, ": %" PRIu64 " events\t+", events);
    put_size(t, added);
    fputs("\t-", t->out);
    put_size(t, removed);
    fputc('\n', t->out);
    if (o) put_overrides(t, o, ids[i]);
  }
  fputc('\n', t->out);
  free(ids);
}

static void put_heap_summary(struct ref_text *t) {
  size_t count;
  uint32_t *ids = memagg_rank(t->in->agg, VIEW_LIVE, ORDER_BYTES, &count);
  fputs("HEAP SUMMARY:\n", t->out);
  for (size_t i = 0; i < count; i++) {
    const struct memstats *st = memagg_stats(t->in->agg, ids[i]);
    put_name(t, ids[i]);
    fputs(" holds ", t->out);
    put_size(t, st->live_bytes);
    fprintf(t->out, ": %" PRIu64 " allocs, %" PRIu64 " frees\n",
            st->alloc_events, st->owned_frees);
  }
  fputc('\n', t->out);
  free(ids);
}

/* Each alias, then its chunk's text with line numbers. */
static void put_aliases(struct ref_text *t) {
  if (t->aliases.count == 0) return;
  fputs("ALIASES:\n", t->out);
  for (size_t i = 0; i < t->aliases.count; i++) {
    const struct symstring *s = &t->in->sym->strings[t->aliases.strings[i]];
    fprintf(t->out, "CHUNK %zu:\n", i + 1);
    const char *line = s->data, *end = s->data + s->len;
    for (unsigned long n = 1; line < end; n++) {
      const char *eol = memchr(line, '\n', (size_t)(end - line));
      size_t len = eol ? (size_t)(eol - line) : (size_t)(end - line);
      fprintf(t->out, "%lu\t| ", n);
      fwrite(line, 1, len, t->out);
      fputc('\n', t->out);
      line += len + 1;
    }
    fputc('\n', t->out);
  }
}

int report_memprof_reference(FILE *out, const struct report_input *in,
                             const struct report_options *opt) {
  struct ref_text t = {out, in, opt->human, {0}, {0}};
  if (!opt->leak_only) {
    put_event_section(&t, "ALLOCATIONS", VIEW_ALLOC);
    put_event_section(&t, "REALLOCATIONS", VIEW_REALLOC);
    put_event_section(&t, "DEALLOCATIONS", VIEW_FREE);
  }
  put_heap_summary(&t);
  put_aliases(&t);
  aliases_free(&t.aliases);
  sbuf_free(&t.name);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
