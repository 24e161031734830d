/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Sysprof text report: what was asked and what was achieved, samples by
** VM state, what the JIT says when the compiler or the interpreter took
** much of the time, of several streams merged their samples by process,
** of a stream with labels its samples by label,
** then the Lua lines (each with the C it calls) and
** the functions by self and by total samples, and ALIASES for chunk
** names that span lines.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "shared/srcname.h"

struct text {
  FILE *out;
  const struct sysprof_report_input *in;
  const struct report_options *opt;
  struct aliases aliases;
  struct srcnames srcnames;
  struct sbuf name;
};

static const char *loc_name(struct text *t, uint32_t loc, int function) {
  sbuf_reset(&t->name);
  if (function)
    srcnames_format_function(&t->srcnames, t->in->sym, loc, &t->aliases,
                             &t->name);
  else
    symbols_format(t->in->sym, loc, &t->aliases, &t->name);
  return sbuf_cstr(&t->name);
}

static double percent(uint64_t part, uint64_t total) {
  return total ? 100.0 * (double)part / (double)total : 0.0;
}

static void put_stream(struct text *t) {
  static const char *const modes[] = {"D (VM states only)", "L (leaf)",
                                      "C (call graph)"};
  static const char *const clocks[] = {
      "thread CPU time (timer)", "monotonic",
      "thread CPU time (perf cpu-clock event)"};
  const struct sysprof_meta *m = &t->in->agg->meta;
  fprintf(t->out, "Stream: sysprof v%u", m->version);
  if (m->has_config)
    fprintf(t->out, ", mode %s, interval %g ms asked, clock: %s",
            modes[m->mode], (double)m->interval_us / 1000.0, clocks[m->clock]);
  else
    fprintf(t->out, " (no mode, interval or clock recorded)");
  fprintf(t->out, "\n");
}

static void put_samples(struct text *t) {
  const struct sysagg *agg = t->in->agg;
  const struct sysprof_meta *m = &agg->meta;
  fprintf(t->out, "Samples: %" PRIu64, sysagg_samples(agg));
  if (m->has_stats)
    fprintf(t->out,
            " in %.3f s (%" PRIu64 " dropped, %" PRIu64
            " timer overruns), %" PRIu64 " with stacks\n",
            (double)m->elapsed_ns / 1e9, m->dropped, m->overruns,
            agg->samples);
  else
    fprintf(t->out, " (no statistics recorded)\n");
  if (agg->line_unknown)
    fprintf(t->out,
            "Line unknown: %" PRIu64 " samples (%.1f%%) have a Lua frame whose "
            "line the VM could not tell, shown as (line ?)\n",
            agg->line_unknown, 100.0 * (double)agg->line_unknown /
                                   (double)(agg->samples ? agg->samples : 1));
  double achieved, asked;
  if (!sysagg_rate(agg, &achieved, &asked)) return;
  fprintf(t->out, "Rate: %.1f samples/s achieved, %.1f asked", achieved,
          asked);
  if (achieved < asked * SYSAGG_RATE_TOLERANCE)
    fprintf(t->out,
            ": LOWER than asked (%.0f%% of it; the timer fired less "
            "often than the interval)",
            100.0 * achieved / asked);
  fprintf(t->out, "\n");
}

static void put_kept(struct text *t) {
  sbuf_reset(&t->name);
  report_labels_kept(&t->name, t->opt);
  if (t->name.len) fwrite(t->name.data, 1, t->name.len, t->out);
}

static void put_vmstates(struct text *t) {
  const struct sysagg *agg = t->in->agg;
  uint64_t total = sysagg_samples(agg);
  fprintf(t->out, "SAMPLES BY VM STATE\n");
  for (unsigned s = 0; s < VMSTATE_COUNT; s++) {
    uint64_t n = sysagg_vmstate_samples(agg, s);
    fprintf(t->out, "%s: %" PRIu64 " (%.1f%%)\n", sysprof_vmstate_name(s), n,
            percent(n, total));
  }
  fprintf(t->out, "\n");
}

static void put_processes(struct text *t) {
  const struct origins *o = t->in->origins;
  if (!origins_merged(o)) return;
  size_t n;
  struct origin_group total;
  struct origin_group *rows = origins_by_process(o, &n, &total);
  fprintf(t->out, "SAMPLES BY PROCESS\n");
  for (size_t i = 0; i < n; i++) {
    sbuf_reset(&t->name);
    origin_group_name(o, &rows[i], &t->name);
    fprintf(t->out, "%s: %" PRIu64 " (%.1f%%)\n", sbuf_cstr(&t->name),
            rows[i].value, percent(rows[i].value, total.value));
  }
  fprintf(t->out, "\n");
  free(rows);
}

/* The top stacks' frames shown, innermost first. */
#define LABEL_STACK_FRAMES 12

static void put_count(struct sbuf *sb, uint64_t n, void *ud) {
  (void)ud;
  sbuf_u64(sb, n);
}

static void put_top_stack(struct sbuf *sb, size_t item, void *ud) {
  struct text *t = ud;
  const struct sysagg *agg = t->in->agg;
  const struct sysagg_stack *st = &agg->stacks[item];
  for (uint32_t i = 0; i < st->depth && i < LABEL_STACK_FRAMES; i++) {
    if (i) sbuf_add(sb, " <- ", 4);
    symbols_format(t->in->sym, agg->frames[st->first + i].loc, &t->aliases,
                   sb);
  }
  if (st->depth > LABEL_STACK_FRAMES) sbuf_add(sb, " <- ...", 7);
}

static void put_labels(struct text *t) {
  struct labeltable table;
  struct sbuf sb = {0};
  struct labels_text how = {"SAMPLES BY LABEL", put_count, put_top_stack, t};
  labeltable_cpu(&table, t->in->agg, SYMBOLS_NONE);
  report_labels_text(&sb, t->in->sym, &table, &how);
  if (sb.len) fwrite(sb.data, 1, sb.len, t->out);
  sbuf_free(&sb);
  labeltable_free(&table);
}

/* A count and its share of total, formatted by hand: a ranking has a line
** per location, and fprintf() of its two shares took four fifths of the
** report's time. */
static void put_counted(struct sbuf *sb, uint64_t n, const char *what,
                        uint64_t total) {
  sbuf_u64(sb, n);
  sbuf_add(sb, what, strlen(what));
  sbuf_tenths(sb, percent(n, total));
  sbuf_add(sb, "%)", 2);
}

static void put_ranking(struct text *t, const char *title,
                        const struct sysagg_table *table, enum sysagg_key key,
                        int functions) {
  uint64_t total = t->in->agg->samples;
  size_t count;
  uint32_t *ids = sysagg_rank(table, key, &count);
  size_t shown = t->opt->top && t->opt->top < count ? t->opt->top : count;
  fprintf(t->out, "%s\n", title);
  for (size_t i = 0; i < shown; i++) {
    const struct sysagg_counts *c = sysagg_counts(table, ids[i]);
    loc_name(t, ids[i], functions);
    sbuf_add(&t->name, ": ", 2);
    put_counted(&t->name, c->self, " self (", total);
    sbuf_add(&t->name, ", ", 2);
    put_counted(&t->name, c->total, " total (", total);
    sbuf_add(&t->name, "\n", 1);
    fwrite(t->name.data, 1, t->name.len, t->out);
  }
  if (count == 0)
    fprintf(t->out, "(none)\n");
  else if (shown < count)
    fprintf(t->out, "... %zu more\n", count - shown);
  fprintf(t->out, "\n");
  free(ids);
}

static void put_aliases(struct text *t) {
  if (t->aliases.count == 0) return;
  fprintf(t->out, "ALIASES\n");
  for (size_t i = 0; i < t->aliases.count; i++) {
    const struct symstring *s = &t->in->sym->strings[t->aliases.strings[i]];
    fprintf(t->out, "CHUNK %zu: ", i + 1);
    fwrite(s->data, 1, s->len, t->out);
    fprintf(t->out, "\n");
  }
}

int report_sysprof_text(FILE *out, const struct sysprof_report_input *in,
                        const struct report_options *opt) {
  struct text t = {out, in, opt, {0}, {0}, {0}};
  fprintf(out, "SYSPROF REPORT: %s\n", in->source);
  if (in->reader->status != READER_OK)
    fprintf(out, "WARNING: damaged stream, this report covers what came "
                 "before the damage: %s\n",
            in->reader->err_msg);
  put_stream(&t);
  put_samples(&t);
  put_kept(&t);
  fprintf(out, "\n");
  put_processes(&t);
  put_vmstates(&t);
  put_labels(&t);
  report_jit_says(out, in);
  put_ranking(&t, "LINES BY SELF", &in->agg->lines, KEY_SELF, 0);
  put_ranking(&t, "LINES BY TOTAL", &in->agg->lines, KEY_TOTAL, 0);
  put_ranking(&t, "FUNCTIONS BY SELF", &in->agg->funcs, KEY_SELF, 1);
  put_ranking(&t, "FUNCTIONS BY TOTAL", &in->agg->funcs, KEY_TOTAL, 1);
  put_aliases(&t);
  aliases_free(&t.aliases);
  srcnames_free(&t.srcnames);
  sbuf_free(&t.name);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
