/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "sysagg.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sysagg_init(struct sysagg *agg, struct symbols *sym) {
  memset(agg, 0, sizeof *agg);
  agg->sym = sym;
  jitagg_init(&agg->jit, sym);
}

void sysagg_free(struct sysagg *agg) {
  jitagg_free(&agg->jit);
  free(agg->pending.samples);
  free(agg->pending.frames);
  free(agg->scratch);
  sbuf_free(&agg->label);
  mapped_free(agg->frames, agg->frames_cap, sizeof *agg->frames);
  mapped_free(agg->stacks, agg->stacks_cap, sizeof *agg->stacks);
  hashtab_free(&agg->stack_index);
  keymap_free(&agg->stack_of_frames);
  free(agg->funcs.items);
  free(agg->lines.items);
  free(agg->label_samples);
  memset(agg, 0, sizeof *agg);
}

static uint32_t hash_stack(const struct sysprof_frame *frames, size_t n,
                           uint32_t vmstate, uint64_t trace, uint32_t stream,
                           uint32_t labels) {
  uint64_t h = (UINT64_C(0xcbf29ce484222325) ^ vmstate ^ trace << 8 ^
                (uint64_t)stream << 40 ^ (uint64_t)labels << 20) *
               UINT64_C(0x100000001b3);
  for (size_t i = 0; i < n; i++)
    h = (h ^ ((uint64_t)frames[i].loc << 32 | frames[i].func) ^
         frames[i].inlined) *
        UINT64_C(0x100000001b3);
  return hash_u64(h);
}

struct stack_probe {
  const struct sysagg *agg;
  const struct sysprof_frame *frames;
  size_t n;
  uint32_t vmstate;
  uint64_t trace;
  uint32_t labels;
};

static int same_stack(const void *ctx, uint32_t id) {
  const struct stack_probe *p = ctx;
  const struct sysagg_stack *st = &p->agg->stacks[id];
  if (st->depth != p->n || st->vmstate != p->vmstate ||
      st->trace != p->trace || st->stream != p->agg->stream ||
      st->labels != p->labels)
    return 0;
  const struct sysagg_frame *kept = &p->agg->frames[st->first];
  for (size_t i = 0; i < p->n; i++)
    if (kept[i].loc != p->frames[i].loc || kept[i].func != p->frames[i].func ||
        kept[i].inlined != (uint32_t)p->frames[i].inlined)
      return 0;
  return 1;
}

/* A sample's frames copied past the end of the frames kept: the index of
** the first. */
static size_t copy_frames(struct sysagg *agg,
                          const struct sysprof_frame *frames, size_t n) {
  size_t first = agg->nframes;
  grow_mapped((void **)&agg->frames, &agg->frames_cap, first + n,
              sizeof *agg->frames);
  for (size_t i = 0; i < n; i++)
    agg->frames[first + i] = (struct sysagg_frame){
        frames[i].loc, frames[i].func, (uint32_t)frames[i].inlined,
        (uint32_t)frames[i].lua};
  return first;
}

/* The stack of a sample's frames: its id, added if new (*added set). */
static uint32_t stack_id(struct sysagg *agg, const struct sysprof_frame *frames,
                         size_t n, uint32_t vmstate, uint64_t trace,
                         uint32_t labels, int *added) {
  struct stack_probe probe = {agg, frames, n, vmstate, trace, labels};
  uint32_t hash = hash_stack(frames, n, vmstate, trace, agg->stream, labels);
  uint32_t id = hashtab_find(&agg->stack_index, hash, same_stack, &probe);
  *added = id == HASHTAB_NONE;
  if (*added) {
    grow_mapped((void **)&agg->stacks, &agg->stacks_cap, agg->nstacks + 1,
                sizeof *agg->stacks);
    id = (uint32_t)agg->nstacks++;
    size_t first = copy_frames(agg, frames, n);
    agg->stacks[id] = (struct sysagg_stack){(uint32_t)first, (uint32_t)n, 0,
                                            vmstate, trace, agg->stream,
                                            labels, 0, 0};
    agg->nframes = first + n; /* keep the new stack's frames */
    hashtab_add(&agg->stack_index, hash, id);
  }
  return id;
}

static struct sysagg_counts *counts_of(struct sysagg_table *t, uint32_t loc) {
  grow_array_zeroed((void **)&t->items, &t->cap, (size_t)loc + 1,
                    sizeof *t->items);
  return &t->items[loc];
}

/* Count n samples of a stack at a location of it, their innermost if
** self: total once however often the stack has it (the stack's mark). */
static void count_in(struct sysagg_table *t, uint32_t loc, uint64_t mark,
                     int self, uint64_t n) {
  struct sysagg_counts *c = counts_of(t, loc);
  if (self) c->self = add_sat(c->self, n);
  if (c->last_mark == mark) return;
  c->last_mark = mark;
  c->total = add_sat(c->total, n);
}

/* n samples of a stack: by function, and whether a line is unknown. */
static void count_funcs(struct sysagg *agg, const struct sysagg_frame *frames,
                        size_t depth, uint64_t n) {
  uint64_t mark = ++agg->mark;
  int noline = 0;
  for (size_t i = 0; i < depth; i++) {
    const struct location *loc = &agg->sym->locations[frames[i].loc];
    count_in(&agg->funcs, frames[i].func, mark, i == 0, n);
    noline |= loc->kind == LOC_LUA_NOLINE ||
              (loc->kind == LOC_LUA_UNKNOWN && loc->line == SYMBOLS_LINE_UNKNOWN);
  }
  if (noline) agg->line_unknown = add_sat(agg->line_unknown, n);
}

/* n samples of a stack by line: its frames of Lua, the innermost self. */
static void count_lines(struct sysagg *agg, const struct sysagg_frame *frames,
                        size_t depth, uint64_t n) {
  uint64_t mark = ++agg->mark;
  int self = 1;
  for (size_t i = 0; i < depth; i++) {
    if (!frames[i].lua) continue;
    count_in(&agg->lines, frames[i].loc, mark, self, n);
    self = 0;
  }
}

/* The samples of the stacks not yet in the tables by function and line. */
static void count_stacks(struct sysagg *agg) {
  for (size_t i = 0; i < agg->nstacks; i++) {
    struct sysagg_stack *st = &agg->stacks[i];
    const struct sysagg_frame *frames = &agg->frames[st->first];
    if (st->count != st->funcs_counted)
      count_funcs(agg, frames, st->depth, st->count - st->funcs_counted);
    if (st->count != st->lines_counted)
      count_lines(agg, frames, st->depth, st->count - st->lines_counted);
    st->funcs_counted = st->lines_counted = st->count;
  }
}

/* Do a stack's frames of Lua differ from those of a sample of it? */
static int other_lua_frames(const struct sysagg_frame *kept,
                            const struct sysprof_frame *sample, size_t depth) {
  for (size_t i = 0; i < depth; i++)
    if (kept[i].lua != (uint32_t)sample[i].lua) return 1;
  return 0;
}

/* Samples taken under a label set. */
static void count_labels(struct sysagg *agg, uint32_t labels, uint64_t n) {
  grow_array_zeroed((void **)&agg->label_samples, &agg->label_cap,
                    (size_t)labels + 1, sizeof *agg->label_samples);
  agg->label_samples[labels] = add_sat(agg->label_samples[labels], n);
}

void sysagg_label_count(void *ud, uint32_t labels, uint64_t samples) {
  count_labels(ud, labels, samples);
}

/* A sample's key in stack_of_frames, 0 for none: what tells its stack
** apart but its frames (the trace a sample in the compiler or an exit
** names is not among them; label sets from 2^27 on do not fit). */
static uint64_t frames_key(const struct sysprof_sample *s) {
  if (!s->frames_id || s->has_jit || s->labels >= UINT32_C(1) << 27) return 0;
  return (uint64_t)s->labels << 37 | (uint64_t)s->vmstate << 32 | s->frames_id;
}

/* Count a sample: frames_key() names its stack after the first (0: it is
** looked up by its frames). */
static void count_sample(struct sysagg *agg, enum vmstate state,
                         uint64_t trace, uint32_t labels,
                         const struct sysprof_frame *frames, size_t n,
                         uint64_t key) {
  agg->samples = add_sat(agg->samples, 1);
  count_labels(agg, labels, 1);
  agg->by_vmstate[state] = add_sat(agg->by_vmstate[state], 1);
  uint32_t known = key ? keymap_get(&agg->stack_of_frames, key) : HASHTAB_NONE;
  if (known != HASHTAB_NONE) {
    agg->stacks[known].count = add_sat(agg->stacks[known].count, 1);
    return;
  }
  struct sysprof_frame pseudo;
  if (n == 0) {
    char label[16];
    snprintf(label, sizeof label, "[%s]", sysprof_vmstate_name(state));
    uint32_t loc = symbols_loc_label(agg->sym, label);
    pseudo = (struct sysprof_frame){loc, loc, 0, 0};
    frames = &pseudo;
    n = 1;
  }

  int added;
  uint32_t id = stack_id(agg, frames, n, state, trace, labels, &added);
  struct sysagg_stack *st = &agg->stacks[id];
  st->count = add_sat(st->count, 1);
  /* The tables by function and line count the stack's samples when the
  ** stream ends; by line, one of other frames of Lua is counted now. */
  if (!added && other_lua_frames(&agg->frames[st->first], frames, n)) {
    size_t copy = copy_frames(agg, frames, n);
    count_lines(agg, &agg->frames[copy], n, 1);
    st->lines_counted = add_sat(st->lines_counted, 1);
  } else if (key) {
    keymap_put(&agg->stack_of_frames, key, id);
  }
}

/* The trace a sample ran, exited or compiled: 0 for none. */
static uint64_t sample_trace(const struct sysagg *agg,
                             const struct sysprof_sample *s) {
  if (s->has_jit) return s->jit_trace;
  if (s->vmstate != VMSTATE_TRACE) return 0;
  for (size_t i = 0; i < s->nframes; i++) {
    const struct location *loc = &agg->sym->locations[s->frames[i].loc];
    if (loc->kind == LOC_TRACE_FRAME) return loc->traceno;
  }
  return 0;
}

/* Below the innermost frame of Lua or trace: the compiler's and the exit
** handler's native frames stay above it. */
static size_t label_at(const struct sysagg *agg,
                       const struct sysprof_frame *frames, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (frames[i].lua ||
        agg->sym->locations[frames[i].loc].kind == LOC_TRACE_FRAME)
      return i;
  return n;
}

/* Frames copied: none from a sample that has none (its array may be
** NULL, which memcpy may not be given). */
static void copy_raw_frames(struct sysprof_frame *to,
                            const struct sysprof_frame *from, size_t n) {
  if (n) memcpy(to, from, n * sizeof *from);
}

static void count_labelled(struct sysagg *agg, enum vmstate state,
                           uint64_t trace, uint32_t labels,
                           const struct sysprof_frame *frames, size_t n,
                           const char *label) {
  uint32_t loc = symbols_loc_label(agg->sym, label);
  size_t at = label_at(agg, frames, n);
  grow_array((void **)&agg->scratch, &agg->scratch_cap, n + 1,
             sizeof *agg->scratch);
  copy_raw_frames(agg->scratch, frames, at);
  agg->scratch[at] = (struct sysprof_frame){loc, loc, 0, 0};
  if (n > at) copy_raw_frames(agg->scratch + at + 1, frames + at, n - at);
  count_sample(agg, state, trace, labels, agg->scratch, n + 1, 0);
}

/* `[JIT] trace @chunk:LINE: aborted: REASON` */
static const char *attempt_label(struct sysagg *agg, size_t start,
                                 enum jit_outcome outcome,
                                 const struct sysprof_jit_event *e) {
  static const char *const kinds[] = {"trace", "side trace",
                                      "stitched trace"};
  const struct jit_start *st = &agg->jit.starts[start];
  struct sbuf *sb = &agg->label;
  sbuf_reset(sb);
  sbuf_printf(sb, "[JIT] %s ", kinds[st->kind < 3 ? st->kind : 0]);
  symbols_format(agg->sym, st->loc, NULL, sb);
  if (outcome == OUTCOME_COMPILED) {
    sbuf_printf(sb, ": compiled");
  } else if (outcome == OUTCOME_ABORTED) {
    sbuf_printf(sb, ": aborted: ");
    sbuf_add(sb, e->reason, e->reason_len);
  }
  return sbuf_cstr(sb);
}

/* Count the samples that waited for their attempt's outcome. */
static void count_pending(struct sysagg *agg, const char *label) {
  struct sysagg_pending *p = &agg->pending;
  for (size_t i = 0; i < p->n; i++) {
    const struct sysagg_waiting *w = &p->samples[i];
    count_labelled(agg, w->vmstate, w->trace, w->labels,
                   w->n ? p->frames + w->first : NULL, w->n, label);
  }
  p->n = p->nframes = 0;
}

/* An attempt's samples wait for its outcome, up to a point. */
#define PENDING_MAX 65536

static void wait_outcome(struct sysagg *agg, const struct sysprof_sample *s) {
  struct sysagg_pending *p = &agg->pending;
  if (p->n == PENDING_MAX)
    count_pending(agg, attempt_label(agg, agg->jit.cur.start,
                                     OUTCOME_UNKNOWN, NULL));
  grow_array((void **)&p->samples, &p->cap, p->n + 1, sizeof *p->samples);
  grow_array((void **)&p->frames, &p->frames_cap, p->nframes + s->nframes,
             sizeof *p->frames);
  if (s->nframes) /* (p->frames may be NULL still) */
    copy_raw_frames(p->frames + p->nframes, s->frames, s->nframes);
  p->samples[p->n++] = (struct sysagg_waiting){
      s->vmstate, s->labels, sample_trace(agg, s), p->nframes, s->nframes};
  p->nframes += s->nframes;
}

void sysagg_sample(void *ud, const struct sysprof_sample *s) {
  struct sysagg *agg = ud;
  if (jitagg_sample(&agg->jit, s) != SIZE_MAX) {
    wait_outcome(agg, s);
  } else if (s->has_jit && s->vmstate == VMSTATE_EXIT) {
    sbuf_reset(&agg->label);
    sbuf_printf(&agg->label, "[exit] TRACE %" PRIu64 " exit %" PRIu64,
                s->jit_trace, s->jit_exit);
    count_labelled(agg, s->vmstate, s->jit_trace, s->labels, s->frames,
                   s->nframes, sbuf_cstr(&agg->label));
  } else {
    count_sample(agg, s->vmstate, sample_trace(agg, s), s->labels, s->frames,
                 s->nframes, frames_key(s));
  }
}

void sysagg_jit(void *ud, const struct sysprof_jit_event *e) {
  struct sysagg *agg = ud;
  struct jit_attempt was = agg->jit.cur;
  jitagg_event(&agg->jit, e);
  if (!was.active || (agg->jit.cur.active && e->kind != JIT_START)) return;
  enum jit_outcome outcome = OUTCOME_UNKNOWN;
  if (e->trace == was.trace && e->kind == JIT_END) outcome = OUTCOME_COMPILED;
  if (e->trace == was.trace && e->kind == JIT_ABORT) outcome = OUTCOME_ABORTED;
  count_pending(agg, attempt_label(agg, was.start, outcome, e));
}

void sysagg_finish(struct sysagg *agg) {
  if (agg->pending.n)
    count_pending(agg, attempt_label(agg, agg->jit.cur.start,
                                     OUTCOME_UNKNOWN, NULL));
  count_stacks(agg);
  keymap_free(&agg->stack_of_frames); /* the next stream numbers its own */
  jitagg_finish(&agg->jit);
}

void sysagg_next_stream(struct sysagg *agg, uint32_t stream) {
  agg->stream = stream;
}

/* The stream's stacks after the merge's: a stream's stacks are its own,
** so none is met again (nor looked up: stack_index leaves them out). */
static void merge_stacks(struct sysagg *into, const struct sysagg *from,
                         const struct symimport *map) {
  size_t base = into->nframes;
  grow_mapped((void **)&into->frames, &into->frames_cap, base + from->nframes,
              sizeof *into->frames);
  for (size_t i = 0; i < from->nframes; i++) {
    struct sysagg_frame f = from->frames[i];
    f.loc = map->loc[f.loc];
    f.func = map->loc[f.func];
    into->frames[base + i] = f;
  }
  into->nframes = base + from->nframes;
  grow_mapped((void **)&into->stacks, &into->stacks_cap,
              into->nstacks + from->nstacks, sizeof *into->stacks);
  for (size_t i = 0; i < from->nstacks; i++) {
    struct sysagg_stack st = from->stacks[i];
    st.first += (uint32_t)base;
    st.labels = map->labels[st.labels];
    into->stacks[into->nstacks++] = st;
  }
}

static void merge_table(struct sysagg_table *into,
                        const struct sysagg_table *from, const uint32_t *loc) {
  for (size_t i = 0; i < from->cap; i++) {
    const struct sysagg_counts *f = &from->items[i];
    if (!f->total) continue;
    struct sysagg_counts *t = counts_of(into, loc[i]);
    t->self = add_sat(t->self, f->self);
    t->total = add_sat(t->total, f->total);
  }
}

void sysagg_merge(struct sysagg *into, const struct sysagg *from,
                  const struct symimport *map) {
  merge_stacks(into, from, map);
  merge_table(&into->funcs, &from->funcs, map->loc);
  merge_table(&into->lines, &from->lines, map->loc);
  into->samples = add_sat(into->samples, from->samples);
  into->line_unknown = add_sat(into->line_unknown, from->line_unknown);
  for (unsigned s = 0; s < VMSTATE_COUNT; s++)
    into->by_vmstate[s] = add_sat(into->by_vmstate[s], from->by_vmstate[s]);
  for (size_t i = 0; i < from->label_cap; i++)
    if (from->label_samples[i])
      count_labels(into, map->labels[i], from->label_samples[i]);
  jitagg_merge(&into->jit, &from->jit, map);
}

static int wall_clock(const struct sysprof_meta *m) {
  return m->clock == SYSPROF_CLOCK_MONOTONIC;
}

int sysagg_merge_meta(struct sysprof_meta *into,
                      const struct sysprof_meta *m, int first, char *why,
                      size_t size) {
  if (first) {
    *into = *m;
    return 1;
  }
  if (into->has_config && m->has_config) {
    if (m->interval_us != into->interval_us) {
      snprintf(why, size, "sampled every %" PRIu64 " us, the others every "
               "%" PRIu64 " us", m->interval_us, into->interval_us);
      return 0;
    }
    if (wall_clock(m) != wall_clock(into)) {
      snprintf(why, size, "sampled on %s, the others on %s",
               wall_clock(m) ? "wall time" : "CPU time",
               wall_clock(into) ? "wall time" : "CPU time");
      return 0;
    }
  } else if (m->has_config) {
    into->has_config = 1;
    into->mode = m->mode;
    into->interval_us = m->interval_us;
    into->clock = m->clock;
  }
  into->has_stats &= m->has_stats;
  into->samples = add_sat(into->samples, m->samples);
  for (unsigned s = 0; s < VMSTATE_COUNT; s++)
    into->by_vmstate[s] = add_sat(into->by_vmstate[s], m->by_vmstate[s]);
  into->dropped = add_sat(into->dropped, m->dropped);
  into->overruns = add_sat(into->overruns, m->overruns);
  into->elapsed_ns = add_sat(into->elapsed_ns, m->elapsed_ns);
  return 1;
}

uint64_t sysagg_samples(const struct sysagg *agg) {
  if (agg->filtered) {
    uint64_t n = 0;
    for (size_t i = 0; i < agg->label_cap; i++)
      n = add_sat(n, agg->label_samples[i]);
    return n;
  }
  return agg->meta.has_stats ? agg->meta.samples : agg->samples;
}

uint64_t sysagg_vmstate_samples(const struct sysagg *agg, unsigned state) {
  return agg->meta.has_stats && !agg->filtered ? agg->meta.by_vmstate[state]
                                               : agg->by_vmstate[state];
}

int sysagg_rate(const struct sysagg *agg, double *achieved, double *asked) {
  const struct sysprof_meta *m = &agg->meta;
  if (agg->filtered || !m->has_config || !m->has_stats || m->interval_us == 0 ||
      m->elapsed_ns == 0)
    return 0;
  *achieved = (double)m->samples / ((double)m->elapsed_ns / 1e9);
  *asked = 1e6 / (double)m->interval_us;
  return 1;
}

uint32_t *sysagg_rank(const struct sysagg_table *t, enum sysagg_key key,
                      size_t *count) {
  struct rank_item *items = xmalloc(t->cap * sizeof *items);
  size_t n = 0;
  for (size_t id = 0; id < t->cap; id++) {
    const struct sysagg_counts *c = &t->items[id];
    if (c->total == 0) continue;
    items[n++] = key == KEY_SELF
                     ? (struct rank_item){c->self, c->total, (uint32_t)id}
                     : (struct rank_item){c->total, c->self, (uint32_t)id};
  }
  *count = n;
  return rank_ids(items, n);
}

uint32_t *sysagg_rank_stacks(const struct sysagg *agg) {
  struct rank_item *items = xmalloc(agg->nstacks * sizeof *items);
  for (size_t i = 0; i < agg->nstacks; i++)
    items[i] = (struct rank_item){agg->stacks[i].count, 0, (uint32_t)i};
  return rank_ids(items, agg->nstacks);
}
