/*
** Text report, in the shape users of the reference know: sections of
** locations with their events and bytes, the allocation sites each
** reallocation or free touched ("Overrides"), what each site still holds
** (HEAP SUMMARY), and ALIASES for chunk names that span lines.
*/
#include <inttypes.h>
#include <stdlib.h>

#include "report.h"

struct text {
  FILE *out;
  const struct report_input *in;
  const struct report_options *opt;
  struct aliases aliases;
  struct sbuf name;
};

static const char *loc_name(struct text *t, uint32_t loc) {
  sbuf_reset(&t->name);
  symbols_format(t->in->sym, loc, &t->aliases, &t->name);
  return sbuf_cstr(&t->name);
}

static void put_size(struct text *t, uint64_t bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB",
                                      "EiB"};
  if (!t->opt->human) {
    fprintf(t->out, "%" PRIu64 " bytes", bytes);
    return;
  }
  if (bytes < 1024) {
    fprintf(t->out, "%" PRIu64 " B", bytes);
    return;
  }
  double value = (double)bytes;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < sizeof units / sizeof *units) {
    value /= 1024;
    unit++;
  }
  fprintf(t->out, "%.1f %s", value, units[unit]);
}

static void put_share(struct text *t, uint64_t part, uint64_t total) {
  if (total > 0) fprintf(t->out, " (%.1f%%)", 100.0 * (double)part / (double)total);
}

static void put_plural(struct text *t, uint64_t n, const char *one,
                       const char *many) {
  fprintf(t->out, "%" PRIu64 " %s", n, n == 1 ? one : many);
}

static void put_totals(struct text *t) {
  const struct memstats *s = &t->in->agg->totals;
  fprintf(t->out, "Totals: ");
  put_plural(t, s->alloc_events, "allocation", "allocations");
  fprintf(t->out, " (");
  put_size(t, s->alloc_bytes);
  fprintf(t->out, "), ");
  put_plural(t, s->realloc_events, "reallocation", "reallocations");
  fprintf(t->out, " (+");
  put_size(t, s->realloc_new_bytes);
  fprintf(t->out, " / -");
  put_size(t, s->realloc_old_bytes);
  fprintf(t->out, "), ");
  put_plural(t, s->free_events, "free", "frees");
  fprintf(t->out, " (");
  put_size(t, s->freed_bytes);
  fprintf(t->out, "); live at the end: ");
  put_size(t, s->live_bytes);
  fprintf(t->out, " in ");
  put_plural(t, s->live_blocks, "block", "blocks");
  fprintf(t->out, "\n");
}

static void put_overrides(struct text *t, const struct overrides *o,
                          uint32_t site) {
  size_t n;
  const struct override *ov = memagg_overrides(o, site, &n);
  if (n == 0) return;
  fprintf(t->out, "\tOverrides:\n");
  for (size_t i = 0; i < n; i++) {
    fprintf(t->out, "\t\t%s: ", loc_name(t, ov[i].owner));
    put_plural(t, ov[i].events, "event", "events");
    fprintf(t->out, ", ");
    put_size(t, ov[i].bytes);
    fprintf(t->out, "\n");
  }
}

/* The columns of an event section: events, bytes added, bytes removed. */
static void section_columns(const struct memstats *st, enum memagg_view view,
                            uint64_t col[3]) {
  uint64_t events, bytes;
  memagg_view(st, view, &events, &bytes);
  col[0] = events;
  col[1] = view == VIEW_FREE ? 0 : bytes;
  col[2] = view == VIEW_ALLOC   ? 0
           : view == VIEW_FREE  ? st->freed_bytes
                                : st->realloc_old_bytes;
}

/* How many of count ranked locations a section shows (--top). */
static size_t limit(struct text *t, size_t count) {
  return t->opt->top && t->opt->top < count ? t->opt->top : count;
}

static void put_more(struct text *t, size_t shown, size_t count) {
  if (count == 0)
    fprintf(t->out, "(none)\n");
  else if (shown < count)
    fprintf(t->out, "... %zu more location%s\n", count - shown,
            count - shown == 1 ? "" : "s");
}

static void put_event_section(struct text *t, const char *title,
                              enum memagg_view view,
                              const struct overrides *o) {
  const struct memagg *agg = t->in->agg;
  size_t count;
  uint32_t *ids = memagg_rank(agg, view, t->opt->order, &count);
  uint64_t total[3];
  section_columns(&agg->totals, view, total);
  fprintf(t->out, "%s\n", title);
  size_t shown = limit(t, count);
  for (size_t i = 0; i < shown; i++) {
    uint64_t col[3];
    section_columns(memagg_stats(agg, ids[i]), view, col);
    fprintf(t->out, "%s: ", loc_name(t, ids[i]));
    put_plural(t, col[0], "event", "events");
    put_share(t, col[0], total[0]);
    fprintf(t->out, "  Allocated: ");
    put_size(t, col[1]);
    put_share(t, col[1], total[1]);
    fprintf(t->out, "  Freed: ");
    put_size(t, col[2]);
    put_share(t, col[2], total[2]);
    fprintf(t->out, "\n");
    if (o) put_overrides(t, o, ids[i]);
  }
  put_more(t, shown, count);
  fprintf(t->out, "\n");
  free(ids);
}

static void put_heap_summary(struct text *t) {
  const struct memagg *agg = t->in->agg;
  size_t count;
  uint32_t *ids = memagg_rank(agg, VIEW_LIVE, t->opt->order, &count);
  fprintf(t->out, "HEAP SUMMARY\n");
  size_t shown = limit(t, count);
  for (size_t i = 0; i < shown; i++) {
    const struct memstats *st = memagg_stats(agg, ids[i]);
    fprintf(t->out, "%s holds ", loc_name(t, ids[i]));
    put_size(t, st->live_bytes);
    put_share(t, st->live_bytes, agg->totals.live_bytes);
    fprintf(t->out, " in ");
    put_plural(t, st->live_blocks, "block", "blocks");
    fprintf(t->out, ": ");
    put_plural(t, st->alloc_events, "alloc", "allocs");
    fprintf(t->out, ", ");
    put_plural(t, st->owned_frees, "free", "frees");
    fprintf(t->out, "\n");
  }
  put_more(t, shown, count);
  free(ids);
}

static void put_aliases(struct text *t) {
  if (t->aliases.count == 0) return;
  fprintf(t->out, "\nALIASES\n");
  for (size_t i = 0; i < t->aliases.count; i++) {
    const struct symstring *s = &t->in->sym->strings[t->aliases.strings[i]];
    fprintf(t->out, "CHUNK %zu: ", i + 1);
    fwrite(s->data, 1, s->len, t->out);
    fprintf(t->out, "\n");
  }
}

int report_memprof_text(FILE *out, const struct report_input *in,
                        const struct report_options *opt) {
  struct text t = {out, in, opt, {0}, {0}};
  if (!opt->leak_only) {
    fprintf(out, "MEMPROF REPORT: %s\n", in->source);
    if (in->reader->status != READER_OK)
      fprintf(out, "WARNING: damaged stream, this report covers what came "
                   "before the damage: %s\n",
              in->reader->err_msg);
    put_totals(&t);
    fprintf(out, "\n");
    put_event_section(&t, "ALLOCATIONS", VIEW_ALLOC, NULL);
    put_event_section(&t, "REALLOCATIONS", VIEW_REALLOC,
                      &in->agg->realloc_overrides);
    put_event_section(&t, "DEALLOCATIONS", VIEW_FREE, &in->agg->free_overrides);
  }
  put_heap_summary(&t);
  put_aliases(&t);
  aliases_free(&t.aliases);
  sbuf_free(&t.name);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
