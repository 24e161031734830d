/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Sysprof stream (`ljp`) decoder, versions 2 (the reference's), 3 and 4
** (ours; 4 with labels): turns the records after the prologue into samples whose frames
** are resolved locations, applies the symtab updates and fast function
** names as it meets them, and keeps the configuration and statistics the
** stream states.
*/
#ifndef LJPROF_SYSPROF_H
#define LJPROF_SYSPROF_H

#include <stddef.h>
#include <stdint.h>

#include "lj_profstream.h"
#include "shared/reader.h"
#include "shared/symbols.h"

/* A sample deeper than this is taken for corruption. */
#define SYSPROF_MAX_FRAMES 4096

/* The stream's numbers (lj_profstream.h) as the reader's types. */
enum vmstate {
  VMSTATE_INTERP = LJP_VMST_INTERP,
  VMSTATE_LFUNC = LJP_VMST_LFUNC,
  VMSTATE_FFUNC = LJP_VMST_FFUNC,
  VMSTATE_CFUNC = LJP_VMST_CFUNC,
  VMSTATE_GC = LJP_VMST_GC,
  VMSTATE_EXIT = LJP_VMST_EXIT,
  VMSTATE_RECORD = LJP_VMST_RECORD,
  VMSTATE_OPT = LJP_VMST_OPT,
  VMSTATE_ASM = LJP_VMST_ASM,
  VMSTATE_TRACE = LJP_VMST_TRACE,
  VMSTATE_COUNT = LJP_VMSTATES
};

/* "INTERP", "LFUNC", ... */
const char *sysprof_vmstate_name(unsigned state);

/* What ran, as a Lua programmer asks: the VM states grouped. */
enum sysprof_kind {
  KIND_COMPILED,    /* TRACE */
  KIND_INTERPRETED, /* INTERP, LFUNC, FFUNC */
  KIND_C,           /* CFUNC: C functions, the FFI */
  KIND_JIT,         /* RECORD, OPT, ASM: the trace compiler */
  KIND_EXITS,       /* EXIT */
  KIND_GC,
  KIND_COUNT
};
enum sysprof_kind sysprof_kind_of(unsigned state);
/* "compiled (traces)", ...; and as a JSON key: "compiled", ... */
const char *sysprof_kind_name(enum sysprof_kind kind);
const char *sysprof_kind_key(enum sysprof_kind kind);

enum sysprof_mode {
  SYSPROF_DEFAULT = LJP_MODE_DEFAULT,
  SYSPROF_LEAF = LJP_MODE_LEAF,
  SYSPROF_CALLGRAPH = LJP_MODE_CALLGRAPH
};

/* "D", "L", "C" */
const char *sysprof_mode_name(enum sysprof_mode mode);

/* Thread CPU time by a POSIX timer (on the kernel's tick), monotonic time,
** thread CPU time by a perf cpu-clock event (at the asked rate). */
enum sysprof_clock {
  SYSPROF_CLOCK_THREAD_CPU = LJP_CLOCK_CPU,
  SYSPROF_CLOCK_MONOTONIC = LJP_CLOCK_WALL,
  SYSPROF_CLOCK_THREAD_CPU_PERF = LJP_CLOCK_PERF
};

/* What the stream says about itself; v2 streams say nothing. */
struct sysprof_meta {
  unsigned version;
  int has_config;
  enum sysprof_mode mode;
  uint64_t interval_us;
  enum sysprof_clock clock;
  int has_stats;
  uint64_t samples;
  uint64_t by_vmstate[VMSTATE_COUNT];
  uint64_t dropped, overruns, elapsed_ns;
};

struct sysprof_frame {
  uint32_t loc;  /* the frame: a line, a symbol, a trace, ... */
  uint32_t func; /* the function it is in (a Lua frame's proto) */
  int lua;       /* a frame of Lua (Lua, C or fast function), not a native
                    one or a trace's code */
  int inlined;   /* a Lua line that a trace's machine code runs inlined into
                    the next frame, the one that called it */
};

struct sysprof_sample {
  enum vmstate vmstate;
  size_t nframes;
  const struct sysprof_frame *frames; /* innermost first */
  /* A sample in an exit: the trace and exit taken; in the compiler: the
     trace being compiled (exit 0). */
  int has_jit;
  uint64_t jit_trace, jit_exit;
  uint32_t labels; /* the label set in force (v4; labelsets.h) */
  /* The decoder's number for its frames, as the stream goes: samples of
  ** one number have the same frames (a sink may count them by it); 0 for
  ** none. */
  uint32_t frames_id;
};

/* The trace compiler's events (lj_profstream.h), each as it came. */
enum sysprof_jit_kind {
  JIT_STATE,     /* at the start: how = 1 if the compiler was on */
  JIT_START,     /* trace, how (LJP_TRACE_*), from, exit, loc */
  JIT_END,       /* trace, how (link type), link, nins, nmcode */
  JIT_ABORT,     /* trace, loc (where recording stopped), error, reason */
  JIT_BLACKLIST, /* loc */
  JIT_FLUSH,     /* how (LJP_FLUSH_*) */
  JIT_EXIT       /* trace, exit, count, loc (where it resumes) */
};

struct sysprof_jit_event {
  enum sysprof_jit_kind kind;
  uint64_t trace, from, exit;
  unsigned how;
  uint32_t loc; /* a Lua line, SYMBOLS_NONE when the event names none */
  uint32_t func; /* its function (symbols_loc_proto()), or SYMBOLS_NONE */
  uint64_t link, nins, nmcode, error, count;
  const char *reason; /* not NUL-terminated */
  size_t reason_len;
};

struct sysprof_sink {
  void (*sample)(void *ud, const struct sysprof_sample *s);
  void (*jit)(void *ud, const struct sysprof_jit_event *e); /* or NULL */
  void *ud;
  struct sysprof_meta *meta; /* filled as the records come */
  /* Mode D (v4): the samples taken under a label set; or NULL. */
  void (*label_count)(void *ud, uint32_t labels, uint64_t samples);
};

/*
** Decode the records of a stream of the given version up to and with the
** end byte, delivering every complete sample to the sink (also when the
** stream is damaged). Returns 1 at the end byte, 0 on error (in the
** reader).
*/
int sysprof_read_records(struct reader *r, struct symbols *sym,
                         unsigned version, const struct sysprof_sink *sink);

#endif
