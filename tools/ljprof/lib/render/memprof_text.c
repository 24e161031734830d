/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Text report, in the shape users of the reference know: sections of
** locations with their events and bytes, the allocation sites each
** reallocation or free touched ("Overrides"), what each site still holds
** (HEAP SUMMARY), and ALIASES for chunk names that span lines. Of
** several streams merged, what each process allocated and still held
** (BY PROCESS); of a stream with labels, what each label's values
** allocated (BY LABEL).
*/
#define _GNU_SOURCE /* qsort_r */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/*
** The report is written through a buffer of its own, numbers formatted by
** hand, and each location's name formatted once: a report of a long
** stream has a line per (site, owner) pair, and fprintf() took as long as
** the rest of the rendering.
*/
#define FLUSH_AT (64u << 10)

/* Where a location's name is in the names formatted so far. */
struct name_span {
  size_t start;
  size_t len; /* SIZE_MAX: not formatted yet */
};

struct text {
  FILE *out;
  const struct report_input *in;
  const struct report_options *opt;
  struct aliases aliases;
  struct sbuf buf;   /* what is not written out yet */
  struct sbuf names; /* the names formatted so far, one after the other */
  struct name_span *name_of; /* by location id */
};

static void put_bytes(struct text *t, const char *s, size_t len) {
  sbuf_add(&t->buf, s, len);
}

/* Inlined, so that a literal's length and copy are known where it is put. */
ALWAYS_INLINE void put(struct text *t, const char *s) {
  put_bytes(t, s, strlen(s));
}

static void put_u64(struct text *t, uint64_t v) { sbuf_u64(&t->buf, v); }

static void write_out(struct text *t) {
  fwrite(t->buf.data, 1, t->buf.len, t->out);
  sbuf_reset(&t->buf);
}

/* The end of a line; the buffer goes out when it is full enough. */
static void end_line(struct text *t) {
  put(t, "\n");
  if (t->buf.len >= FLUSH_AT) write_out(t);
}

/*
** A location's name. Its first use formats it, which numbers the aliases
** in order of first use. It stops at a NUL byte (a chunk name may hold
** one), as a name printed with "%s" did.
*/
static void put_name(struct text *t, uint32_t loc) {
  struct name_span *span = &t->name_of[loc];
  if (span->len == SIZE_MAX) {
    span->start = t->names.len;
    symbols_format(t->in->sym, loc, &t->aliases, &t->names);
    span->len = strnlen(t->names.data + span->start,
                        t->names.len - span->start);
  }
  put_bytes(t, t->names.data + span->start, span->len);
}

static void put_size(struct text *t, uint64_t bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB",
                                      "EiB"};
  if (!t->opt->human) {
    put_u64(t, bytes);
    put(t, " bytes");
    return;
  }
  if (bytes < 1024) {
    put_u64(t, bytes);
    put(t, " B");
    return;
  }
  size_t unit;
  double value = binary_units(bytes, sizeof units / sizeof *units, &unit);
  sbuf_tenths(&t->buf, value);
  put(t, " ");
  put(t, units[unit]);
}

static void put_share(struct text *t, uint64_t part, uint64_t total) {
  if (total == 0) return;
  put(t, " (");
  sbuf_tenths(&t->buf, 100.0 * (double)part / (double)total);
  put(t, "%)");
}

/* Inlined, so that each word is a literal where it is put. */
ALWAYS_INLINE void put_plural(struct text *t, uint64_t n, const char *one,
                              const char *many) {
  put_u64(t, n);
  put(t, " ");
  if (n == 1)
    put(t, one);
  else
    put(t, many);
}

static void put_totals(struct text *t) {
  const struct memstats *s = &t->in->agg->totals;
  put(t, "Totals: ");
  put_plural(t, s->alloc_events, "allocation", "allocations");
  put(t, " (");
  put_size(t, s->alloc_bytes);
  put(t, "), ");
  put_plural(t, s->realloc_events, "reallocation", "reallocations");
  put(t, " (+");
  put_size(t, s->realloc_new_bytes);
  put(t, " / -");
  put_size(t, s->realloc_old_bytes);
  put(t, "), ");
  put_plural(t, s->free_events, "free", "frees");
  put(t, " (");
  put_size(t, s->freed_bytes);
  put(t, "); live at the end: ");
  put_size(t, s->live_bytes);
  put(t, " in ");
  put_plural(t, s->live_blocks, "block", "blocks");
  end_line(t);
}

/* v4: what the JIT compiler allocated (and grew) in all, and at which
** trace start most; nothing when it allocated nothing. */
static void put_jit_total(struct text *t) {
  const struct memagg *agg = t->in->agg;
  const struct symbols *sym = t->in->sym;
  uint64_t *by_start = xcalloc(sym->nlocations + 1, sizeof *by_start);
  uint64_t bytes = 0, events = 0, starts = 0;
  uint32_t top = SYMBOLS_NONE;
  for (size_t loc = 0; loc < agg->nstats; loc++) {
    const struct memstats *st = &agg->stats[loc];
    uint32_t start = symbols_vm_parent(sym, (uint32_t)loc);
    if (start == SYMBOLS_NONE || sym->locations[loc].vm == SYMBOLS_VM_JIT)
      continue;
    uint64_t b = st->alloc_bytes + st->realloc_new_bytes;
    bytes += b;
    events += st->alloc_events + st->realloc_events;
    if (symbols_vm_parent(sym, start) == SYMBOLS_NONE) continue; /* none */
    starts += b && !by_start[start];
    by_start[start] += b;
    if (top == SYMBOLS_NONE || by_start[start] > by_start[top]) top = start;
  }
  if (events) {
    const struct memstats *s = &agg->totals;
    put(t, "JIT compiler: ");
    put_size(t, bytes);
    put(t, " allocated");
    put_share(t, bytes, s->alloc_bytes + s->realloc_new_bytes);
    put(t, ", ");
    put_plural(t, events, "event", "events");
    put(t, ", traces at ");
    put_plural(t, starts, "start", "starts");
    if (top != SYMBOLS_NONE) {
      put(t, "; largest: ");
      put_name(t, top);
      put(t, " (");
      put_size(t, by_start[top]);
      put(t, ")");
    }
    end_line(t);
  }
  free(by_start);
}

static void put_overrides(struct text *t, const struct overrides *o,
                          uint32_t site) {
  size_t n;
  const struct override *ov = memagg_overrides(o, site, &n);
  if (n == 0) return;
  put(t, "\tOverrides:");
  end_line(t);
  for (size_t i = 0; i < n; i++) {
    put(t, "\t\t");
    put_name(t, ov[i].owner);
    put(t, ": ");
    put_plural(t, ov[i].events, "event", "events");
    put(t, ", ");
    put_size(t, ov[i].bytes);
    end_line(t);
  }
}

/* How many of count ranked locations a section shows (--top). */
static size_t limit(struct text *t, size_t count) {
  return t->opt->top && t->opt->top < count ? t->opt->top : count;
}

static void put_more(struct text *t, size_t shown, size_t count) {
  if (count == 0) {
    put(t, "(none)");
    end_line(t);
  } else if (shown < count) {
    put(t, "... ");
    put_u64(t, count - shown);
    put(t, count - shown == 1 ? " more location" : " more locations");
    end_line(t);
  }
}

static void put_event_section(struct text *t, const char *title,
                              enum memagg_view view) {
  const struct memagg *agg = t->in->agg;
  const struct overrides *o = memagg_view_overrides(agg, view);
  size_t count;
  uint32_t *ids = memagg_rank(agg, view, t->opt->order, &count);
  uint64_t total[3];
  memagg_event_bytes(&agg->totals, view, &total[0], &total[1], &total[2]);
  put(t, title);
  end_line(t);
  size_t shown = limit(t, count);
  for (size_t i = 0; i < shown; i++) {
    uint64_t col[3];
    memagg_event_bytes(memagg_stats(agg, ids[i]), view, &col[0], &col[1],
                       &col[2]);
    put_name(t, ids[i]);
    put(t, ": ");
    put_plural(t, col[0], "event", "events");
    put_share(t, col[0], total[0]);
    put(t, "  Allocated: ");
    put_size(t, col[1]);
    put_share(t, col[1], total[1]);
    put(t, "  Freed: ");
    put_size(t, col[2]);
    put_share(t, col[2], total[2]);
    end_line(t);
    if (o) put_overrides(t, o, ids[i]);
  }
  put_more(t, shown, count);
  end_line(t);
  free(ids);
}

/* Streams with stacks: the pairs of the sites, most live bytes first. */
static int by_site_live(const void *pa, const void *pb, void *ud) {
  const struct memagg *agg = ud;
  const struct stackpair *a = &agg->pairs[*(const uint32_t *)pa];
  const struct stackpair *b = &agg->pairs[*(const uint32_t *)pb];
  if (a->site != b->site) return a->site < b->site ? -1 : 1;
  if (a->live_bytes != b->live_bytes) return a->live_bytes > b->live_bytes ? -1 : 1;
  return *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
}

#define STACKS_PER_SITE 3

/* A stack, innermost first: `a <- b <- c`. */
static void put_stack(struct text *t, uint32_t stack) {
  uint32_t depth;
  const struct symframe *f = symbols_stack(t->in->sym, stack, &depth);
  if (!depth) put(t, "(no call stack)");
  for (uint32_t i = 0; i < depth; i++) {
    if (i) put(t, " <- ");
    put_name(t, f[i].loc);
  }
}

/* The stacks that hold most of a site's memory (pairs sorted by site). */
static void put_site_stacks(struct text *t, const uint32_t *pairs,
                            size_t npairs, uint32_t site) {
  const struct memagg *agg = t->in->agg;
  size_t lo = 0, hi = npairs;
  while (lo < hi) { /* the site's first pair */
    size_t mid = lo + (hi - lo) / 2;
    if (agg->pairs[pairs[mid]].site < site) lo = mid + 1;
    else hi = mid;
  }
  for (size_t i = lo, n = 0; i < npairs && n < STACKS_PER_SITE; i++, n++) {
    const struct stackpair *p = &agg->pairs[pairs[i]];
    if (p->site != site || !p->live_bytes) break;
    put(t, "\t");
    put_size(t, p->live_bytes);
    put(t, " in ");
    put_plural(t, p->live_objects, "block", "blocks");
    put(t, " from ");
    put_stack(t, p->stack);
    if (origins_merged(t->in->origins)) {
      put(t, ", in ");
      put(t, t->in->origins->items[p->stream].name);
    }
    end_line(t);
  }
}

static void put_heap_summary(struct text *t) {
  const struct memagg *agg = t->in->agg;
  size_t count;
  uint32_t *ids = memagg_rank(agg, VIEW_LIVE, t->opt->order, &count);
  uint32_t *pairs = NULL;
  if (memagg_has_stacks(agg)) {
    pairs = xmalloc((agg->npairs + 1) * sizeof *pairs);
    for (size_t i = 0; i < agg->npairs; i++) pairs[i] = (uint32_t)i;
    qsort_r(pairs, agg->npairs, sizeof *pairs, by_site_live, (void *)agg);
  }
  put(t, "HEAP SUMMARY");
  end_line(t);
  size_t shown = limit(t, count);
  for (size_t i = 0; i < shown; i++) {
    const struct memstats *st = memagg_stats(agg, ids[i]);
    put_name(t, ids[i]);
    put(t, " holds ");
    put_size(t, st->live_bytes);
    put_share(t, st->live_bytes, agg->totals.live_bytes);
    put(t, " in ");
    put_plural(t, st->live_blocks, "block", "blocks");
    put(t, ": ");
    put_plural(t, st->alloc_events, "alloc", "allocs");
    put(t, ", ");
    put_plural(t, st->owned_frees, "free", "frees");
    end_line(t);
    if (pairs) put_site_stacks(t, pairs, agg->npairs, ids[i]);
  }
  put_more(t, shown, count);
  free(pairs);
  free(ids);
}

/* What a v5 stream says of its stacks and sampling. */
static void put_stream_meta(struct text *t) {
  const struct memprof_meta *m = &t->in->sym->memprof;
  if (m->sample) {
    put(t, "SAMPLED: an allocation recorded every ");
    put_size(t, m->sample);
    put(t, " allocated on average");
    if (m->has_stats) {
      put(t, " (");
      put_plural(t, m->samples, "sample", "samples");
      put(t, ")");
    }
    put(t, "; every figure is an estimate");
    end_line(t);
    if (m->untracked) {
      put(t, "WARNING: ");
      put_plural(t, m->untracked, "sampled block", "sampled blocks");
      put(t, " not tracked (table full): their frees are missing");
      end_line(t);
    }
  }
  if (m->has_stats && (m->stacks || memagg_has_stacks(t->in->agg))) {
    put(t, "Call stacks: ");
    put_u64(t, m->nstacks);
    put(t, m->native ? " distinct, with native frames; " : " distinct; ");
    put_plural(t, m->truncated, "event", "events");
    put(t, " with a stack cut at 64 frames; ");
    put_plural(t, m->full, "event", "events");
    put(t, " without one");
    if (m->full) put(t, " (the stack tables' budget reached: stack_budget)");
    end_line(t);
  }
}

/* The table by label: bytes allocated (in use at the end, --leak-only). */
static void put_label_size(struct sbuf *sb, uint64_t bytes, void *ud) {
  struct text *t = ud;
  size_t at = t->buf.len;
  put_size(t, bytes); /* written where the report's text goes, moved */
  sbuf_add(sb, t->buf.data + at, t->buf.len - at);
  t->buf.len = at;
}

static void put_label_stack(struct sbuf *sb, size_t item, void *ud) {
  struct text *t = ud;
  const struct stackpair *p = &t->in->agg->pairs[item];
  uint32_t depth;
  const struct symframe *f = symbols_stack(t->in->sym, p->stack, &depth);
  symbols_format(t->in->sym, p->site, &t->aliases, sb);
  for (uint32_t i = f && f[0].loc == p->site; i < depth; i++) {
    sbuf_add(sb, " <- ", 4);
    symbols_format(t->in->sym, f[i].loc, &t->aliases, sb);
  }
}

static void put_labels(struct text *t) {
  struct labeltable table;
  struct sbuf sb = {0};
  struct labels_text how = {t->opt->leak_only
                                ? "BY LABEL (in use at the end)"
                                : "BY LABEL (allocated)",
                            put_label_size, put_label_stack, t};
  labeltable_memory(&table, t->in->agg, t->opt->leak_only, SYMBOLS_NONE);
  report_labels_text(&sb, t->in->sym, &table, &how);
  if (sb.len) put_bytes(t, sb.data, sb.len);
  sbuf_free(&sb);
  labeltable_free(&table);
}

static void put_processes(struct text *t) {
  const struct origins *o = t->in->origins;
  if (!origins_merged(o)) return;
  size_t n;
  struct origin_group total;
  struct origin_group *rows = origins_by_process(o, &n, &total);
  struct sbuf name = {0};
  put(t, "BY PROCESS (allocated, then in use at the end)");
  end_line(t);
  for (size_t i = 0; i < n; i++) {
    sbuf_reset(&name);
    origin_group_name(o, &rows[i], &name);
    put(t, sbuf_cstr(&name));
    put(t, ": ");
    put_size(t, rows[i].value);
    put_share(t, rows[i].value, total.value);
    put(t, ", ");
    put_size(t, rows[i].inuse);
    put_share(t, rows[i].inuse, total.inuse);
    end_line(t);
  }
  sbuf_free(&name);
  free(rows);
  end_line(t);
}

static void put_aliases(struct text *t) {
  if (t->aliases.count == 0) return;
  end_line(t);
  put(t, "ALIASES");
  end_line(t);
  for (size_t i = 0; i < t->aliases.count; i++) {
    const struct symstring *s = &t->in->sym->strings[t->aliases.strings[i]];
    put(t, "CHUNK ");
    put_u64(t, i + 1);
    put(t, ": ");
    put_bytes(t, s->data, s->len);
    end_line(t);
  }
}

int report_memprof_text(FILE *out, const struct report_input *in,
                        const struct report_options *opt) {
  struct text t = {out, in, opt, {0}, {0}, {0}, NULL};
  size_t nlocations = in->sym->nlocations;
  t.name_of = xmalloc(nlocations * sizeof *t.name_of);
  for (size_t i = 0; i < nlocations; i++) t.name_of[i].len = SIZE_MAX;
  if (!opt->leak_only) {
    put(&t, "MEMPROF REPORT: ");
    put(&t, in->source);
    end_line(&t);
    if (in->reader->status != READER_OK) {
      put(&t, "WARNING: damaged stream, this report covers what came "
              "before the damage: ");
      put(&t, in->reader->err_msg);
      end_line(&t);
    }
    put_stream_meta(&t);
    report_labels_kept(&t.buf, opt);
    put_totals(&t);
    put_jit_total(&t);
    end_line(&t);
    put_processes(&t);
    put_labels(&t);
    put_event_section(&t, "ALLOCATIONS", VIEW_ALLOC);
    put_event_section(&t, "REALLOCATIONS", VIEW_REALLOC);
    put_event_section(&t, "DEALLOCATIONS", VIEW_FREE);
  }
  if (opt->leak_only) put_labels(&t);
  put_heap_summary(&t);
  put_aliases(&t);
  write_out(&t);
  aliases_free(&t.aliases);
  sbuf_free(&t.buf);
  sbuf_free(&t.names);
  free(t.name_of);
  return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
