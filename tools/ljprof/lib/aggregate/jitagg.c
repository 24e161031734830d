/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "jitagg.h"

#include <stdlib.h>
#include <string.h>

void jitagg_init(struct jitagg *j, struct symbols *sym) {
  memset(j, 0, sizeof *j);
  j->sym = sym;
}

static void reasons_free(struct jit_reasons *r) { free(r->items); }

void jitagg_free(struct jitagg *j) {
  for (size_t i = 0; i < j->nstarts; i++) reasons_free(&j->starts[i].reasons);
  for (size_t i = 0; i < j->lines_cap; i++) reasons_free(&j->lines[i].reasons);
  for (size_t i = 0; i < j->funcs_cap; i++) reasons_free(&j->funcs[i]);
  free(j->funcs);
  reasons_free(&j->reasons);
  free(j->starts);
  free(j->lines);
  free(j->exits);
  keymap_free(&j->start_index);
  hashtab_free(&j->exit_index);
  keymap_free(&j->trace_start);
  memset(j, 0, sizeof *j);
}

/* Few distinct reasons meet at one place: a list is enough. */
static void reasons_count(struct jit_reasons *r, uint32_t reason,
                          uint64_t n) {
  for (size_t i = 0; i < r->n; i++)
    if (r->items[i].reason == reason) {
      r->items[i].count = add_sat(r->items[i].count, n);
      return;
    }
  grow_array((void **)&r->items, &r->cap, r->n + 1, sizeof *r->items);
  r->items[r->n++] = (struct jit_reason_count){reason, n};
}

static void reasons_add(struct jit_reasons *r, uint32_t reason) {
  reasons_count(r, reason, 1);
}

static int by_reason_count(const void *a, const void *b) {
  const struct jit_reason_count *x = a, *y = b;
  if (x->count != y->count) return x->count > y->count ? -1 : 1;
  return (x->reason > y->reason) - (x->reason < y->reason);
}

void jitagg_sort_reasons(struct jit_reasons *r) {
  qsort(r->items, r->n, sizeof *r->items, by_reason_count);
}

static struct jit_line *line_of(struct jitagg *j, uint32_t loc) {
  size_t old = j->lines_cap;
  grow_array_zeroed((void **)&j->lines, &j->lines_cap, (size_t)loc + 1,
                    sizeof *j->lines);
  for (size_t i = old; i < j->lines_cap; i++) j->lines[i].func = SYMBOLS_NONE;
  return &j->lines[loc];
}

static struct jit_reasons *func_of(struct jitagg *j, uint32_t func) {
  grow_array_zeroed((void **)&j->funcs, &j->funcs_cap, (size_t)func + 1,
                    sizeof *j->funcs);
  return &j->funcs[func];
}

static size_t start_of(struct jitagg *j, uint32_t loc, uint32_t func,
                       unsigned kind) {
  uint64_t key = (uint64_t)loc << 2 | (kind & 3);
  uint32_t i = keymap_get(&j->start_index, key);
  if (i != HASHTAB_NONE) return i;
  grow_array((void **)&j->starts, &j->starts_cap, j->nstarts + 1,
             sizeof *j->starts);
  memset(&j->starts[j->nstarts], 0, sizeof *j->starts);
  j->starts[j->nstarts].loc = loc;
  j->starts[j->nstarts].func = func;
  j->starts[j->nstarts].kind = kind;
  keymap_put(&j->start_index, key, (uint32_t)j->nstarts);
  return j->nstarts++;
}

/* Where a start or stop names no Lua line. */
static uint32_t loc_or_label(struct jitagg *j, uint32_t loc) {
  return loc != SYMBOLS_NONE ? loc : symbols_loc_label(j->sym, "(not Lua)");
}

static void on_start(struct jitagg *j, const struct sysprof_jit_event *e) {
  size_t s = start_of(j, loc_or_label(j, e->loc), e->func, e->how);
  j->started = add_sat(j->started, 1);
  j->starts[s].attempts = add_sat(j->starts[s].attempts, 1);
  j->cur = (struct jit_attempt){1, e->trace, (uint32_t)s, 0};
  keymap_put(&j->trace_start, e->trace, (uint32_t)s);
}

/* The attempt under way ends; its samples learn their outcome. */
static void end_attempt(struct jitagg *j, enum jit_outcome outcome) {
  struct jit_start *st = &j->starts[j->cur.start];
  st->samples[outcome] = add_sat(st->samples[outcome], j->cur.samples);
  j->cur.active = 0;
}

void jitagg_finish(struct jitagg *j) {
  if (j->cur.active) end_attempt(j, OUTCOME_UNKNOWN);
  keymap_free(&j->trace_start);
}

static void on_abort(struct jitagg *j, const struct sysprof_jit_event *e) {
  uint32_t reason = symbols_intern(j->sym, e->reason, e->reason_len);
  j->aborted = add_sat(j->aborted, 1);
  reasons_add(&j->reasons, reason);
  if (j->cur.active && j->cur.trace == e->trace) {
    struct jit_start *st = &j->starts[j->cur.start];
    st->aborted = add_sat(st->aborted, 1);
    reasons_add(&st->reasons, reason);
    if (st->loc != e->loc && st->loc < j->sym->nlocations)
      reasons_add(&line_of(j, st->loc)->reasons, reason);
    if (st->func != SYMBOLS_NONE) reasons_add(func_of(j, st->func), reason);
    end_attempt(j, OUTCOME_ABORTED);
  }
  if (e->loc != SYMBOLS_NONE) reasons_add(&line_of(j, e->loc)->reasons, reason);
}

static void on_end(struct jitagg *j, const struct sysprof_jit_event *e) {
  j->compiled = add_sat(j->compiled, 1);
  if (j->cur.active && j->cur.trace == e->trace) {
    struct jit_start *st = &j->starts[j->cur.start];
    st->compiled = add_sat(st->compiled, 1);
    end_attempt(j, OUTCOME_COMPILED);
  }
}

/* A start location blacklisted: the roots that started there. */
static void on_blacklist(struct jitagg *j, const struct sysprof_jit_event *e) {
  uint32_t loc = loc_or_label(j, e->loc);
  uint32_t i = keymap_get(&j->start_index, (uint64_t)loc << 2 | LJP_TRACE_ROOT);
  j->blacklisted = add_sat(j->blacklisted, 1);
  if (i != HASHTAB_NONE)
    j->starts[i].blacklisted = add_sat(j->starts[i].blacklisted, 1);
  struct jit_line *l = line_of(j, loc);
  l->blacklisted = add_sat(l->blacklisted, 1);
}

struct exit_probe {
  const struct jitagg *j;
  struct jit_exit key;
};

static int same_exit(const void *ctx, uint32_t id) {
  const struct exit_probe *p = ctx;
  const struct jit_exit *x = &p->j->exits[id];
  return x->start == p->key.start && x->loc == p->key.loc &&
         x->exit == p->key.exit;
}

/* The exit told apart by start, loc and exit: its index, added if new. */
static uint32_t exit_of(struct jitagg *j, uint32_t start, uint32_t loc,
                        uint64_t exit) {
  struct exit_probe probe = {j, {start, loc, exit, 0, 0}};
  uint32_t hash = hash_u64(((uint64_t)start << 32 | loc) ^
                           (exit * UINT64_C(0x9E3779B97F4A7C15)));
  uint32_t i = hashtab_find(&j->exit_index, hash, same_exit, &probe);
  if (i == HASHTAB_NONE) {
    grow_array((void **)&j->exits, &j->exits_cap, j->nexits + 1,
               sizeof *j->exits);
    i = (uint32_t)j->nexits++;
    j->exits[i] = probe.key;
    hashtab_add(&j->exit_index, hash, i);
  }
  return i;
}

static void on_exit(struct jitagg *j, const struct sysprof_jit_event *e) {
  uint32_t start = keymap_get(&j->trace_start, e->trace);
  uint32_t i = exit_of(j, start, e->loc, e->exit); /* may move exits */
  struct jit_exit *x = &j->exits[i];
  x->trace = e->trace;
  x->count = add_sat(x->count, e->count);
  j->exits_total = add_sat(j->exits_total, e->count);
}

void jitagg_event(struct jitagg *j, const struct sysprof_jit_event *e) {
  j->has_events = 1;
  switch (e->kind) {
  case JIT_STATE:
    j->jit_on |= e->how != 0;
    break;
  case JIT_START:
    if (j->cur.active) end_attempt(j, OUTCOME_UNKNOWN);
    on_start(j, e);
    break;
  case JIT_END:
    on_end(j, e);
    break;
  case JIT_ABORT:
    on_abort(j, e);
    break;
  case JIT_BLACKLIST:
    on_blacklist(j, e);
    break;
  case JIT_FLUSH:
    j->flushes[e->how < 3 ? e->how : LJP_FLUSH_ASKED]++;
    break;
  case JIT_EXIT:
    on_exit(j, e);
    break;
  }
}

static int interpreted(enum vmstate s) {
  return s == VMSTATE_INTERP || s == VMSTATE_LFUNC || s == VMSTATE_FFUNC ||
         s == VMSTATE_CFUNC;
}

size_t jitagg_sample(struct jitagg *j, const struct sysprof_sample *s) {
  if (s->vmstate == VMSTATE_RECORD || s->vmstate == VMSTATE_OPT ||
      s->vmstate == VMSTATE_ASM) {
    j->compile_samples = add_sat(j->compile_samples, 1);
    if (j->cur.active && (!s->has_jit || s->jit_trace == j->cur.trace)) {
      j->cur.samples = add_sat(j->cur.samples, 1);
      return j->cur.start;
    }
    j->compile_unattributed = add_sat(j->compile_unattributed, 1);
    return SIZE_MAX;
  }
  if (interpreted(s->vmstate))
    for (size_t i = 0; i < s->nframes; i++) {
      uint32_t kind = j->sym->locations[s->frames[i].loc].kind;
      if (kind == LOC_LUA || kind == LOC_LUA_NOLINE ||
          kind == LOC_LUA_UNKNOWN) {
        struct jit_line *l = line_of(j, s->frames[i].loc);
        l->interpreted = add_sat(l->interpreted, 1);
        l->func = s->frames[i].func;
        break;
      }
    }
  return SIZE_MAX;
}

uint32_t *jitagg_rank_starts(const struct jitagg *j) {
  struct rank_item *items = xmalloc((j->nstarts ? j->nstarts : 1) *
                                    sizeof *items);
  for (size_t i = 0; i < j->nstarts; i++) {
    const struct jit_start *s = &j->starts[i];
    uint64_t samples = add_sat(add_sat(s->samples[0], s->samples[1]),
                               s->samples[2]);
    items[i] = (struct rank_item){samples, s->attempts, (uint32_t)i};
  }
  return rank_ids(items, j->nstarts);
}

uint32_t *jitagg_rank_lines(const struct jitagg *j, size_t *count) {
  struct rank_item *items = xmalloc((j->lines_cap ? j->lines_cap : 1) *
                                    sizeof *items);
  size_t n = 0;
  for (size_t i = 0; i < j->lines_cap; i++) {
    const struct jit_line *l = &j->lines[i];
    uint64_t told = l->blacklisted;
    for (size_t r = 0; r < l->reasons.n; r++)
      told = add_sat(told, l->reasons.items[r].count);
    if (l->interpreted || told)
      items[n++] = (struct rank_item){l->interpreted, told, (uint32_t)i};
  }
  *count = n;
  return rank_ids(items, n);
}

uint32_t *jitagg_rank_exits(const struct jitagg *j) {
  struct rank_item *items = xmalloc((j->nexits ? j->nexits : 1) *
                                    sizeof *items);
  for (size_t i = 0; i < j->nexits; i++)
    items[i] = (struct rank_item){j->exits[i].count, 0, (uint32_t)i};
  return rank_ids(items, j->nexits);
}

/* -- Merging ---------------------------------------------------------- */

static void reasons_merge(struct jit_reasons *into,
                          const struct jit_reasons *from,
                          const uint32_t *strings) {
  for (size_t i = 0; i < from->n; i++)
    reasons_count(into, strings[from->items[i].reason], from->items[i].count);
}

static void sum(uint64_t *into, uint64_t n) { *into = add_sat(*into, n); }

/* The stream's starts added: *starts maps its indices to the merge's. */
static uint32_t *merge_starts(struct jitagg *into, const struct jitagg *from,
                              const struct symimport *map) {
  uint32_t *starts = xmalloc((from->nstarts + 1) * sizeof *starts);
  for (size_t i = 0; i < from->nstarts; i++) {
    const struct jit_start *f = &from->starts[i];
    starts[i] = (uint32_t)start_of(into, map->loc[f->loc],
                                   symimport_loc(map, f->func), f->kind);
    struct jit_start *t = &into->starts[starts[i]];
    sum(&t->attempts, f->attempts);
    sum(&t->compiled, f->compiled);
    sum(&t->aborted, f->aborted);
    sum(&t->blacklisted, f->blacklisted);
    for (int o = 0; o < 3; o++) sum(&t->samples[o], f->samples[o]);
    reasons_merge(&t->reasons, &f->reasons, map->strings);
    /* Its aborts' reasons, which the stream gave its function, go to
    ** that of the start as the merge knows it (first seen). */
    if (t->func != SYMBOLS_NONE)
      reasons_merge(func_of(into, t->func), &f->reasons, map->strings);
  }
  return starts;
}

/* A blacklisting in the stream that found no root started at its line
** there (the line counts it, the start does not) finds one the streams
** before made (as read after them: below `had` of the merge's starts). */
static void credit_blacklists(struct jitagg *into, const struct jitagg *from,
                              uint32_t from_loc, uint32_t loc, size_t had) {
  uint64_t found = 0;
  uint32_t i = keymap_get(&from->start_index,
                          (uint64_t)from_loc << 2 | LJP_TRACE_ROOT);
  if (i != HASHTAB_NONE) found = from->starts[i].blacklisted;
  i = keymap_get(&into->start_index, (uint64_t)loc << 2 | LJP_TRACE_ROOT);
  if (i != HASHTAB_NONE && i < had)
    sum(&into->starts[i].blacklisted,
        from->lines[from_loc].blacklisted - found);
}

static void merge_lines(struct jitagg *into, const struct jitagg *from,
                        const struct symimport *map, size_t had) {
  for (uint32_t i = 0; i < from->lines_cap; i++) {
    const struct jit_line *f = &from->lines[i];
    if (!f->interpreted && !f->blacklisted && !f->reasons.n) continue;
    if (f->blacklisted) credit_blacklists(into, from, i, map->loc[i], had);
    struct jit_line *t = line_of(into, map->loc[i]);
    sum(&t->interpreted, f->interpreted);
    sum(&t->blacklisted, f->blacklisted);
    reasons_merge(&t->reasons, &f->reasons, map->strings);
    if (f->func != SYMBOLS_NONE) t->func = map->loc[f->func];
  }
}

static void merge_exits(struct jitagg *into, const struct jitagg *from,
                        const struct symimport *map, const uint32_t *starts) {
  for (size_t i = 0; i < from->nexits; i++) {
    const struct jit_exit *f = &from->exits[i];
    uint32_t start = f->start == HASHTAB_NONE ? f->start : starts[f->start];
    uint32_t x = exit_of(into, start, symimport_loc(map, f->loc), f->exit);
    struct jit_exit *t = &into->exits[x];
    t->trace = f->trace;
    sum(&t->count, f->count);
  }
  sum(&into->exits_total, from->exits_total);
}

void jitagg_merge(struct jitagg *into, const struct jitagg *from,
                  const struct symimport *map) {
  into->has_events |= from->has_events;
  into->jit_on |= from->jit_on;
  sum(&into->started, from->started);
  sum(&into->compiled, from->compiled);
  sum(&into->aborted, from->aborted);
  sum(&into->blacklisted, from->blacklisted);
  for (int f = 0; f < 3; f++) sum(&into->flushes[f], from->flushes[f]);
  sum(&into->compile_samples, from->compile_samples);
  sum(&into->compile_unattributed, from->compile_unattributed);
  reasons_merge(&into->reasons, &from->reasons, map->strings);
  size_t had = into->nstarts;
  uint32_t *starts = merge_starts(into, from, map);
  merge_lines(into, from, map, had);
  merge_exits(into, from, map, starts);
  free(starts);
}
