/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The JIT's story, as text and JSON: where time went by what ran, the
** compiler's time by trace start with what became of each, interpreted
** lines beside the reasons the compiler gave up there, the hottest exits
** and the flushes. And the few lines the sysprof text report opens with
** when the compiler or the interpreter took much of the time.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "report.h"

/* The samples of one kind of what ran. */
static uint64_t time_of(const struct sysagg *agg, enum sysprof_kind k) {
  uint64_t n = 0;
  for (unsigned s = 0; s < VMSTATE_COUNT; s++)
    if (sysprof_kind_of(s) == k)
      n = add_sat(n, sysagg_vmstate_samples(agg, s));
  return n;
}

static double percent(uint64_t part, uint64_t total) {
  return total ? 100.0 * (double)part / (double)total : 0.0;
}

static const char *const start_kinds[] = {"trace", "side trace",
                                          "stitched trace"};
static const char *const flush_whys[] = {
    "asked by the program (jit.flush(), jit.profile, a base metatable, "
    "a profile's start)",
    "no trace number left (raise -Omaxtrace)",
    "no machine code left (raise -Omaxmcode)"};

/* Shares of the time this large make the summary speak. */
#define SAYS_COMPILER 10.0
#define SAYS_INTERPRETED 25.0

struct jtext {
  FILE *out;
  const struct sysprof_report_input *in;
  const struct jitagg *j;
  uint64_t total;
  struct sbuf name;
};

static const char *name_of(struct jtext *t, uint32_t loc) {
  sbuf_reset(&t->name);
  if (loc == SYMBOLS_NONE)
    sbuf_printf(&t->name, "(not Lua)");
  else
    symbols_format(t->in->sym, loc, NULL, &t->name);
  return sbuf_cstr(&t->name);
}

static void put_reason(struct jtext *t, uint32_t reason) {
  const struct symstring *s = &t->in->sym->strings[reason];
  fwrite(s->data, 1, s->len, t->out);
}

/* Up to max reasons, most given first: `R1 (n), R2 (m)`. */
static void put_reasons(struct jtext *t, const struct jit_reasons *r,
                        size_t max) {
  struct jit_reasons sorted = *r;
  sorted.items = xmalloc((r->n ? r->n : 1) * sizeof *r->items);
  memcpy(sorted.items, r->items, r->n * sizeof *r->items);
  jitagg_sort_reasons(&sorted);
  for (size_t i = 0; i < sorted.n && i < max; i++) {
    fprintf(t->out, "%s", i ? ", " : "");
    put_reason(t, sorted.items[i].reason);
    fprintf(t->out, " (%" PRIu64 ")", sorted.items[i].count);
  }
  if (sorted.n > max) fprintf(t->out, ", ... %zu more", sorted.n - max);
  free(sorted.items);
}

static uint64_t start_samples(const struct jit_start *s) {
  return add_sat(add_sat(s->samples[0], s->samples[1]), s->samples[2]);
}

/* A start's story in one line: what was tried there, what came of it. */
static void put_start(struct jtext *t, const struct jit_start *s) {
  fprintf(t->out, "%s %s: %" PRIu64 " samples (%.1f%%): %" PRIu64
          " attempts, %" PRIu64 " compiled, %" PRIu64 " aborted",
          start_kinds[s->kind < 3 ? s->kind : 0], name_of(t, s->loc),
          start_samples(s), percent(start_samples(s), t->total), s->attempts,
          s->compiled, s->aborted);
  if (s->blacklisted)
    fprintf(t->out, ", BLACKLISTED (%" PRIu64 "x)", s->blacklisted);
  fprintf(t->out, "\n");
  if (s->reasons.n) {
    fprintf(t->out, "    aborts: ");
    put_reasons(t, &s->reasons, 4);
    fprintf(t->out, "\n");
  }
}

/* -- What the JIT says: the summary ------------------------------------- */

/* A start that takes this share of the compiler's time is named. */
#define SAYS_ONE_START 10.0

static void says_compiler(struct jtext *t, uint64_t n) {
  const struct jitagg *j = t->j;
  uint32_t *order = jitagg_rank_starts(j);
  uint64_t by_outcome[3] = {0};
  for (size_t i = 0; i < j->nstarts; i++)
    for (unsigned o = 0; o < 3; o++)
      by_outcome[o] = add_sat(by_outcome[o], j->starts[i].samples[o]);
  fprintf(t->out, "- %.0f%% of the time is the JIT compiler",
          percent(n, t->total));
  if (j->nstarts &&
      percent(start_samples(&j->starts[order[0]]), n) >= SAYS_ONE_START) {
    const struct jit_start *s = &j->starts[order[0]];
    fprintf(t->out, "; most on the %s at %s (%" PRIu64 " attempts, %" PRIu64
            " compiled, %" PRIu64 " aborted%s)",
            start_kinds[s->kind < 3 ? s->kind : 0], name_of(t, s->loc),
            s->attempts, s->compiled, s->aborted,
            s->blacklisted ? ", blacklisted" : "");
    if (s->reasons.n) {
      fprintf(t->out, ": ");
      put_reasons(t, &s->reasons, 1);
    }
  } else if (j->has_events) {
    fprintf(t->out, ", spread over %zu trace starts (%" PRIu64 " traces "
            "started, %" PRIu64 " compiled, %" PRIu64 " aborted)",
            j->nstarts, j->started, j->compiled, j->aborted);
  }
  if (j->has_events)
    fprintf(t->out, "; %.0f%% of it made traces, %.0f%% was lost on aborts",
            percent(by_outcome[OUTCOME_COMPILED], n),
            percent(by_outcome[OUTCOME_ABORTED], n));
  if (j->flushes[LJP_FLUSH_MAXTRACE] || j->flushes[LJP_FLUSH_MAXMCODE])
    fprintf(t->out, "; all traces were flushed %" PRIu64 " times for want "
            "of room (-Omaxtrace, -Omaxmcode)",
            add_sat(j->flushes[LJP_FLUSH_MAXTRACE],
                    j->flushes[LJP_FLUSH_MAXMCODE]));
  fprintf(t->out, ".\n");
  free(order);
}

static void says_interpreted(struct jtext *t, uint64_t n) {
  size_t count;
  uint32_t *lines = jitagg_rank_lines(t->j, &count);
  fprintf(t->out, "- %.0f%% of the time is interpreted",
          percent(n, t->total));
  if (count && t->j->lines[lines[0]].interpreted) {
    const struct jit_line *l = &t->j->lines[lines[0]];
    fprintf(t->out, "; most at %s (%" PRIu64 " samples)",
            name_of(t, lines[0]), l->interpreted);
    const struct jit_reasons *in_func = jitagg_func_reasons(t->j, l->func);
    if (l->reasons.n) {
      fprintf(t->out, ", where the compiler gave up: ");
      put_reasons(t, &l->reasons, 2);
    } else if (in_func) {
      fprintf(t->out, ", in a function whose traces the compiler gave up: ");
      put_reasons(t, in_func, 2);
    }
    if (l->blacklisted) fprintf(t->out, ", blacklisted there");
  }
  fprintf(t->out, ".\n");
  free(lines);
}

static void put_says(struct jtext *t) {
  const struct sysagg *agg = t->in->agg;
  uint64_t jit = time_of(agg, KIND_JIT), interp = time_of(agg,
                                                          KIND_INTERPRETED);
  int compiler = percent(jit, t->total) >= SAYS_COMPILER;
  int interpreter = percent(interp, t->total) >= SAYS_INTERPRETED &&
                    t->j->has_events;
  if (!compiler && !interpreter) return;
  fprintf(t->out, "WHAT THE JIT SAYS (ljprof report --jit tells more)\n");
  if (compiler) says_compiler(t, jit);
  if (interpreter) says_interpreted(t, interp);
  fprintf(t->out, "\n");
}

void report_jit_says(FILE *out, const struct sysprof_report_input *in) {
  struct jtext t = {out, in, &in->agg->jit, sysagg_samples(in->agg), {0}};
  put_says(&t);
  sbuf_free(&t.name);
}

/* -- The whole story ----------------------------------------------------- */

static void put_time(struct jtext *t) {
  fprintf(t->out, "WHERE TIME WENT (%" PRIu64 " samples)\n", t->total);
  for (unsigned k = 0; k < KIND_COUNT; k++) {
    uint64_t n = time_of(t->in->agg, k);
    fprintf(t->out, "%s: %" PRIu64 " (%.1f%%)\n", sysprof_kind_name(k), n,
            percent(n, t->total));
  }
  fprintf(t->out, "\n");
}

static void put_traces(struct jtext *t, size_t top) {
  const struct jitagg *j = t->j;
  fprintf(t->out, "TRACES: %" PRIu64 " started, %" PRIu64 " compiled, %" PRIu64
          " aborted, %" PRIu64 " starts blacklisted\n\n",
          j->started, j->compiled, j->aborted, j->blacklisted);
  fprintf(t->out, "COMPILER TIME BY TRACE START\n");
  uint32_t *order = jitagg_rank_starts(j);
  size_t shown = top && top < j->nstarts ? top : j->nstarts;
  for (size_t i = 0; i < shown; i++) put_start(t, &j->starts[order[i]]);
  if (j->nstarts == 0) fprintf(t->out, "(none)\n");
  else if (shown < j->nstarts)
    fprintf(t->out, "... %zu more\n", j->nstarts - shown);
  if (j->compile_unattributed)
    fprintf(t->out, "%" PRIu64 " compiler samples of a trace started before "
            "the profile\n", j->compile_unattributed);
  fprintf(t->out, "\n");
  free(order);
}

static void put_lines(struct jtext *t, size_t top) {
  size_t count;
  uint32_t *lines = jitagg_rank_lines(t->j, &count);
  size_t shown = top && top < count ? top : count;
  fprintf(t->out, "INTERPRETED TIME BY LINE, AND WHY\n");
  for (size_t i = 0; i < shown; i++) {
    const struct jit_line *l = &t->j->lines[lines[i]];
    fprintf(t->out, "%s: %" PRIu64 " samples (%.1f%%)", name_of(t, lines[i]),
            l->interpreted, percent(l->interpreted, t->total));
    const struct jit_reasons *in_func = jitagg_func_reasons(t->j, l->func);
    if (l->reasons.n) {
      fprintf(t->out, "; the compiler: ");
      put_reasons(t, &l->reasons, 3);
    } else if (in_func) {
      fprintf(t->out, "; the compiler, on traces of its function: ");
      put_reasons(t, in_func, 3);
    }
    if (l->blacklisted)
      fprintf(t->out, "; blacklisted (%" PRIu64 "x)", l->blacklisted);
    fprintf(t->out, "\n");
  }
  if (count == 0) fprintf(t->out, "(none)\n");
  else if (shown < count) fprintf(t->out, "... %zu more\n", count - shown);
  fprintf(t->out, "\n");
  free(lines);
}

static void put_exits(struct jtext *t, size_t top) {
  const struct jitagg *j = t->j;
  uint32_t *order = jitagg_rank_exits(j);
  size_t shown = top && top < j->nexits ? top : j->nexits;
  fprintf(t->out, "HOT EXITS (%" PRIu64 " exits taken)\n", j->exits_total);
  for (size_t i = 0; i < shown; i++) {
    const struct jit_exit *x = &j->exits[order[i]];
    fprintf(t->out, "TRACE %" PRIu64 " exit %" PRIu64 " to %s: %" PRIu64
            " (%.1f%%)", x->trace, x->exit, name_of(t, x->loc), x->count,
            percent(x->count, j->exits_total));
    if (x->start != UINT32_MAX)
      fprintf(t->out, ", trace started at %s",
              name_of(t, j->starts[x->start].loc));
    fprintf(t->out, "\n");
  }
  if (j->nexits == 0) fprintf(t->out, "(none)\n");
  else if (shown < j->nexits)
    fprintf(t->out, "... %zu more\n", j->nexits - shown);
  fprintf(t->out, "\n");
  free(order);
}

static void put_flushes(struct jtext *t) {
  const uint64_t *f = t->j->flushes;
  fprintf(t->out, "FLUSHES: %" PRIu64 "\n", add_sat(add_sat(f[0], f[1]), f[2]));
  for (unsigned i = 0; i < 3; i++)
    if (f[i]) fprintf(t->out, "%s: %" PRIu64 "\n", flush_whys[i], f[i]);
}

int report_jit_text(FILE *out, const struct sysprof_report_input *in,
                    const struct report_options *opt) {
  struct jtext t = {out, in, &in->agg->jit, sysagg_samples(in->agg), {0}};
  fprintf(out, "JIT REPORT: %s\n", in->source);
  if (in->reader->status != READER_OK)
    fprintf(out, "WARNING: damaged stream, this report covers what came "
                 "before the damage: %s\n",
            in->reader->err_msg);
  if (!t.j->has_events)
    fprintf(out, "The stream has none of the compiler's events (a v2 "
                 "stream, one recorded without them, jit=false, or before "
                 "they were, or a VM without the JIT): time by kind "
                 "only.\n");
  else if (!t.j->jit_on && t.j->started == 0)
    fprintf(out, "The JIT compiler was off: no trace was compiled during "
                 "the profile.\n");
  fprintf(out, "\n");
  put_time(&t);
  put_says(&t);
  if (t.j->has_events) {
    put_traces(&t, opt->top);
    put_lines(&t, opt->top);
    put_exits(&t, opt->top);
    put_flushes(&t);
  }
  sbuf_free(&t.name);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

/* -- JSON ---------------------------------------------------------------- */

static json_t *json_loc(const struct symbols *sym, uint32_t loc,
                        struct sbuf *sb) {
  return loc == SYMBOLS_NONE ? json_null() : json_location(sym, loc, sb);
}

static json_t *json_reasons(const struct symbols *sym,
                            const struct jit_reasons *r) {
  json_t *list = json_array();
  for (size_t i = 0; i < r->n; i++) {
    const struct symstring *s = &sym->strings[r->items[i].reason];
    json_t *o = json_object();
    json_object_set_new(o, "reason", json_bytes(s->data, s->len));
    json_object_set_new(o, "count", json_u64(r->items[i].count));
    json_array_append_new(list, o);
  }
  return list;
}

static json_t *json_starts(const struct sysprof_report_input *in,
                           struct sbuf *sb) {
  const struct jitagg *j = &in->agg->jit;
  uint32_t *order = jitagg_rank_starts(j);
  json_t *list = json_array();
  for (size_t i = 0; i < j->nstarts; i++) {
    const struct jit_start *s = &j->starts[order[i]];
    json_t *o = json_object();
    json_object_set_new(o, "location", json_loc(in->sym, s->loc, sb));
    json_object_set_new(o, "kind",
                        json_string(start_kinds[s->kind < 3 ? s->kind : 0]));
    json_object_set_new(o, "samples", json_u64(start_samples(s)));
    json_object_set_new(o, "samples_compiled", json_u64(s->samples[0]));
    json_object_set_new(o, "samples_aborted", json_u64(s->samples[1]));
    json_object_set_new(o, "attempts", json_u64(s->attempts));
    json_object_set_new(o, "compiled", json_u64(s->compiled));
    json_object_set_new(o, "aborted", json_u64(s->aborted));
    json_object_set_new(o, "blacklisted", json_u64(s->blacklisted));
    json_object_set_new(o, "aborts", json_reasons(in->sym, &s->reasons));
    json_array_append_new(list, o);
  }
  free(order);
  return list;
}

static json_t *json_lines(const struct sysprof_report_input *in,
                          struct sbuf *sb) {
  const struct jitagg *j = &in->agg->jit;
  size_t count;
  uint32_t *lines = jitagg_rank_lines(j, &count);
  json_t *list = json_array();
  for (size_t i = 0; i < count; i++) {
    const struct jit_line *l = &j->lines[lines[i]];
    json_t *o = json_object();
    json_object_set_new(o, "location", json_loc(in->sym, lines[i], sb));
    json_object_set_new(o, "interpreted", json_u64(l->interpreted));
    json_object_set_new(o, "blacklisted", json_u64(l->blacklisted));
    json_object_set_new(o, "aborts", json_reasons(in->sym, &l->reasons));
    json_array_append_new(list, o);
  }
  free(lines);
  return list;
}

static json_t *json_exits(const struct sysprof_report_input *in,
                          struct sbuf *sb) {
  const struct jitagg *j = &in->agg->jit;
  uint32_t *order = jitagg_rank_exits(j);
  json_t *list = json_array();
  for (size_t i = 0; i < j->nexits; i++) {
    const struct jit_exit *x = &j->exits[order[i]];
    json_t *o = json_object();
    json_object_set_new(o, "trace", json_u64(x->trace));
    json_object_set_new(o, "exit", json_u64(x->exit));
    json_object_set_new(o, "location", json_loc(in->sym, x->loc, sb));
    json_object_set_new(o, "start", x->start == UINT32_MAX
                                        ? json_null()
                                        : json_loc(in->sym,
                                                   j->starts[x->start].loc,
                                                   sb));
    json_object_set_new(o, "count", json_u64(x->count));
    json_array_append_new(list, o);
  }
  free(order);
  return list;
}

int report_jit_json(FILE *out, const struct sysprof_report_input *in,
                    const struct report_options *opt) {
  (void)opt;
  const struct jitagg *j = &in->agg->jit;
  struct sbuf sb = {0};
  json_t *root = json_object(), *time = json_object(), *flushes;
  json_object_set_new(root, "kind", json_string("jit"));
  json_object_set_new(root, "source",
                      json_bytes(in->source, strlen(in->source)));
  json_object_set_new(root, "events", json_boolean(j->has_events));
  json_object_set_new(root, "jit_on", json_boolean(j->jit_on));
  json_object_set_new(root, "samples", json_u64(sysagg_samples(in->agg)));
  for (unsigned k = 0; k < KIND_COUNT; k++)
    json_object_set_new(time, sysprof_kind_key(k),
                        json_u64(time_of(in->agg, k)));
  json_object_set_new(root, "time", time);
  json_object_set_new(root, "started", json_u64(j->started));
  json_object_set_new(root, "compiled", json_u64(j->compiled));
  json_object_set_new(root, "aborted", json_u64(j->aborted));
  json_object_set_new(root, "blacklisted", json_u64(j->blacklisted));
  json_object_set_new(root, "compiler_samples_unattributed",
                      json_u64(j->compile_unattributed));
  json_object_set_new(root, "starts", json_starts(in, &sb));
  json_object_set_new(root, "lines", json_lines(in, &sb));
  json_object_set_new(root, "exits", json_exits(in, &sb));
  json_object_set_new(root, "exits_taken", json_u64(j->exits_total));
  flushes = json_object();
  json_object_set_new(flushes, "asked", json_u64(j->flushes[LJP_FLUSH_ASKED]));
  json_object_set_new(flushes, "maxtrace",
                      json_u64(j->flushes[LJP_FLUSH_MAXTRACE]));
  json_object_set_new(flushes, "maxmcode",
                      json_u64(j->flushes[LJP_FLUSH_MAXMCODE]));
  json_object_set_new(root, "flushes", flushes);
  json_add_error(root, in->reader);
  sbuf_free(&sb);
  return json_write(root, out);
}
