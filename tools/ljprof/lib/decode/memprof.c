/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "memprof.h"

#include <inttypes.h>
#include <stdlib.h>

#include "labelrec.h"
#include "shared/livetab.h"
#include "symtab.h"

/* Event header: [F UU SSS EE] (lj_profstream.h); the source is read as
** ASOURCE_*, its bits in place. */
#define HEADER_EVENT(h) ((h)&AEVENT_MASK)
#define HEADER_SOURCE(h) ((h)&ASOURCE_MASK)
#define HEADER_FLAGS(h) ((h)&AFLAG_MASK)

/* More stacks than this is not a stream our writer makes. */
#define STACKS_MAX (1u << 24)

/* Trace locations are numbered 0, 1, ... in the order they are announced;
** more than this is not a stream our writer makes. */
#define TRACE_LOCS_MAX (1u << 24)

/* The location each announced trace location resolved to. */
struct trace_locs {
  uint32_t *loc;
  size_t n, cap;
};

/* What decoding a stream keeps besides the resolver. */
struct decoder {
  unsigned last_source;  /* of events */
  unsigned last_update;  /* of symtab updates */
  unsigned flags;        /* the header flags the version allows */
  struct trace_locs tl;
  struct livetab weights; /* sampled streams: address -> bytes it stands for */
  struct sbuf scratch;
  uint64_t mark_ns;       /* of the last time mark */
  int mark;               /* a time mark was read, not yet delivered */
  uint64_t snapshot;      /* the heap snapshot it marks; 0: none */
  uint32_t internal;      /* the internal location, once met */
  unsigned last_info;     /* the info kinds the version has */
  uint32_t labels;        /* v6: the label set in force */
  uint8_t fast[256];      /* by header byte: does the fast path take it? */
};

/* An announcement: its number, trace number, proto address and line. */
static int read_trace_loc(struct reader *r, struct symbols *sym,
                          struct trace_locs *tl) {
  uint64_t at = reader_offset(r), index, traceno, proto, line;
  if (!reader_uleb(r, &index, "trace location: number") ||
      !reader_uleb(r, &traceno, "trace location: trace number") ||
      !reader_uleb(r, &proto, "trace location: proto address") ||
      !reader_uleb(r, &line, "trace location: line"))
    return 0;
  if (index != tl->n || tl->n >= TRACE_LOCS_MAX) {
    reader_fail(r, READER_CORRUPT, at,
                "corrupt at offset %" PRIu64 ": trace location %" PRIu64
                " announced where %zu comes next",
                at, index, tl->n);
    return 0;
  }
  grow_array((void **)&tl->loc, &tl->cap, tl->n + 1, sizeof(*tl->loc));
  tl->loc[tl->n++] = symbols_loc_lua(sym, proto, line);
  return 1;
}

static void add_stack_frame(struct symbols *sym, uint32_t loc,
                            uint32_t func) {
  grow_array((void **)&sym->stack_frames, &sym->stack_frames_cap,
             sym->nstack_frames + 1, sizeof *sym->stack_frames);
  sym->stack_frames[sym->nstack_frames++] = (struct symframe){loc, func};
}

static void add_stack(struct symbols *sym, uint32_t first) {
  grow_array((void **)&sym->stacks, &sym->stacks_cap, sym->nstacks + 1,
             sizeof *sym->stacks);
  sym->stacks[sym->nstacks++] =
      (struct symstack){first, (uint32_t)(sym->nstack_frames - first)};
}

/* Stack 0, which the writer names when its table is full. */
static void add_full_stack(struct symbols *sym) {
  uint32_t first = (uint32_t)sym->nstack_frames;
  uint32_t loc = symbols_loc_label(sym, "[stack table full]");
  add_stack_frame(sym, loc, loc);
  add_stack(sym, first);
}

static int stack_damage(struct reader *r, uint64_t at, const char *problem,
                        uint64_t value) {
  return reader_corrupt_value(r, at, "stack record", problem, value);
}

/* A stack: its id, depth and frames, resolved as they come. Kept only
** when whole: a damaged record leaves no stack behind. */
static int read_stack(struct reader *r, struct symbols *sym) {
  uint64_t at = reader_offset(r), id, depth;
  if (!reader_uleb(r, &id, "stack: id") ||
      !reader_uleb(r, &depth, "stack: depth"))
    return 0;
  if (id != sym->nstacks - sym->stack_base || id >= STACKS_MAX)
    return stack_damage(r, at, "announced out of order, id", id);
  if (depth == 0 || depth > LJM_STACK_DEPTH_MAX)
    return stack_damage(r, at, "impossible depth", depth);
  size_t first = sym->nstack_frames;
  for (uint64_t i = 0; i < depth; i++) {
    uint64_t fat = reader_offset(r), addr = 0, line = 0;
    uint8_t tag;
    if (!reader_u8(r, &tag, "stack: frame tag")) break;
    if (tag == LJM_FRAME_LUA) {
      if (!reader_uleb(r, &addr, "stack: proto address") ||
          !reader_uleb(r, &line, "stack: line"))
        break;
      add_stack_frame(sym, symbols_loc_lua(sym, addr, line),
                      symbols_loc_proto(sym, addr));
    } else if (tag == LJM_FRAME_CFUNC) {
      if (!reader_uleb(r, &addr, "stack: C function address")) break;
      uint32_t loc = symbols_loc_cfunc(sym, addr);
      add_stack_frame(sym, loc, loc);
    } else if (tag == LJM_FRAME_NATIVE) { /* named as sysprof's native frames */
      if (!reader_uleb(r, &addr, "stack: native address")) break;
      uint32_t loc = symbols_loc_code(sym, addr);
      add_stack_frame(sym, loc, loc);
    } else if (tag == LJM_FRAME_TRUNC && i == depth - 1) {
      uint32_t loc = symbols_loc_label(sym, "[more frames]");
      add_stack_frame(sym, loc, loc);
    } else {
      stack_damage(r, fat, "unknown frame tag", tag);
      break;
    }
  }
  if (r->status != READER_OK) {
    sym->nstack_frames = first;
    return 0;
  }
  add_stack(sym, (uint32_t)first);
  return 1;
}

/* A time mark: never earlier than the one before. */
static int read_mark(struct reader *r, struct decoder *d) {
  uint64_t at = reader_offset(r), ns;
  if (!reader_uleb(r, &ns, "time mark: nanoseconds")) return 0;
  if (ns < d->mark_ns) {
    reader_fail(r, READER_CORRUPT, at,
                "corrupt at offset %" PRIu64 ": time mark %" PRIu64
                " ns goes back before %" PRIu64 " ns",
                at, ns, d->mark_ns);
    return 0;
  }
  d->mark_ns = ns;
  d->mark = 1;
  return 1;
}

/* A config, stats, time mark or process record. */
static int read_info(struct reader *r, struct symbols *sym,
                     struct decoder *d) {
  uint64_t at = reader_offset(r), kind, flags;
  struct memprof_meta *m = &sym->memprof;
  if (!reader_uleb(r, &kind, "info: kind")) return 0;
  switch (kind > d->last_info ? UINT64_MAX : kind) {
  case LJM_INFO_CONFIG:
    if (!reader_uleb(r, &flags, "config: flags") ||
        !reader_uleb(r, &m->sample, "config: sampling interval"))
      return 0;
    m->stacks = (flags & LJM_CONFIG_STACKS) != 0;
    m->native = (flags & LJM_CONFIG_NATIVE) != 0;
    m->has_config = 1;
    return 1;
  case LJM_INFO_STATS:
    if (!reader_uleb(r, &m->nstacks, "stats: stacks") ||
        !reader_uleb(r, &m->full, "stats: events without room") ||
        !reader_uleb(r, &m->truncated, "stats: truncated stacks") ||
        !reader_uleb(r, &m->samples, "stats: samples") ||
        !reader_uleb(r, &m->untracked, "stats: untracked blocks") ||
        (d->last_info >= LJM_INFO_LABELS && !labelrec_read_folded(r, sym)))
      return 0;
    m->has_stats = 1;
    return 1;
  case LJM_INFO_MARK:
    return read_mark(r, d);
  case LJM_INFO_SNAPSHOT:
    return reader_uleb(r, &d->snapshot, "snapshot mark: id") &&
           read_mark(r, d);
  case LJM_INFO_PROCESS:
    return symtab_read_process(r, sym, &d->scratch);
  case LJM_INFO_LABELSET:
    return labelrec_read_set(r, sym, &d->scratch);
  case LJM_INFO_LABELS:
    return labelrec_read_in_force(r, sym, &d->labels);
  default:
    reader_fail(r, READER_CORRUPT, at,
                "corrupt at offset %" PRIu64 ": unknown info record %" PRIu64,
                at, kind);
    return 0;
  }
}

static int bad_header(struct reader *r, uint64_t at, uint8_t header,
                      const char *problem) {
  reader_fail(r, READER_CORRUPT, at,
              "corrupt at offset %" PRIu64 ": %s in event header 0x%02x", at,
              problem, header);
  return 0;
}

/* The raw location of an event: what its source names, unresolved. */
struct raw_location {
  unsigned source;
  uint64_t a; /* proto address, C function address, trace number, trace
                location or the VM's kind */
  uint64_t line;
  uint64_t traceno, proto; /* the VM's kind of the compiler: its trace */
  uint64_t stack;  /* v5: the stack id, UINT64_MAX: none */
  uint64_t weight; /* v5: a sampled allocation's, 0: none */
};

/* The VM's kind of work; the compiler's, the trace it compiles. */
static int read_vm(struct reader *r, struct raw_location *loc) {
  uint64_t at = reader_offset(r);
  if (!reader_uleb(r, &loc->a, "location: the VM's kind")) return 0;
  if (loc->a >= LJM_VM__MAX) {
    reader_fail(r, READER_CORRUPT, at,
                "corrupt at offset %" PRIu64 ": unknown kind %" PRIu64
                " of the VM's own event",
                at, loc->a);
    return 0;
  }
  return loc->a > LJM_VM_ASM ||
         (reader_uleb(r, &loc->traceno, "location: compiler's trace") &&
          reader_uleb(r, &loc->proto, "location: compiler's start proto") &&
          reader_uleb(r, &loc->line, "location: compiler's start line"));
}

static int read_location(struct reader *r, struct raw_location *loc) {
  switch (loc->source) {
  case ASOURCE_VM:
    return read_vm(r, loc);
  case ASOURCE_INT:
    return 1;
  case ASOURCE_LFUNC:
    return reader_uleb(r, &loc->a, "location: proto address") &&
           reader_uleb(r, &loc->line, "location: line");
  case ASOURCE_CFUNC:
    return reader_uleb(r, &loc->a, "location: C function address");
  case ASOURCE_TRACE_LUA:
    return reader_uleb(r, &loc->a, "location: trace location");
  default: /* ASOURCE_TRACE; the caller checked the range */
    return reader_uleb(r, &loc->a, "location: trace number");
  }
}

/* The location a source names other than a Lua line or the VM's work;
** the caller checked that a trace location was announced. Tests in the
** order of how often each comes, not a jump table. */
static inline uint32_t resolve_other(struct symbols *sym, struct decoder *d,
                                     unsigned source, uint64_t a) {
  if (source == ASOURCE_INT) { /* one location, whatever the bindings */
    if (d->internal == SYMBOLS_NONE) d->internal = symbols_loc_internal(sym);
    return d->internal;
  }
  if (source == ASOURCE_CFUNC) return symbols_loc_cfunc(sym, a);
  if (source == ASOURCE_TRACE_LUA) /* the line is what reports name */
    return d->tl.loc[a];
  return symbols_loc_trace(sym, a);
}

static uint32_t resolve_location(struct symbols *sym, struct decoder *d,
                                 const struct raw_location *loc) {
  if (loc->source == ASOURCE_LFUNC)
    return symbols_loc_lua(sym, loc->a, loc->line);
  if (loc->source == ASOURCE_VM)
    return symbols_loc_vm(sym, (unsigned)loc->a, loc->traceno, loc->proto,
                          loc->line);
  return resolve_other(sym, d, loc->source, loc->a);
}

static int read_payload(struct reader *r, struct memprof_event *ev) {
  switch (ev->kind) {
  case MEMPROF_ALLOC:
    return reader_uleb(r, &ev->naddr, "alloc: new address") &&
           reader_uleb(r, &ev->nsize, "alloc: new size");
  case MEMPROF_FREE:
    return reader_uleb(r, &ev->oaddr, "free: old address") &&
           reader_uleb(r, &ev->osize, "free: old size");
  default: /* MEMPROF_REALLOC */
    return reader_uleb(r, &ev->oaddr, "realloc: old address") &&
           reader_uleb(r, &ev->osize, "realloc: old size") &&
           reader_uleb(r, &ev->naddr, "realloc: new address") &&
           reader_uleb(r, &ev->nsize, "realloc: new size");
  }
}

static int read_symtab_update(struct reader *r, struct symbols *sym,
                              unsigned source, struct decoder *d) {
  if (source == ASOURCE_TRACE_LUA) return read_trace_loc(r, sym, &d->tl);
  if (source == ASOURCE_STACK) return read_stack(r, sym);
  if (source == ASOURCE_INFO) return read_info(r, sym, d);
  unsigned type = source == ASOURCE_LFUNC   ? SYMTAB_LFUNC
                  : source == ASOURCE_CFUNC ? SYMTAB_CFUNC
                                            : SYMTAB_TRACE;
  return symtab_read_entry(r, sym, type, &d->scratch);
}

/* The longest event: a header, a Lua location, a stack id, a realloc
** payload and a weight. */
#define EVENT_MAX_BYTES (1 + 8 * ULEB128_MAX_BYTES)

/*
** Does the fast path take an event with this header? An alloc, free or
** realloc of a source and with flags the version has; not the VM's own
** (their locations vary in shape), symtab updates nor the end.
*/
static int fast_header(const struct decoder *d, unsigned header) {
  unsigned event = HEADER_EVENT(header), source = HEADER_SOURCE(header);
  unsigned flags = HEADER_FLAGS(header);
  return !(header & LJM_EPILOGUE_HEADER) && event != AEVENT_SYMTAB &&
         source >= ASOURCE_INT && source <= d->last_source &&
         source != ASOURCE_VM && !(flags & ~d->flags) &&
         !((flags & AFLAG_WEIGHT) && event != MEMPROF_ALLOC);
}

static uint64_t scale(uint64_t weight, uint64_t from, uint64_t to) {
  if (!weight || !from) return weight;
  double w = (double)weight * (double)to / (double)from;
  return w >= 1.8e19 ? UINT64_MAX : (uint64_t)w;
}

/* A sampled stream: what each block stands for follows it, through
** reallocations (at the same scale) to its free. */
static void follow_weights(struct decoder *d, struct memprof_event *ev,
                           uint64_t weight) {
  struct live_block old;
  if (ev->kind != MEMPROF_ALLOC && livetab_take(&d->weights, ev->oaddr, &old))
    ev->oweight = old.size;
  if (ev->kind == MEMPROF_FREE) return;
  ev->nweight = weight ? weight : scale(ev->oweight, ev->osize, ev->nsize);
  if (ev->nweight) livetab_put(&d->weights, ev->naddr, ev->nweight, 0);
}

/*
** The fast path: an alloc, free or realloc event from a window of at
** least EVENT_MAX_BYTES, its header one the fast path takes and its flags
** (a constant in each copy) those of the header: decoded and resolved at
** once, one bounds check for the whole event, the fields kept in
** registers. A sampled stream's weight is left in nweight, for
** follow_decoded(). Returns the bytes it takes, or 0 for an event that names
** what was not announced or is damaged, which the careful path then
** decodes and words. An event the fast path gives up on leaves no trace:
** the location is resolved last. Addresses with PEXT if `pext` (a
** constant too).
*/
ALWAYS_INLINE size_t decode_shape(const uint8_t *window, struct decoder *d,
                                  struct symbols *sym,
                                  struct memprof_event *ev, unsigned header,
                                  unsigned flags, int pext) {
  unsigned event = HEADER_EVENT(header), source = HEADER_SOURCE(header);
  const uint8_t *p = window + 1;
  uint64_t a = 0, line = 0, stack = UINT64_MAX, weight = 0;
  uint64_t oaddr = 0, osize = 0, naddr = 0, nsize = 0;
  int used = 0; /* the fields' lengths or'ed: negative if one is malformed */
  if (source == ASOURCE_LFUNC) {
    used |= uleb128_take_wide(&p, &a, pext); /* an address */
    used |= uleb128_take(&p, &line);
  } else if (source == ASOURCE_CFUNC) {
    used |= uleb128_take_wide(&p, &a, pext); /* an address */
  } else if (source != ASOURCE_INT) {
    used |= uleb128_take(&p, &a); /* a trace or its location */
  }
  if (flags & AFLAG_STACK) used |= uleb128_take(&p, &stack);
  if (event & AEVENT_FREE) { /* a free or a realloc: the old block */
    used |= uleb128_take_wide(&p, &oaddr, pext);
    used |= uleb128_take(&p, &osize);
  }
  if (event & AEVENT_ALLOC) { /* an alloc or a realloc: the new block */
    used |= uleb128_take_wide(&p, &naddr, pext);
    used |= uleb128_take(&p, &nsize);
  }
  if (flags & AFLAG_WEIGHT) used |= uleb128_take(&p, &weight);
  if (used < 0 || (source == ASOURCE_TRACE_LUA && a >= d->tl.n) ||
      (flags && stack != UINT64_MAX &&
       stack >= sym->nstacks - sym->stack_base))
    return 0;
  ev->kind = (enum memprof_event_kind)event;
  ev->loc = source == ASOURCE_LFUNC ? symbols_loc_lua(sym, a, line)
                                    : resolve_other(sym, d, source, a);
  ev->oaddr = oaddr;
  ev->osize = osize;
  ev->naddr = naddr;
  ev->nsize = nsize;
  ev->oweight = ev->nweight = 0;
  ev->stack = MEMPROF_NO_STACK;
  ev->labels = LABELS_NONE;
  if (flags) { /* v5 on: what the stack and weight carry */
    if (stack != UINT64_MAX)
      ev->stack = (uint32_t)(sym->stack_base + stack);
    if (event != MEMPROF_FREE && (stack != UINT64_MAX || weight))
      ev->labels = d->labels;
    if (sym->memprof.sample) ev->nweight = weight; /* followed: below */
  }
  return (size_t)(p - window);
}

/*
** A run of the fast path: events from *pp into evs[i .. end), while it
** takes them. Threaded: each event's code, in a copy for each of the twelve
** headers every version has (the reference's sources, no flags; their
** fields known, their bits never tested), jumps straight to the code of
** the next event's header, through a table by header byte: one indirect
** jump an event, where a switch in a loop took a range test, a table's
** offset and the loop's tests (17 instructions an event, now 10). Other
** headers go to one copy for events with flags (v5 on: a stack, a weight)
** and one for those without, or stop the run: a symtab update, the end, an
** event of the VM's own, anything the careful path must word. Returns
** where it stopped, end or the event not taken (*pp there). A function
** that holds labels' addresses is not inlined: one for each `pext`.
*/
#define EVENT_CODE(label, header, flags)                                      \
  label:                                                                      \
  used = decode_shape(p, d, sym, &evs[i], header, flags, pext);               \
  if (!used) goto stop;                                                       \
  p += used;                                                                  \
  if (++i == end) goto stop;                                                  \
  goto *next[*p];

#define EVENTS_OF_SOURCE(source, name)                                        \
  EVENT_CODE(name##_alloc, source | AEVENT_ALLOC, 0)                          \
  EVENT_CODE(name##_free, source | AEVENT_FREE, 0)                            \
  EVENT_CODE(name##_realloc, source | AEVENT_REALLOC, 0)

#define NEXT_OF_SOURCE(source, name)                                          \
  [source | AEVENT_ALLOC] = &&name##_alloc,                                   \
  [source | AEVENT_FREE] = &&name##_free,                                     \
  [source | AEVENT_REALLOC] = &&name##_realloc

#define DECODE_RUN(function, pext_value)                                      \
  static NOINLINE size_t function(const uint8_t **pp, struct decoder *d,      \
                                  struct symbols *sym,                        \
                                  struct memprof_event *evs, size_t i,        \
                                  size_t end) {                               \
    _Pragma("GCC diagnostic push")                                            \
    _Pragma("GCC diagnostic ignored \"-Woverride-init\"")                     \
    static const void *const next[256] = {                                   \
        [0 ... 255] = &&other,                                                \
        NEXT_OF_SOURCE(ASOURCE_INT, internal),                                \
        NEXT_OF_SOURCE(ASOURCE_LFUNC, lua),                                   \
        NEXT_OF_SOURCE(ASOURCE_CFUNC, cfunc),                                 \
        NEXT_OF_SOURCE(ASOURCE_TRACE, trace)};                                \
    _Pragma("GCC diagnostic pop")                                             \
    const int pext = pext_value;                                              \
    const uint8_t *p = *pp;                                                   \
    size_t used;                                                              \
    goto *next[*p];                                                           \
    EVENTS_OF_SOURCE(ASOURCE_INT, internal)                                   \
    EVENTS_OF_SOURCE(ASOURCE_LFUNC, lua)                                      \
    EVENTS_OF_SOURCE(ASOURCE_CFUNC, cfunc)                                    \
    EVENTS_OF_SOURCE(ASOURCE_TRACE, trace)                                    \
  other:                                                                      \
    if (!d->fast[*p]) goto stop;                                              \
    if (*p & AFLAG_MASK) goto flagged;                                        \
    goto plain;                                                               \
    EVENT_CODE(plain, *p, 0)                                                  \
    EVENT_CODE(flagged, *p, *p & AFLAG_MASK)                                  \
  stop:                                                                       \
    *pp = p;                                                                  \
    return i;                                                                 \
  }

DECODE_RUN(decode_run_pext, 1)
DECODE_RUN(decode_run, 0)

/* A sampled stream: the weights of events the fast path decoded, each
** weight as read in nweight. */
static void follow_decoded(struct decoder *d, struct memprof_event *evs,
                           size_t n) {
  for (size_t i = 0; i < n; i++) follow_weights(d, &evs[i], evs[i].nweight);
}

/* A full batch to the sink; where the next one goes. */
static struct memprof_event *deliver(const struct memprof_sink *sink,
                                     const struct symbols *sym,
                                     struct memprof_event *batch, size_t *n) {
  sink->events(sink->ud, batch, *n, sym->nlocations);
  *n = 0;
  return sink->next_batch ? sink->next_batch(sink->ud) : batch;
}

/* The fast path over the buffered bytes while a longest event fits, in a
** copy with PEXT and one without. Returns 0 at an item it does not take.
** The inner loop runs for as many events as surely fit (each takes at most
** EVENT_MAX_BYTES) and the batch has room for, with no test of either;
** a sampled stream's weights are followed after it, in stream order. */
ALWAYS_INLINE int decode_buffered(struct reader *r, struct decoder *d,
                                  struct symbols *sym,
                                  const struct memprof_sink *sink,
                                  struct memprof_event **batch, size_t *n,
                                  int pext) {
  const uint8_t *p = r->pos, *last = reader_last_window(r, EVENT_MAX_BYTES);
  struct memprof_event *evs = *batch;
  size_t i = *n;
  int stopped = 0;
  while (!stopped && p <= last) {
    size_t fit = (size_t)(last - p) / EVENT_MAX_BYTES + 1;
    size_t first = i;
    size_t end = i + (fit < MEMPROF_BATCH - i ? fit : MEMPROF_BATCH - i);
    i = pext ? decode_run_pext(&p, d, sym, evs, i, end)
             : decode_run(&p, d, sym, evs, i, end);
    stopped = i < end;
    if (sym->memprof.sample) follow_decoded(d, evs + first, i - first);
    if (i == MEMPROF_BATCH) evs = deliver(sink, sym, evs, &i);
  }
  *batch = evs;
  *n = i;
  reader_skip(r, (size_t)(p - r->pos));
  return !stopped;
}

/* What the careful path met. */
enum item { ITEM_EVENT, ITEM_SYMTAB_UPDATE, ITEM_MARK, ITEM_END, ITEM_DAMAGED };

/* The careful path: any item, read byte by byte, errors worded. */
static enum item read_item(struct reader *r, struct symbols *sym,
                           struct decoder *d, struct raw_location *loc,
                           struct memprof_event *ev) {
  uint8_t header;
  if (!reader_u8(r, &header, "event header or end (0x80)")) return ITEM_DAMAGED;
  if (header & LJM_EPILOGUE_HEADER) return ITEM_END;
  unsigned event = HEADER_EVENT(header), source = HEADER_SOURCE(header);
  unsigned flags = HEADER_FLAGS(header);
  uint64_t at = reader_offset(r) - 1;
  if (event == AEVENT_SYMTAB) {
    if (source < ASOURCE_LFUNC || source > d->last_update || flags)
      return bad_header(r, at, header, "unknown symtab update kind"),
             ITEM_DAMAGED;
    return read_symtab_update(r, sym, source, d) ? ITEM_SYMTAB_UPDATE
                                                 : ITEM_DAMAGED;
  }
  if (source < ASOURCE_INT || source > d->last_source)
    return bad_header(r, at, header, "unknown event source"), ITEM_DAMAGED;
  if ((flags & ~d->flags) || ((flags & AFLAG_WEIGHT) && event != MEMPROF_ALLOC))
    return bad_header(r, at, header, "unknown flags"), ITEM_DAMAGED;
  *loc = (struct raw_location){.source = source, .stack = UINT64_MAX};
  *ev = (struct memprof_event){.kind = (enum memprof_event_kind)event};
  if (!read_location(r, loc) ||
      ((flags & AFLAG_STACK) && !reader_uleb(r, &loc->stack, "stack id")) ||
      !read_payload(r, ev) ||
      ((flags & AFLAG_WEIGHT) && !reader_uleb(r, &loc->weight, "weight")))
    return ITEM_DAMAGED;
  return ITEM_EVENT;
}

/* A number an event names that was not announced: damage. */
static int unannounced(struct reader *r, uint64_t at, const char *what,
                       uint64_t value) {
  reader_fail(r, READER_CORRUPT, at,
              "corrupt at offset %" PRIu64 ": event names %s %" PRIu64
              ", not announced before",
              at, what, value);
  return 0;
}

/* An event read whole, its `used` bytes just before the reader's
** position: what it names must have been announced; then its location
** and stack are resolved, so that a damaged event leaves no trace.
** Returns 0 on damage. */
static int resolve_event(struct reader *r, struct symbols *sym,
                         struct decoder *d, size_t used,
                         const struct raw_location *loc,
                         struct memprof_event *ev) {
  if (loc->source == ASOURCE_TRACE_LUA && loc->a >= d->tl.n)
    return unannounced(r, reader_offset(r) - used, "trace location", loc->a);
  if (loc->stack != UINT64_MAX && loc->stack >= sym->nstacks - sym->stack_base)
    return unannounced(r, reader_offset(r) - used, "stack", loc->stack);
  ev->loc = resolve_location(sym, d, loc);
  ev->stack = loc->stack == UINT64_MAX
                  ? MEMPROF_NO_STACK
                  : (uint32_t)(sym->stack_base + loc->stack);
  ev->labels = ev->kind != MEMPROF_FREE &&
                       (loc->stack != UINT64_MAX || loc->weight)
                   ? d->labels
                   : LABELS_NONE;
  if (sym->memprof.sample) follow_weights(d, ev, loc->weight);
  return 1;
}

int memprof_read_events(struct reader *r, struct symbols *sym, unsigned version,
                        const struct memprof_sink *sink) {
  int v4 = version >= LJM_VERSION, v5 = version >= LJM_VERSION_STACKS;
  int v6 = version >= LJM_VERSION_LABELS;
  struct decoder d = {.last_source = v4 ? ASOURCE_VM : ASOURCE_TRACE,
                      .last_update = v5   ? ASOURCE_INFO
                                     : v4 ? ASOURCE_TRACE_LUA
                                          : ASOURCE_TRACE,
                      .flags = v5 ? AFLAG_MASK : 0,
                      .internal = SYMBOLS_NONE,
                      .last_info = v6 ? LJM_INFO_LABELS : LJM_INFO_PROCESS};
  struct memprof_event own_batch[MEMPROF_BATCH];
  struct memprof_event *batch =
      sink->next_batch ? sink->next_batch(sink->ud) : own_batch;
  size_t n = 0;
  int pext = uleb128_pext_fast();
  enum item item;
  for (unsigned header = 0; header < 256; header++)
    d.fast[header] = (uint8_t)fast_header(&d, header);
  livetab_init(&d.weights);
  if (v5 && sym->nstacks == sym->stack_base) add_full_stack(sym);
  for (;;) {
    /* The fast path, while a longest event fits in the buffered bytes. */
    if (reader_window(r, EVENT_MAX_BYTES) &&
        (pext ? decode_buffered(r, &d, sym, sink, &batch, &n, 1)
              : decode_buffered(r, &d, sym, sink, &batch, &n, 0)))
      continue; /* past the last window: buffer more */
    /* The careful path: one item, whatever it is. */
    struct raw_location loc;
    struct memprof_event *ev = &batch[n];
    uint64_t at = reader_offset(r);
    item = read_item(r, sym, &d, &loc, ev);
    if (item == ITEM_SYMTAB_UPDATE && d.mark) item = ITEM_MARK;
    if (item == ITEM_SYMTAB_UPDATE) continue;
    if (item != ITEM_EVENT && item != ITEM_MARK) break;
    if (item == ITEM_MARK) { /* in stream order with the events */
      *ev = (struct memprof_event){
          .kind = MEMPROF_MARK, .naddr = d.mark_ns, .oaddr = d.snapshot};
      d.mark = 0;
      d.snapshot = 0;
    } else if (!resolve_event(r, sym, &d, (size_t)(reader_offset(r) - at),
                              &loc, ev)) {
      item = ITEM_DAMAGED;
      break;
    }
    if (++n == MEMPROF_BATCH) batch = deliver(sink, sym, batch, &n);
  }
  if (n > 0) sink->events(sink->ud, batch, n, sym->nlocations);
  free(d.tl.loc);
  livetab_free(&d.weights);
  sbuf_free(&d.scratch);
  return item == ITEM_END;
}
