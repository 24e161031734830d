/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The JIT's story in a CPU profile: what the trace compiler did (traces
** started, made, aborted and why, starts blacklisted, flushes, exits
** taken), joined to the samples: compiler time charged to the trace
** being compiled and its outcome, interpreted time by Lua line beside
** the reasons the compiler gave up there.
**
** Events and samples come in the order the VM made them: a sample in the
** compiler (RECORD, OPT, ASM) belongs to the last trace started. Memory
** grows with the distinct start locations, reasons, lines and exits, not
** with the events: a trace made again a thousand times is one entry.
*/
#ifndef LJPROF_JITAGG_H
#define LJPROF_JITAGG_H

#include <stddef.h>
#include <stdint.h>

#include "shared/hashtab.h"
#include "shared/symbols.h"
#include "shared/symimport.h"
#include "decode/sysprof.h"

/* What became of an attempt to compile a trace. */
enum jit_outcome { OUTCOME_COMPILED, OUTCOME_ABORTED, OUTCOME_UNKNOWN };

/* A reason the compiler gave, counted where it applies. */
struct jit_reason_count {
  uint32_t reason; /* string id */
  uint64_t count;
};

struct jit_reasons {
  struct jit_reason_count *items;
  size_t n, cap;
};

/* A location traces started at: root traces at their loop or function,
** side traces at the exit they leave (kind LJP_TRACE_*). */
struct jit_start {
  uint32_t loc, func;
  unsigned kind;
  uint64_t attempts, compiled, aborted, blacklisted;
  uint64_t samples[3]; /* compiler samples by outcome (enum jit_outcome) */
  struct jit_reasons reasons; /* of its aborts */
};

/* A Lua line: interpreted samples there, and the compiler's aborts that
** stopped recording there or started there, and blacklistings; and its
** function (a frame's func), whose traces' aborts tell why a line
** without its own was not compiled either. A function: the aborts of
** traces started in it. */
struct jit_line {
  uint64_t interpreted, blacklisted;
  struct jit_reasons reasons;
  uint32_t func; /* SYMBOLS_NONE: not known */
};

/* Exits are told apart by the trace's start, the exit's number and where
** it resumes: a trace made again and again has the same exits. */
struct jit_exit {
  uint32_t start; /* index in starts; UINT32_MAX: started before the profile */
  uint32_t loc;   /* where it resumes, SYMBOLS_NONE if not in Lua */
  uint64_t exit, count;
  uint64_t trace; /* the number of the trace that took it last */
};

/* The trace being compiled: the last started. */
struct jit_attempt {
  int active;
  uint64_t trace;
  uint32_t start; /* index in starts */
  uint64_t samples;
};

struct jitagg {
  struct symbols *sym;
  int has_events; /* the stream has the compiler's events (ljp v3 now) */
  int jit_on;     /* the compiler was on at the start (of any stream) */
  uint64_t started, compiled, aborted, blacklisted;
  uint64_t flushes[3]; /* by LJP_FLUSH_* */
  uint64_t compile_samples, compile_unattributed;
  uint64_t exits_total;
  struct jit_start *starts;
  size_t nstarts, starts_cap;
  struct keymap start_index; /* loc << 2 | kind -> index */
  struct jit_line *lines;    /* by location id */
  size_t lines_cap;
  struct jit_reasons *funcs; /* by location id of a function */
  size_t funcs_cap;
  struct jit_exit *exits;
  size_t nexits, exits_cap;
  struct hashtab exit_index;
  struct keymap trace_start; /* trace number -> its start's index */
  struct jit_reasons reasons; /* every abort, by reason */
  struct jit_attempt cur;
};

void jitagg_init(struct jitagg *j, struct symbols *sym);
void jitagg_free(struct jitagg *j);

/* An event; a sample. Returns, for a sample, the start it is charged to
** (an index in starts), or SIZE_MAX. */
void jitagg_event(struct jitagg *j, const struct sysprof_jit_event *e);
size_t jitagg_sample(struct jitagg *j, const struct sysprof_sample *s);

/* At the end of the stream: an attempt under way keeps its samples, its
** outcome unknown; the trace numbers are forgotten (a next stream's, in a
** merge, are another process's). */
void jitagg_finish(struct jitagg *j);

/* After jitagg_finish() of both: a stream's story, its ids made the
** merge's by map, added to the merge's as if read after it there. */
void jitagg_merge(struct jitagg *into, const struct jitagg *from,
                  const struct symimport *map);

/* A line's story, NULL when it has none. */
static inline const struct jit_line *jitagg_line(const struct jitagg *j,
                                                 uint32_t loc) {
  return loc < j->lines_cap ? &j->lines[loc] : NULL;
}

/* The aborts of traces started in a function, NULL when none. */
static inline const struct jit_reasons *
jitagg_func_reasons(const struct jitagg *j, uint32_t func) {
  return func < j->funcs_cap && j->funcs[func].n ? &j->funcs[func] : NULL;
}

/* Indices of starts by compiler samples, then attempts (malloc'd). */
uint32_t *jitagg_rank_starts(const struct jitagg *j);
/* Location ids of lines with interpreted samples or reasons, most
** interpreted samples first (malloc'd; *count of them). */
uint32_t *jitagg_rank_lines(const struct jitagg *j, size_t *count);
/* Indices of exits, most taken first (malloc'd). */
uint32_t *jitagg_rank_exits(const struct jitagg *j);
/* Reasons sorted by count, most first (in place). */
void jitagg_sort_reasons(struct jit_reasons *r);

#endif
