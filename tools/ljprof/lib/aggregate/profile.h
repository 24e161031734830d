/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** A profile as other tools take it, built from a finished sysprof or
** memprof aggregation: distinct frames, stacks of them, and per stack one
** value for each sample type. The renderers for those tools (collapsed
** stacks, pprof, speedscope, the HTML flame graph) all read this.
**
** - CPU (sysprof): one stack per distinct sampled stack; values `samples`
**   (count) and `cpu` (nanoseconds: samples x the sampling interval, 0 when
**   the stream does not state its interval).
** - Memory (memprof): one stack per location owning memory (the allocation
**   site), a single frame; values `alloc_objects`, `alloc_space` (blocks and
**   bytes allocated there, by allocations and reallocations), and
**   `inuse_objects`, `inuse_space` (what it still held at the end). With
**   call stacks (v5), one stack per (site, call stack) pair: the site, then
**   the Lua frames that called it. Sampled: the values are estimates.
**
** One value is "shown" by the formats that carry only one: CPU samples;
** for memory, allocated or (leak_only) in-use bytes or (ORDER_EVENTS)
** objects. Stacks come ordered by it, most first, then first seen.
*/
#ifndef LJPROF_PROFILE_H
#define LJPROF_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "shared/hashtab.h"
#include "memagg.h"
#include "origins.h"
#include "shared/reader.h"
#include "shared/symbols.h"
#include "sysagg.h"

enum profile_kind { PROFILE_CPU, PROFILE_MEMORY };

/* The values of each kind, in the order of its sample types. */
enum { CPU_SAMPLES, CPU_TIME };
enum { MEM_ALLOC_OBJECTS, MEM_ALLOC_SPACE, MEM_INUSE_OBJECTS, MEM_INUSE_SPACE };

#define PROFILE_MAX_VALUES 4

struct profile_sample_type {
  const char *type, *unit;
};

/* A frame: its location, and the function it is in (a Lua line's proto,
** `@chunk:FIRSTLINE`; a memprof site or any other frame: itself). */
struct profile_frame {
  uint32_t loc, func;
};

/* A frame of a stack: the frame's id, and whether a trace's machine code
** runs it inlined into the next frame, its caller (1), or not (0). That is
** the stack's, not the frame's: pprof makes the frames of an inlined run
** one location; the other formats name a frame alike either way. */
struct profile_stack_frame {
  uint32_t frame, inlined;
};

struct profile_stack {
  uint32_t first, depth; /* at stack_frames[first ..], innermost first */
  uint64_t values[PROFILE_MAX_VALUES];
  /* CPU: what the VM was doing (LJP_VMST_*) and the trace that ran,
     exited or was being compiled (0: none), for the formats with labels */
  uint32_t vmstate;
  uint64_t trace;
  uint32_t stream; /* of a merge: its origin (an index in origins) */
  uint32_t labels; /* the label set (labelsets.h): pprof's labels */
};

struct profile {
  enum profile_kind kind;
  const char *source; /* the stream's name, as the user gave it */
  const struct symbols *sym;
  const struct reader *reader; /* its error, if any, is noted */
  const struct profile_sample_type *types;
  size_t ntypes;
  size_t shown;          /* index of the value a single-valued format shows */
  uint64_t period;       /* CPU: the sampling interval in ns; 0: unknown */
  uint64_t duration_ns;  /* CPU: the profile's elapsed time; 0: unknown */
  const char *what;      /* what the values are, when not the kind's own
                            (the growth a diff draws) */
  uint64_t sample;       /* memory: the sampling interval in bytes; 0: every
                            event (values are estimates otherwise) */
  const struct heapline *heap; /* memory: the heap over time; NULL: none
                                  (a diff) */
  const char *note;      /* words the page shows above its graph (HTML):
                            the JIT's story; NULL or "": none */
  const struct origins *origins; /* of a merge: the streams it came from
                                    (pprof's labels); NULL: one */
  int root_origin; /* collapsed: a root frame names each stack's stream */
  struct profile_frame *frames; /* by frame id */
  size_t nframes, frames_cap;
  struct hashtab frame_index;
  struct profile_stack_frame *stack_frames;
  size_t nstack_frames, stack_frames_cap;
  struct profile_stack *stacks;
  size_t nstacks;
  uint64_t totals[PROFILE_MAX_VALUES];
};

/* Both keep pointers to what they are given: free the profile first. */
void profile_from_sysprof(struct profile *p, const char *source,
                          const struct sysagg *agg, const struct reader *r);
/* agg must be finished (memagg_finish()). */
void profile_from_memprof(struct profile *p, const char *source,
                          const struct memagg *agg, const struct reader *r,
                          int leak_only, enum memagg_order count);
void profile_free(struct profile *p);

/* Of a merge, for the formats that do not tell streams apart: stacks
** that differ only by their stream made one, their values summed. */
void profile_fold_streams(struct profile *p);
/* For the formats that do not tell label sets apart: the same for stacks
** that differ only by their label set (LABELS_NONE after). */
void profile_fold_labels(struct profile *p);

/*
** Each stack under a root frame naming the value its label set gives key
** (a string id; labels_format_value(): escaped, `(none)`, `(other: N
** sets folded)`), so that a flame graph is one by that key's values (the
** sets kept: profile_fold_labels() for the formats without labels). The
** frames are labels of sym, the profile's own.
*/
void profile_label_frames(struct profile *p, struct symbols *sym,
                          uint32_t key);

/* The value formats that carry units weigh by: CPU time when the stream
** states its interval, else the shown value. */
static inline size_t profile_weight(const struct profile *p) {
  return p->kind == PROFILE_CPU && p->period ? CPU_TIME : p->shown;
}

/* The frame id of the i-th frame of a stack, counted from the outermost. */
static inline uint32_t profile_frame_from_root(const struct profile *p,
                                               const struct profile_stack *st,
                                               size_t i) {
  return p->stack_frames[st->first + st->depth - 1 - i].frame;
}

/*
** Names on one line: a newline inside one (the source text of
** load(string) as a chunk name) is written as the two characters '\n'.
** Each appends to sb.
*/
/* The frame as the reports name it: `@file.lua:LINE`, a C symbol, ... */
void profile_frame_name(const struct profile *p, uint32_t frame,
                        struct sbuf *sb);
/* Its function: `@file.lua:FIRSTLINE` for a Lua line, else as above. */
void profile_function_name(const struct profile *p, uint32_t frame,
                           struct sbuf *sb);
/*
** Where a Lua frame is in the source: the file (the chunk name without a
** leading '@') appended to sb, and *line; for its function with
** function_line set, the function's first line; for the JIT compiler's
** frame, where its trace starts. Returns 0 (sb untouched) for a frame
** without a known source: native, C, traces, labels, the VM's own.
*/
int profile_frame_source(const struct profile *p, uint32_t frame,
                         int function_line, struct sbuf *sb, int64_t *line);

#endif
