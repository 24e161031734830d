/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Symbol resolver: the bindings in force (proto address -> chunk and first
** line, C address -> symbol, trace number -> start proto and line, fast
** function id -> name) and the locations events and frames are charged to.
**
** Bindings change as a stream goes: a symtab update may rebind an address
** or a trace number. Events therefore resolve when they are decoded, into a
** location id that holds the names bound at that moment; later rebindings
** do not rename it. Location ids are dense (0, 1, 2, ...), so consumers keep
** per-location data in plain arrays.
*/
#ifndef LJPROF_SYMBOLS_H
#define LJPROF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "hashtab.h"
#include "labelsets.h"
#include "lj_profstream.h"
#include "util.h"

#define SYMBOLS_NONE UINT32_MAX

/* The line of a Lua frame whose PC the VM could not confirm (ljp v3, ljm
** v5: the same number in both). */
#define SYMBOLS_LINE_UNKNOWN ((uint64_t)LJP_LINE_UNKNOWN)

enum loc_kind {
  LOC_INTERNAL,      /* the VM itself: interpreter, GC, JIT compiler */
  LOC_LUA,           /* name: chunk, line */
  LOC_LUA_UNKNOWN,   /* addr: a proto the symbol table does not name, line */
  LOC_LUA_NOLINE,    /* name: chunk, line: the function's first; the line
                        that ran is unknown (SYMBOLS_LINE_UNKNOWN) */
  LOC_CFUNC,         /* name: symbol */
  LOC_CFUNC_UNKNOWN, /* addr */
  LOC_TRACE,         /* traceno; start: name (chunk) or addr (proto), line */
  LOC_TRACE_UNKNOWN, /* traceno */
  LOC_BEFORE_START,  /* owner of memory allocated before profiling began */
  LOC_PROTO_UNKNOWN, /* addr: a Lua function the symbol table does not name */
  LOC_FFUNC,         /* name: a fast function's name */
  LOC_FFUNC_UNKNOWN, /* addr: a fast function id */
  LOC_NATIVE_UNKNOWN, /* addr: code below every C symbol, or in none */
  LOC_TRACE_FRAME,   /* traceno; name (chunk) or addr (proto), line */
  LOC_LABEL,         /* name: printed as it is */
  LOC_NATIVE_OFFSET, /* name: object, addr: offset in it; code no symbol
                        covers (past an end mark, docs/formats.md) */
  LOC_VM             /* vm: LJM_VM_*; the compiler's: traceno (0: not
                        known), start: name (chunk) or addr (proto; 0: not
                        known), line */
};

/* Every field takes part in identity; fields a kind does not use are 0. */
struct location {
  uint16_t kind;
  uint16_t vm;   /* LOC_VM: the VM's kind of work */
  uint32_t name; /* string id, or SYMBOLS_NONE */
  uint64_t addr;
  uint64_t line;
  uint64_t traceno;
};

struct symstring {
  char *data;
  size_t len;
};

struct proto_binding {
  uint32_t chunk;
  uint64_t first_line;
};

struct trace_binding {
  uint32_t chunk; /* of the start proto as bound when the trace was */
  uint64_t proto;
  uint64_t line;
};

/*
** Events name few raw locations (a proto and line, a C address, a trace
** number) over and over: a direct-mapped cache maps a raw location to its
** id without building and hashing the full location. Each kind of raw
** location has a generation of the bindings it is resolved with, which a
** binding replaced bumps (a proto's: Lua lines and protos; a C
** function's: C functions; any C function's: native code): that
** invalidates the entries of those kinds at once, the others staying.
** Names not bound are not cached, so that a new binding (a proto, a trace
** announced as the program runs) invalidates nothing.
*/
enum symbols_raw_kind {
  RAW_INTERNAL = 1,
  RAW_LUA,
  RAW_CFUNC,
  RAW_TRACE,
  RAW_PROTO,
  RAW_FFUNC,
  RAW_CODE,
  RAW_KINDS
};

struct resolved_location {
  uint64_t a, b;      /* the raw location: proto and line, address, ... */
  uint64_t generation; /* of its kind's bindings when resolved (no other
                          kind's); 0: unused */
  uint32_t loc;
};

/* Entries: a large program's sites (some thousands) rarely evict each
** other, nor a worst case's (120 thousand). 8 MiB, of which only what is
** used is ever touched (symbols_init_threaded(): all of it). A size known
** when compiled keeps the lookup short: a smaller cache that grew with the
** locations cost 0.7 % more instructions on CPU profiles. */
#define SYMBOLS_RESOLVED_BITS 18
#define SYMBOLS_RESOLVED_CACHE (1u << SYMBOLS_RESOLVED_BITS)

/*
** Memprof v5: the call stacks a stream announced, by stack id, each a run
** of frames (the frame's location and its function: a Lua line's proto,
** else the frame itself), innermost first. Stack 0 is the writer's "stack
** table full".
*/
struct symframe {
  uint32_t loc, func;
};

struct symstack {
  uint32_t first, depth; /* at stack_frames[first ..] */
};

/* What a memprof v5 stream says of itself: its config record (call
** stacks, with native frames or not, sampling interval in bytes, 0: every
** event) and its stats. */
struct memprof_meta {
  int has_config, has_stats;
  int stacks, native;
  uint64_t sample;
  uint64_t nstacks, full, truncated, samples, untracked;
};

/* The process a stream profiles, when it says so (its process record,
** ljp v3 and ljm v5): its pid, its machine's name (at most 255 bytes,
** NUL-terminated here), the wall clock at the start in ns since the
** epoch. */
#define SYMBOLS_HOST_MAX 255
struct stream_process {
  int known;
  uint64_t pid, epoch_ns;
  char host[SYMBOLS_HOST_MAX + 1];
};

/* A slot of the location index: the whole key, so a lookup reads one. */
struct location_slot {
  struct location key;
  uint32_t ref; /* location id + 1; 0 marks an empty slot */
};

struct symbols {
  struct symstring *strings; /* interned names, by string id */
  size_t nstrings, strings_cap;
  struct hashtab string_index;

  struct keymap protos; /* proto address -> index in proto_bindings */
  struct proto_binding *proto_bindings;
  size_t nprotos, protos_cap;
  struct keymap cfuncs; /* C address -> symbol name (string id) */
  struct keymap ffuncs; /* fast function id -> name (string id) */
  struct keymap traces; /* trace number -> index in trace_bindings */
  struct trace_binding *trace_bindings;
  size_t ntraces, traces_cap;

  struct location *locations; /* by location id */
  size_t nlocations, locations_cap;
  struct location_slot *location_slots;
  size_t location_mask;

  /*
  ** C symbols by address, for code addresses that fall inside a function:
  ** rebuilt from cfuncs when a C binding changed since it was sorted.
  */
  struct keyslot *code_index;
  size_t ncode, code_cap;
  int code_index_stale;

  uint64_t generation[RAW_KINDS]; /* by raw kind, of the bindings it uses */
  uint64_t newest_generation;     /* the last any kind took */
  struct resolved_location *resolved; /* SYMBOLS_RESOLVED_CACHE entries */
  int cache_mapped; /* from table_calloc() */

  struct symframe *stack_frames; /* memprof v5 stacks */
  size_t nstack_frames, stack_frames_cap;
  struct symstack *stacks;
  size_t nstacks, stacks_cap;
  size_t stack_base; /* the id of the stream's stack 0 (of a merge) */
  struct memprof_meta memprof;
  struct stream_process process;
  struct labelsets labels; /* sysprof v4, memprof v6 */
};

/* A stack's frames, innermost first; NULL (and depth 0) for no stack. */
static inline const struct symframe *symbols_stack(const struct symbols *s,
                                                   uint32_t stack,
                                                   uint32_t *depth) {
  if (stack >= s->nstacks) {
    *depth = 0;
    return NULL;
  }
  *depth = s->stacks[stack].depth;
  return s->stack_frames + s->stacks[stack].first;
}

void symbols_init(struct symbols *s);

/* A thread's resolver cache between two resolvers (entries NULL: none). */
struct symbols_cache {
  struct resolved_location *entries;
  uint64_t stale_below; /* the generations its entries were made in */
};

/*
** The same for a resolver read while other threads run (a merge's streams
** read at once): its cache mapped with its pages present (table_calloc()).
** A lookup reads an entry before a miss writes it: in a page of calloc's,
** that write copies the page, a TLB flush of every core running one of the
** threads; zeroing 8 MiB at once costs less. For one stream it costs more.
** It takes the cache of *spare if there is one: a thread reading streams
** one after another maps and zeroes it once. Its generations start past
** the spare's, so none of the entries there is taken for its own.
*/
void symbols_init_threaded(struct symbols *s, struct symbols_cache *spare);

/* A threaded resolver done resolving (its locations, names and stacks
** stay): its cache to *to, for the thread's next symbols_init_threaded(),
** any cache there freed. */
void symbols_pass_cache(struct symbols *s, struct symbols_cache *to);
void symbols_cache_free(struct symbols_cache *c);
void symbols_free(struct symbols *s);

/*
** Before the next stream of a merge: its addresses and trace numbers are
** its own (another process, another layout), so the bindings go; the
** locations stay, each holding the names it was resolved to, and the
** next stream's resolve to the same ids when they name the same things.
** Its stacks (memprof v5) follow the ones kept, from stack_base on; its
** label sets' numbers are its own, the sets kept; what it says of itself
** (memprof, its process) is its own.
*/
void symbols_forget_bindings(struct symbols *s);

uint32_t symbols_intern(struct symbols *s, const char *str, size_t len);

/* A proto's first line names its function (symbols_loc_proto()). */
void symbols_bind_proto(struct symbols *s, uint64_t addr, const char *chunk,
                        size_t len, uint64_t first_line);
void symbols_bind_cfunc(struct symbols *s, uint64_t addr, const char *name,
                        size_t len);
void symbols_bind_trace(struct symbols *s, uint64_t traceno, uint64_t proto,
                        uint64_t line);
void symbols_bind_ffunc(struct symbols *s, uint64_t id, const char *name,
                        size_t len);

/* Where the cache keeps a raw location. */
static inline struct resolved_location *
symbols_raw_entry(const struct symbols *s, enum symbols_raw_kind kind,
                  uint64_t a, uint64_t b) {
  return &s->resolved[hash_home(a ^ b * UINT64_C(0xff51afd7ed558ccd) ^ kind,
                                64 - SYMBOLS_RESOLVED_BITS)];
}

/* A raw location resolved with the bindings in force now, and cached. */
uint32_t symbols_resolve_raw(struct symbols *s, enum symbols_raw_kind kind,
                             uint64_t a, uint64_t b);

/* The same from the cache while no binding changed since it was resolved
** (the generation says): inline, for the events' hot path. */
static inline uint32_t symbols_raw_loc(struct symbols *s,
                                       enum symbols_raw_kind kind, uint64_t a,
                                       uint64_t b) {
  const struct resolved_location *e = symbols_raw_entry(s, kind, a, b);
  if (e->generation == s->generation[kind] && e->a == a && e->b == b)
    return e->loc;
  return symbols_resolve_raw(s, kind, a, b);
}

/* A number that changes whenever a binding of any kind does. */
static inline uint64_t symbols_bindings(const struct symbols *s) {
  return s->newest_generation;
}

/* Location ids, resolved with the bindings in force now. */
static inline uint32_t symbols_loc_internal(struct symbols *s) {
  return symbols_raw_loc(s, RAW_INTERNAL, 0, 0);
}
static inline uint32_t symbols_loc_lua(struct symbols *s, uint64_t proto,
                                       uint64_t line) {
  return symbols_raw_loc(s, RAW_LUA, proto, line);
}
static inline uint32_t symbols_loc_cfunc(struct symbols *s, uint64_t addr) {
  return symbols_raw_loc(s, RAW_CFUNC, addr, 0);
}
static inline uint32_t symbols_loc_trace(struct symbols *s, uint64_t traceno) {
  return symbols_raw_loc(s, RAW_TRACE, traceno, 0);
}
uint32_t symbols_loc_before_start(struct symbols *s);
/* The VM's own work of a kind (LJM_VM_*): for the compiler's, the trace
** it compiles and where that starts. */
uint32_t symbols_loc_vm(struct symbols *s, unsigned kind, uint64_t traceno,
                        uint64_t proto, uint64_t line);
/* LOC_VM's vm of the compiler whatever its phase: the frames above a
** compiler's location in a flame graph, `JIT compiler: trace at
** @file.lua:68` (its traces of any number starting there), then `JIT
** compiler`. symbols_loc_vm makes them with the location. */
#define SYMBOLS_VM_JIT LJM_VM__MAX
/* The frame above a location of the compiler's, or SYMBOLS_NONE. */
uint32_t symbols_vm_parent(const struct symbols *s, uint32_t loc);

/* Sampled frames. */
/* A Lua function as a whole: `@chunk:FIRSTLINE`. */
static inline uint32_t symbols_loc_proto(struct symbols *s, uint64_t proto) {
  return symbols_raw_loc(s, RAW_PROTO, proto, 0);
}
/* `name`, or `ffunc #ID` without an ffname binding. */
static inline uint32_t symbols_loc_ffunc(struct symbols *s, uint64_t id) {
  return symbols_raw_loc(s, RAW_FFUNC, id, 0);
}
/* The C symbol at the greatest address <= addr; `object+0xOFFSET` when
** that symbol is an end mark `object+0xEND` (the VM writes one where no
** function covers an object's code), the offset counted on from it;
** `0x...` below every symbol or past an empty name (the VM's mark for
** the end of an object's code). */
static inline uint32_t symbols_loc_code(struct symbols *s, uint64_t addr) {
  return symbols_raw_loc(s, RAW_CODE, addr, 0);
}
/* `TRACE [n] @chunk:LINE`: the start a trace frame carries. */
uint32_t symbols_loc_trace_frame(struct symbols *s, uint64_t traceno,
                                 uint64_t proto, uint64_t line);
/* The id of a location, added if new (the resolvers above make theirs). */
uint32_t symbols_location_id(struct symbols *s, struct location loc);
/* A fixed text, such as `[GC]`. */
uint32_t symbols_loc_label(struct symbols *s, const char *text);

/*
** Chunk names that span lines (the source text of load(string)) are
** printed as aliases, `CHUNK 1`, numbered in order of first use and listed
** apart. Formatting without an alias table prints names in full.
*/
struct aliases {
  uint32_t *number_of; /* by string id; 0: no alias yet */
  size_t cap;
  uint32_t *strings; /* string id of alias k + 1 at index k */
  size_t count, strings_cap;
};

void aliases_free(struct aliases *a);

/* Append the name of a location to sb. */
void symbols_format(const struct symbols *s, uint32_t loc, struct aliases *a,
                    struct sbuf *sb);
/* The same for a function (symbols_loc_proto()): a main chunk, defined at
** line 0, as `@file.lua (main chunk)`, never a line 0. */
void symbols_format_function(const struct symbols *s, uint32_t loc,
                             struct aliases *a, struct sbuf *sb);

#endif
