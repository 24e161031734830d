/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "profile.h"

#include <stdlib.h>
#include <string.h>

#include "labels.h"

static const struct profile_sample_type cpu_types[] = {
    {"samples", "count"}, {"cpu", "nanoseconds"}};

static const struct profile_sample_type memory_types[] = {
    {"alloc_objects", "count"},
    {"alloc_space", "bytes"},
    {"inuse_objects", "count"},
    {"inuse_space", "bytes"}};

static void profile_init(struct profile *p, enum profile_kind kind,
                         const char *source, const struct symbols *sym,
                         const struct reader *r) {
  memset(p, 0, sizeof *p);
  p->kind = kind;
  p->source = source;
  p->sym = sym;
  p->reader = r;
  p->types = kind == PROFILE_CPU ? cpu_types : memory_types;
  p->ntypes = kind == PROFILE_CPU ? 2 : 4;
}

void profile_free(struct profile *p) {
  free(p->frames);
  hashtab_free(&p->frame_index);
  free(p->stack_frames);
  free(p->stacks);
  memset(p, 0, sizeof *p);
}

struct frame_probe {
  const struct profile *p;
  struct profile_frame frame;
};

static int same_frame(const void *ctx, uint32_t id) {
  const struct frame_probe *probe = ctx;
  const struct profile_frame *f = &probe->p->frames[id];
  return f->loc == probe->frame.loc && f->func == probe->frame.func;
}

static uint32_t frame_id(struct profile *p, uint32_t loc, uint32_t func) {
  struct frame_probe probe = {p, {loc, func}};
  uint32_t hash = hash_u64((uint64_t)loc << 32 | func);
  uint32_t id = hashtab_find(&p->frame_index, hash, same_frame, &probe);
  if (id != HASHTAB_NONE) return id;
  grow_array((void **)&p->frames, &p->frames_cap, p->nframes + 1,
             sizeof *p->frames);
  id = (uint32_t)p->nframes++;
  p->frames[id] = probe.frame;
  hashtab_add(&p->frame_index, hash, id);
  return id;
}

static void push_frame(struct profile *p, uint32_t loc, uint32_t func,
                       uint32_t inlined) {
  grow_array((void **)&p->stack_frames, &p->stack_frames_cap,
             p->nstack_frames + 1, sizeof *p->stack_frames);
  p->stack_frames[p->nstack_frames++] =
      (struct profile_stack_frame){frame_id(p, loc, func), inlined};
}

struct ranked_stack {
  uint64_t value;
  size_t index;
};

static int by_value(const void *a, const void *b) {
  const struct ranked_stack *x = a, *y = b;
  if (x->value != y->value) return x->value > y->value ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* Order the stacks by the shown value, most first, then first seen. */
static void sort_stacks(struct profile *p) {
  struct ranked_stack *rank = xmalloc((p->nstacks + 1) * sizeof *rank);
  for (size_t i = 0; i < p->nstacks; i++)
    rank[i] = (struct ranked_stack){p->stacks[i].values[p->shown], i};
  qsort(rank, p->nstacks, sizeof *rank, by_value);
  struct profile_stack *sorted = xmalloc((p->nstacks + 1) * sizeof *sorted);
  for (size_t i = 0; i < p->nstacks; i++) sorted[i] = p->stacks[rank[i].index];
  free(p->stacks);
  free(rank);
  p->stacks = sorted;
}

/* Sort, and sum the values. */
static void finish(struct profile *p) {
  sort_stacks(p);
  for (size_t i = 0; i < p->nstacks; i++)
    for (size_t v = 0; v < p->ntypes; v++)
      p->totals[v] = add_sat(p->totals[v], p->stacks[i].values[v]);
}

/* Stacks with the same frames, VM state and trace: one but for their
** streams. */
static uint32_t hash_stack_frames(const struct profile *p,
                                  const struct profile_stack *st) {
  uint64_t h = (UINT64_C(0xcbf29ce484222325) ^ st->vmstate ^ st->trace << 8) *
               UINT64_C(0x100000001b3);
  for (uint32_t f = 0; f < st->depth; f++) {
    const struct profile_stack_frame *sf = &p->stack_frames[st->first + f];
    h = (h ^ ((uint64_t)sf->frame << 1 | sf->inlined)) *
        UINT64_C(0x100000001b3);
  }
  return hash_u64(h);
}

struct fold_probe {
  const struct profile *p;
  const struct profile_stack *st;
};

static int same_folded(const void *ctx, uint32_t id) {
  const struct fold_probe *probe = ctx;
  const struct profile *p = probe->p;
  const struct profile_stack *a = &p->stacks[id], *b = probe->st;
  return a->depth == b->depth && a->vmstate == b->vmstate &&
         a->trace == b->trace && a->stream == b->stream &&
         a->labels == b->labels &&
         memcmp(&p->stack_frames[a->first], &p->stack_frames[b->first],
                a->depth * sizeof *p->stack_frames) == 0;
}

/* Stacks the same once streams (or label sets) are forgotten made one. */
static void fold(struct profile *p, int streams, int labels) {
  struct hashtab index = {0};
  size_t kept = 0;
  for (size_t s = 0; s < p->nstacks; s++) {
    struct profile_stack st = p->stacks[s];
    if (streams) st.stream = 0;
    if (labels) st.labels = LABELS_NONE;
    struct fold_probe probe = {p, &st};
    uint32_t hash = hash_stack_frames(p, &st);
    uint32_t id = hashtab_find(&index, hash, same_folded, &probe);
    if (id == HASHTAB_NONE) {
      p->stacks[kept] = st;
      hashtab_add(&index, hash, (uint32_t)kept++);
      continue;
    }
    for (size_t v = 0; v < p->ntypes; v++)
      p->stacks[id].values[v] = add_sat(p->stacks[id].values[v], st.values[v]);
  }
  hashtab_free(&index);
  p->nstacks = kept;
  sort_stacks(p);
}

void profile_fold_streams(struct profile *p) { fold(p, 1, 0); }

void profile_fold_labels(struct profile *p) { fold(p, 0, 1); }

void profile_label_frames(struct profile *p, struct symbols *sym,
                          uint32_t key) {
  struct profile_stack_frame *old = p->stack_frames;

  struct sbuf name = {0};
  p->stack_frames = NULL;
  p->nstack_frames = p->stack_frames_cap = 0;
  for (size_t s = 0; s < p->nstacks; s++) {
    struct profile_stack *st = &p->stacks[s];
    uint32_t first = (uint32_t)p->nstack_frames;
    for (uint32_t f = 0; f < st->depth; f++) {
      const struct profile_stack_frame *sf = &old[st->first + f];
      uint32_t frame = sf->frame;
      push_frame(p, p->frames[frame].loc, p->frames[frame].func, sf->inlined);
    }
    sbuf_reset(&name);
    labels_format_value(sym, labels_value_of(sym, st->labels, key), &name);
    uint32_t loc = symbols_loc_label(sym, sbuf_cstr(&name));
    push_frame(p, loc, loc, 0);
    st->first = first;
    st->depth++;
  }
  free(old);
  sbuf_free(&name);
}

static uint64_t mul_sat(uint64_t a, uint64_t b) {
  return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

void profile_from_sysprof(struct profile *p, const char *source,
                          const struct sysagg *agg, const struct reader *r) {
  profile_init(p, PROFILE_CPU, source, agg->sym, r);
  const struct sysprof_meta *m = &agg->meta;
  if (m->has_config) p->period = mul_sat(m->interval_us, 1000);
  if (m->has_stats) p->duration_ns = m->elapsed_ns;
  p->stacks = xmalloc((agg->nstacks ? agg->nstacks : 1) * sizeof *p->stacks);
  for (size_t s = 0; s < agg->nstacks; s++) {
    const struct sysagg_stack *st = &agg->stacks[s];
    struct profile_stack *out = &p->stacks[p->nstacks++];
    *out = (struct profile_stack){(uint32_t)p->nstack_frames, st->depth,
                                  {st->count, mul_sat(st->count, p->period)},
                                  st->vmstate, st->trace, st->stream,
                                  st->labels};
    for (size_t f = 0; f < st->depth; f++) {
      const struct sysagg_frame *frame = &agg->frames[st->first + f];
      push_frame(p, frame->loc, frame->func, frame->inlined);
    }
  }
  finish(p);
}

/* A site without a stack: it, and for the JIT compiler's, its trace's
** start and the compiler above it (a flame graph's one box for each). */
static void push_site(struct profile *p, uint32_t site) {
  for (uint32_t loc = site; loc != SYMBOLS_NONE;
       loc = symbols_vm_parent(p->sym, loc))
    push_frame(p, loc, loc, 0);
}

/* A (site, stack) pair's frames: the site, unless the stack's innermost
** frame is it already (it always is but for traces that could not tell
** their line), then the stack. */
static void push_pair_frames(struct profile *p, const struct stackpair *pair) {
  uint32_t depth;
  const struct symframe *f = symbols_stack(p->sym, pair->stack, &depth);
  if (!depth) push_site(p, pair->site);
  else if (f[0].loc != pair->site) push_frame(p, pair->site, pair->site, 0);
  for (uint32_t i = 0; i < depth; i++) push_frame(p, f[i].loc, f[i].func, 0);
}

/* Streams with stacks: a stack per (site, stack) pair. */
static void memprof_pair_stacks(struct profile *p, const struct memagg *agg) {
  p->stacks = xmalloc((agg->npairs ? agg->npairs : 1) * sizeof *p->stacks);
  for (size_t i = 0; i < agg->npairs; i++) {
    const struct stackpair *pair = &agg->pairs[i];
    if (!pair->alloc_objects && !pair->live_objects) continue;
    struct profile_stack *out = &p->stacks[p->nstacks++];
    *out = (struct profile_stack){.first = (uint32_t)p->nstack_frames};
    out->values[MEM_ALLOC_OBJECTS] = pair->alloc_objects;
    out->values[MEM_ALLOC_SPACE] = pair->alloc_bytes;
    out->values[MEM_INUSE_OBJECTS] = pair->live_objects;
    out->values[MEM_INUSE_SPACE] = pair->live_bytes;
    out->stream = pair->stream;
    out->labels = pair->labels;
    push_pair_frames(p, pair);
    out->depth = (uint32_t)(p->nstack_frames - out->first);
  }
}

void profile_from_memprof(struct profile *p, const char *source,
                          const struct memagg *agg, const struct reader *r,
                          int leak_only, enum memagg_order count) {
  profile_init(p, PROFILE_MEMORY, source, agg->sym, r);
  int bytes = count == ORDER_BYTES;
  p->shown = leak_only ? (bytes ? MEM_INUSE_SPACE : MEM_INUSE_OBJECTS)
                       : (bytes ? MEM_ALLOC_SPACE : MEM_ALLOC_OBJECTS);
  p->sample = agg->sym->memprof.sample;
  p->heap = &agg->heap;
  if (memagg_has_stacks(agg)) {
    memprof_pair_stacks(p, agg);
    finish(p);
    return;
  }
  p->stacks = xmalloc((agg->nstats ? agg->nstats : 1) * sizeof *p->stacks);
  for (size_t loc = 0; loc < agg->nstats; loc++) {
    const struct memstats *st = &agg->stats[loc];
    uint64_t values[PROFILE_MAX_VALUES], realloc_events, realloc_bytes;
    memagg_view(st, VIEW_ALLOC, &values[MEM_ALLOC_OBJECTS],
                &values[MEM_ALLOC_SPACE]);
    memagg_view(st, VIEW_REALLOC, &realloc_events, &realloc_bytes);
    values[MEM_ALLOC_OBJECTS] = add_sat(values[MEM_ALLOC_OBJECTS], realloc_events);
    values[MEM_ALLOC_SPACE] = add_sat(values[MEM_ALLOC_SPACE], realloc_bytes);
    memagg_view(st, VIEW_LIVE, &values[MEM_INUSE_OBJECTS],
                &values[MEM_INUSE_SPACE]);
    if (!values[MEM_ALLOC_OBJECTS] && !values[MEM_INUSE_OBJECTS]) continue;
    struct profile_stack *out = &p->stacks[p->nstacks++];
    *out = (struct profile_stack){.first = (uint32_t)p->nstack_frames};
    memcpy(out->values, values, sizeof values);
    push_site(p, (uint32_t)loc);
    out->depth = (uint32_t)(p->nstack_frames - out->first);
  }
  finish(p);
}

/* Append bytes, a newline written as the two characters '\n'. */
static void add_one_line(struct sbuf *sb, const char *data, size_t len) {
  if (!len) return;
  for (const char *nl; (nl = memchr(data, '\n', len));) {
    sbuf_add(sb, data, (size_t)(nl - data));
    sbuf_add(sb, "\\n", 2);
    len -= (size_t)(nl - data) + 1;
    data = nl + 1;
  }
  sbuf_add(sb, data, len);
}

static void format_one_line(const struct symbols *sym, uint32_t loc,
                            int function, struct sbuf *sb) {
  struct sbuf name = {0};
  if (function)
    symbols_format_function(sym, loc, NULL, &name);
  else
    symbols_format(sym, loc, NULL, &name);
  add_one_line(sb, name.data, name.len);
  sbuf_free(&name);
}

void profile_frame_name(const struct profile *p, uint32_t frame,
                        struct sbuf *sb) {
  format_one_line(p->sym, p->frames[frame].loc, 0, sb);
}

void profile_function_name(const struct profile *p, uint32_t frame,
                           struct sbuf *sb) {
  format_one_line(p->sym, p->frames[frame].func, 1, sb);
}

int profile_frame_source(const struct profile *p, uint32_t frame,
                         int function_line, struct sbuf *sb, int64_t *line) {
  const struct profile_frame *f = &p->frames[frame];
  const struct location *loc =
      &p->sym->locations[function_line ? f->func : f->loc];
  switch ((enum loc_kind)loc->kind) {
  case LOC_LUA:
  case LOC_TRACE:
  case LOC_TRACE_FRAME:
    break;
  case LOC_VM: /* the compiler's: where its trace starts */
    if (loc->line == SYMBOLS_LINE_UNKNOWN) return 0;
    break;
  default:
    return 0;
  }
  if (loc->name == SYMBOLS_NONE) return 0;
  const struct symstring *chunk = &p->sym->strings[loc->name];
  size_t skip = chunk->len && chunk->data[0] == '@';
  add_one_line(sb, chunk->data + skip, chunk->len - skip);
  *line = (int64_t)loc->line;
  return 1;
}
