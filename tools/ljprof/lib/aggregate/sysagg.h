/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Sysprof aggregation, as the samples stream: identical stacks counted
** once each (stacks are sequences of location ids, so memory grows
** with the distinct stacks, not with the samples), samples per VM state,
** and per function and per line the samples spent in it (self) and under
** it (total).
**
** - Functions: every frame's function (a Lua frame's proto, otherwise the
**   frame itself); self is the innermost frame's function.
** - Lines: frames of Lua (Lua lines, C and fast functions); self is the
**   innermost frame of Lua, so a line that calls C code, or runs in a
**   trace, is charged for the time spent there.
** - Total counts a sample once even when a function recurses.
** - A sample without frames is counted under the pseudo-frame `[STATE]`.
** - The compiler's events go to a jitagg (jitagg.h). A sample in the
**   compiler gets a frame `[JIT] trace @chunk:LINE: OUTCOME` below its
**   innermost Lua frame (above the Lua line that set the compiler off,
**   below the compiler's own frames): the trace being compiled and, known
**   only when that attempt ends, what became of it; such samples wait
**   for the outcome before they are counted. A sample in a trace exit
**   gets `[exit] TRACE n exit m` there.
** - Stacks are told apart by their VM state and trace too (pprof's
**   labels): a trace's code, an exit, or the compiler at work on one.
** - Streams merged (sysagg_next_stream()): stacks are told apart by the
**   stream they came from too; the rest is summed.
** - Labels (v4): stacks are told apart by the label set they were taken
**   under; the samples by set are counted (mode D's from its record).
*/
#ifndef LJPROF_SYSAGG_H
#define LJPROF_SYSAGG_H

#include <stddef.h>
#include <stdint.h>

#include "shared/hashtab.h"
#include "jitagg.h"
#include "shared/symbols.h"
#include "decode/sysprof.h"

/* A frame of a stack: what it is, the function it is in (for a Lua frame
** its proto, `@chunk:FIRSTLINE`; otherwise the frame itself), and whether a
** trace's machine code runs it inlined into the next frame (1) or not (0).
** Stacks that differ only there are distinct; the counts by function and
** by line do not tell them apart. Whether it is a frame of Lua
** (sysprof_frame.lua) is not part of the stack either: the stack keeps
** that of its first sample, what the counts by line of its samples go by. */
struct sysagg_frame {
  uint32_t loc, func, inlined, lua;
};

struct sysagg_stack {
  uint32_t first; /* index of its innermost frame in frames */
  uint32_t depth;
  uint64_t count;
  uint32_t vmstate;
  uint64_t trace; /* that ran, exited or was compiled; 0: none */
  uint32_t stream; /* of a merge: which one it came from (0: the first) */
  uint32_t labels; /* the label set it was taken under (labelsets.h) */
  /* Of count, the samples in the tables by function and by line (a sample
  ** whose frames of Lua are not the stack's is in the latter at once). */
  uint64_t funcs_counted, lines_counted;
};

/* Samples in the compiler waiting for their attempt's outcome. */
struct sysagg_waiting {
  uint32_t vmstate, labels;
  uint64_t trace;
  size_t first, n; /* its frames in sysagg_pending.frames */
};

struct sysagg_pending {
  struct sysagg_waiting *samples;
  size_t n, cap;
  struct sysprof_frame *frames;
  size_t nframes, frames_cap;
};

struct sysagg_counts {
  uint64_t self, total;
  uint64_t last_mark; /* the stack or sample that last counted it */
};

struct sysagg_table {
  struct sysagg_counts *items; /* by location id */
  size_t cap;
};

struct sysagg {
  struct symbols *sym;
  struct sysprof_meta meta;
  uint64_t samples; /* sample records decoded */
  uint64_t line_unknown; /* of those, with a Lua frame whose line is unknown
                            (after sysagg_finish()) */
  uint64_t by_vmstate[VMSTATE_COUNT];
  struct sysagg_frame *frames; /* the stacks' frames, innermost first */
  size_t nframes, frames_cap;
  struct sysagg_stack *stacks;
  size_t nstacks, stacks_cap;
  struct hashtab stack_index;
  /* The stream's samples by frames_id, VM state and label set, to their
  ** stack. */
  struct keymap stack_of_frames;
  /* By function and by line (after sysagg_finish()): the stacks' samples
  ** are added to them there, each stack at once. */
  struct sysagg_table funcs, lines;
  uint64_t mark; /* the last stack or sample counted in them */
  struct jitagg jit;
  struct sysagg_pending pending;
  struct sysprof_frame *scratch; /* a sample with a frame inserted */
  size_t scratch_cap;
  struct sbuf label;
  uint32_t stream; /* the stream being read, of a merge */
  uint64_t *label_samples; /* by label set: samples taken under it (mode D's
                              too) */
  size_t label_cap;
  int filtered; /* only the samples of some label sets were counted */
};

void sysagg_init(struct sysagg *agg, struct symbols *sym);
void sysagg_free(struct sysagg *agg);

/* A sysprof sink: pass the sysagg as ud and &agg->meta as meta. */
void sysagg_sample(void *ud, const struct sysprof_sample *s);
void sysagg_jit(void *ud, const struct sysprof_jit_event *e);
void sysagg_label_count(void *ud, uint32_t labels, uint64_t samples);
/* At the end of the stream: samples of an attempt still under way are
** counted without its outcome; the samples of the stream go to the tables
** by function and by line. */
void sysagg_finish(struct sysagg *agg);

/* After sysagg_finish(), before the stream numbered `stream` of a merge
** is read into the same aggregation. */
void sysagg_next_stream(struct sysagg *agg, uint32_t stream);

/*
** After sysagg_finish() of both: a stream of a merge read into an
** aggregation of its own (sysagg_next_stream() told it its number), its
** ids made the merge's by map (symimport_add()), added to the merge's as
** if read after it into that one. Its own figures: sysagg_merge_meta().
*/
void sysagg_merge(struct sysagg *into, const struct sysagg *from,
                  const struct symimport *map);

/*
** A merge's figures: a stream's own (m) added to those of the streams
** before it (*into, zeroed before the first). Samples of one interval
** and one kind of clock (thread CPU time, or wall time) add up; others
** do not: 0, and why in why[size] (the other figures then). 1 otherwise.
** A stream without statistics (cut short) leaves the merge without.
*/
int sysagg_merge_meta(struct sysprof_meta *into,
                      const struct sysprof_meta *m, int first, char *why,
                      size_t size);

/*
** Samples in all and by VM state: the stream's own statistics when it
** has them (they count the samples of mode D, which writes none), else
** the samples decoded; filtered by label, those counted (mode D's by
** label set: by VM state none).
*/
uint64_t sysagg_samples(const struct sysagg *agg);
uint64_t sysagg_vmstate_samples(const struct sysagg *agg, unsigned state);

/*
** The sampling rate achieved (samples per second of the profile's clock)
** and the one asked (from the interval). 0 when the stream does not say
** (no config or stats record, a zero interval or duration).
*/
int sysagg_rate(const struct sysagg *agg, double *achieved, double *asked);

/* Achieved below this share of the rate asked is reported as lower. */
#define SYSAGG_RATE_TOLERANCE 0.9

static inline const struct sysagg_counts *
sysagg_counts(const struct sysagg_table *t, uint32_t loc) {
  static const struct sysagg_counts none;
  return loc < t->cap ? &t->items[loc] : &none;
}

enum sysagg_key { KEY_SELF, KEY_TOTAL };

/*
** The locations of a table with samples, best first by the key, then the
** other one, then first seen. Returns a malloc'd array of *count ids.
*/
uint32_t *sysagg_rank(const struct sysagg_table *t, enum sysagg_key key,
                      size_t *count);

/* Stack indices, most samples first, then first seen (malloc'd). */
uint32_t *sysagg_rank_stacks(const struct sysagg *agg);

#endif
