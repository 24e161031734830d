/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "sysprof.h"

#include <inttypes.h>
#include <stdlib.h>

#include "labelrec.h"
#include "shared/hashtab.h"
#include "symtab.h"

static const char *const vmstate_names[VMSTATE_COUNT] = {
    LJP_VMSTDEF(LJP_VMSTNAME)};

const char *sysprof_vmstate_name(unsigned state) {
  return state < VMSTATE_COUNT ? vmstate_names[state] : "?";
}

static const struct {
  const char *name, *key;
} kinds[KIND_COUNT] = {
    [KIND_COMPILED] = {"compiled (traces)", "compiled"},
    [KIND_INTERPRETED] = {"interpreted", "interpreted"},
    [KIND_C] = {"C functions, FFI", "c"},
    [KIND_JIT] = {"JIT compiler", "jit_compiler"},
    [KIND_EXITS] = {"trace exits", "exits"},
    [KIND_GC] = {"GC", "gc"}};

enum sysprof_kind sysprof_kind_of(unsigned state) {
  static const enum sysprof_kind of[VMSTATE_COUNT] = {
      [VMSTATE_INTERP] = KIND_INTERPRETED, [VMSTATE_LFUNC] = KIND_INTERPRETED,
      [VMSTATE_FFUNC] = KIND_INTERPRETED,  [VMSTATE_CFUNC] = KIND_C,
      [VMSTATE_GC] = KIND_GC,              [VMSTATE_EXIT] = KIND_EXITS,
      [VMSTATE_RECORD] = KIND_JIT,         [VMSTATE_OPT] = KIND_JIT,
      [VMSTATE_ASM] = KIND_JIT,            [VMSTATE_TRACE] = KIND_COMPILED};
  return state < VMSTATE_COUNT ? of[state] : KIND_INTERPRETED;
}

const char *sysprof_kind_name(enum sysprof_kind kind) {
  return kinds[kind].name;
}

const char *sysprof_kind_key(enum sysprof_kind kind) {
  return kinds[kind].key;
}

const char *sysprof_mode_name(enum sysprof_mode mode) {
  static const char *const names[] = {"D", "L", "C"};
  return names[mode];
}

/* A frame as the stream has it: v3's tags (LJP_FRAME_*); v2 frames are
** read into the same ones. */
struct raw_frame {
  unsigned tag;
  uint64_t a, b, c, d;
};

/*
** The samples met before, by the bytes of their frames (the end byte
** too): a profile repeats its stacks, a few thousand of them many times
** each, and finding a stack's bytes costs less than decoding and
** resolving its frames again. Its frames as resolved hold while no
** binding changes (symbols_bindings() says). Samples of more bytes, and
** those met after the first SEEN_MAX, are decoded each time.
**
** Before the bytes are measured and hashed, a guess: the sample met last
** whose first GUESS_BYTES bytes (its innermost frames) are these. Frames
** are encoded so that no sample's bytes begin another's (they are read
** to their end byte, the same bytes the same way), so a kept sample whose
** bytes begin the window is the sample there.
*/
#define SEEN_MAX_BYTES 256
#define SEEN_MAX 16384
#define GUESS_BYTES 16
#define GUESS_BITS 16

struct seen_sample {
  uint32_t bytes, len;      /* at seen.bytes[bytes] */
  uint32_t frames, nframes; /* at seen.frames[frames] */
  uint64_t bindings;        /* what they were resolved with */
  uint32_t frames_id;       /* sysprof_sample's, while they hold */
};

struct seen {
  struct hashtab index;
  struct seen_sample *items;
  size_t n, cap;
  uint8_t *bytes;
  size_t nbytes, bytes_cap;
  struct sysprof_frame *frames;
  size_t nframes, frames_cap;
  uint32_t frames_ids; /* given; UINT32_MAX: no more */
  uint32_t *guess; /* by the hash of a window's first bytes: an id + 1 */
};

/* A sample's bytes as the reader has them, to look up in seen. */
struct seen_key {
  const uint8_t *bytes;
  size_t len; /* 0: not to be kept */
  uint32_t hash;
};

struct seen_probe {
  const struct seen *seen;
  const struct seen_key *key;
};

struct decoder {
  struct reader *r;
  struct symbols *sym;
  unsigned version;
  struct raw_frame *raw; /* the frames of the sample being read */
  size_t nraw, raw_cap;
  struct sysprof_frame *frames; /* the same, resolved */
  size_t frames_cap;
  struct sbuf scratch;
  uint32_t labels; /* the label set in force */
  struct seen seen;
};

static int corrupt(struct reader *r, uint64_t at, const char *problem,
                   unsigned byte) {
  reader_fail(r, READER_CORRUPT, at, "corrupt at offset %" PRIu64 ": %s 0x%02x",
              at, problem, byte);
  return 0;
}

static struct raw_frame *add_frame(struct decoder *d, uint64_t at) {
  if (d->nraw == SYSPROF_MAX_FRAMES) {
    reader_fail(d->r, READER_CORRUPT, at,
                "corrupt at offset %" PRIu64
                ": a sample of more than %d frames",
                at, SYSPROF_MAX_FRAMES);
    return NULL;
  }
  grow_array((void **)&d->raw, &d->raw_cap, d->nraw + 1, sizeof *d->raw);
  return &d->raw[d->nraw++];
}

/* The fields of a frame of the given tag. */
static int read_frame_fields(struct reader *r, struct raw_frame *f) {
  switch (f->tag) {
  case LJP_FRAME_LUA:
    return reader_uleb(r, &f->a, "Lua frame: proto address") &&
           reader_uleb(r, &f->b, "Lua frame: line");
  case LJP_FRAME_CFUNC:
    return reader_uleb(r, &f->a, "C function frame: address");
  case LJP_FRAME_FFUNC:
    return reader_uleb(r, &f->a, "fast function frame: id");
  case LJP_FRAME_NATIVE:
    return reader_uleb(r, &f->a, "native frame: address");
  case LJP_FRAME_TRACE:
    return reader_uleb(r, &f->a, "trace: number") &&
           reader_uleb(r, &f->b, "trace: start proto address") &&
           reader_uleb(r, &f->c, "trace: start line");
  default: /* LJP_FRAME_TRACE_LUA */
    return reader_uleb(r, &f->a, "trace: number") &&
           reader_uleb(r, &f->b, "trace: start proto address") &&
           reader_uleb(r, &f->c, "trace: start line") &&
           reader_uleb(r, &f->d, "trace: Lua frames it runs");
  }
}

/* The longest frame: a tag and four fields. */
#define FRAME_MAX_BYTES (1 + 4 * ULEB128_MAX_BYTES)

/* The fields of a frame by its tag (read_frame_fields() names them). */
static const uint8_t frame_fields[] = {
    [LJP_FRAME_LUA] = 2,    [LJP_FRAME_CFUNC] = 1, [LJP_FRAME_FFUNC] = 1,
    [LJP_FRAME_NATIVE] = 1, [LJP_FRAME_TRACE] = 3, [LJP_FRAME_TRACE_LUA] = 4};

/*
** The fast path: a frame from a window of at least FRAME_MAX_BYTES, its
** fields decoded without a bounds check each. Returns the bytes it takes,
** or 0 for anything else (the end byte, an unknown tag, a malformed
** field), which the careful path then reads and words.
*/
static size_t decode_frame(const uint8_t *window, unsigned last_tag,
                           struct raw_frame *f) {
  unsigned tag = window[0];
  if (tag < LJP_FRAME_LUA || tag > last_tag) return 0;
  const uint8_t *p = window + 1;
  int used = 0; /* the fields' lengths or'ed: negative if one is malformed */
  unsigned fields = frame_fields[tag];
  *f = (struct raw_frame){.tag = tag};
  used |= uleb128_take(&p, &f->a);
  if (fields >= 2) used |= uleb128_take(&p, &f->b);
  if (fields >= 3) used |= uleb128_take(&p, &f->c);
  if (fields >= 4) used |= uleb128_take(&p, &f->d);
  return used < 0 ? 0 : (size_t)(p - window);
}

/*
** Tagged frames up to the end byte: those of a v3 sample (tags 1 ... 6),
** or the Lua stack of a v2 sample (tags 1 ... 3).
*/
static int read_tagged_frames(struct decoder *d, unsigned last_tag,
                              const char *what) {
  for (;;) {
    const uint8_t *window = reader_window(d->r, FRAME_MAX_BYTES);
    if (window && window[0] == LJP_END) {
      reader_skip(d->r, 1);
      return 1;
    }
    if (window && d->nraw < SYSPROF_MAX_FRAMES) {
      grow_array((void **)&d->raw, &d->raw_cap, d->nraw + 1, sizeof *d->raw);
      size_t used = decode_frame(window, last_tag, &d->raw[d->nraw]);
      if (used) {
        d->nraw++;
        reader_skip(d->r, used);
        continue;
      }
    }
    uint8_t tag;
    if (!reader_u8(d->r, &tag, what)) return 0;
    if (tag == LJP_END) return 1;
    uint64_t at = reader_offset(d->r) - 1;
    if (tag < LJP_FRAME_LUA || tag > last_tag)
      return corrupt(d->r, at, "unknown frame tag", tag);
    struct raw_frame *f = add_frame(d, at);
    if (!f) return 0;
    *f = (struct raw_frame){.tag = tag};
    if (!read_frame_fields(d->r, f)) return 0;
  }
}

/* A v2 host stack: return addresses, innermost first, up to a zero. */
static int read_host_stack(struct decoder *d) {
  for (;;) {
    uint64_t at = reader_offset(d->r), addr;
    if (!reader_uleb(d->r, &addr, "host stack: address or end (0)"))
      return 0;
    if (addr == 0) return 1;
    struct raw_frame *f = add_frame(d, at);
    if (!f) return 0;
    *f = (struct raw_frame){.tag = LJP_FRAME_NATIVE, .a = addr};
  }
}

static int read_v2_sample(struct decoder *d, enum vmstate state) {
  switch (state) {
  case VMSTATE_LFUNC:
  case VMSTATE_FFUNC:
  case VMSTATE_CFUNC:
    return read_tagged_frames(d, LJP_FRAME_FFUNC,
                              "Lua stack: frame or end (0x80)") &&
           read_host_stack(d);
  case VMSTATE_TRACE: {
    struct raw_frame *f = add_frame(d, reader_offset(d->r));
    if (!f) return 0;
    *f = (struct raw_frame){.tag = LJP_FRAME_TRACE};
    return read_frame_fields(d->r, f);
  }
  default:
    return read_host_stack(d);
  }
}

/*
** The bytes of a sample's frames and end byte at the start of a window of
** SEEN_MAX_BYTES + FRAME_MAX_BYTES, found without decoding them; 0 for
** more bytes or an unknown tag. (The fields of these bytes may be
** malformed: the decoder finds out when it meets them first.)
*/
static size_t sample_length(const uint8_t *window) {
  size_t at = 0;
  while (at < SEEN_MAX_BYTES) {
    unsigned tag = window[at++];
    if (tag == LJP_END) return at;
    if (tag < LJP_FRAME_LUA || tag > LJP_FRAME_TRACE_LUA) return 0;
    for (unsigned i = 0; i < frame_fields[tag]; i++) {
      size_t n = uleb128_length(window + at);
      if (!n) return 0;
      at += n;
    }
  }
  return 0;
}

static int same_bytes(const void *ctx, uint32_t id) {
  const struct seen_probe *p = ctx;
  const struct seen_sample *e = &p->seen->items[id];
  return e->len == p->key->len &&
         memcmp(p->seen->bytes + e->bytes, p->key->bytes, e->len) == 0;
}

static uint32_t *guess_slot(struct seen *seen, const uint8_t *window) {
  if (!seen->guess) seen->guess = xcalloc(1u << GUESS_BITS, sizeof *seen->guess);
  uint32_t h = hash_bytes(window, GUESS_BYTES);
  return &seen->guess[h >> (32 - GUESS_BITS)];
}

/* The sample at the reader in seen: its id, or HASHTAB_NONE (then
** key->len is 0 if it is not to be kept; nor is a sample of no frames,
** its end byte alone, as cheap to decode again). */
static uint32_t find_seen(struct decoder *d, struct seen_key *key) {
  *key = (struct seen_key){0};
  const uint8_t *window =
      reader_window(d->r, SEEN_MAX_BYTES + FRAME_MAX_BYTES);
  if (!window) return HASHTAB_NONE;
  uint32_t *guess = guess_slot(&d->seen, window);
  if (*guess && *guess <= d->seen.n) { /* else one never remembered */
    const struct seen_sample *e = &d->seen.items[*guess - 1];
    if (memcmp(d->seen.bytes + e->bytes, window, e->len) == 0) {
      *key = (struct seen_key){window, e->len, 0};
      return *guess - 1;
    }
  }
  if ((key->len = sample_length(window)) <= 1) {
    key->len = 0;
    return HASHTAB_NONE;
  }
  key->bytes = window;
  key->hash = hash_bytes(window, key->len);
  struct seen_probe probe = {&d->seen, key};
  uint32_t id = hashtab_find(&d->seen.index, key->hash, same_bytes, &probe);
  /* A new one is guessed once remembered (its id then seen.n). */
  *guess = (id != HASHTAB_NONE ? id : (uint32_t)d->seen.n) + 1;
  return id;
}

/* A new sample's bytes, copied past those kept before the reader moves
** on; 0 when seen is full. */
static int save_bytes(struct seen *seen, const struct seen_key *key) {
  if (seen->n == SEEN_MAX) return 0;
  grow_mapped((void **)&seen->bytes, &seen->bytes_cap, seen->nbytes + key->len,
              1);
  memcpy(seen->bytes + seen->nbytes, key->bytes, key->len);
  return 1;
}

/* Keep a sample's frames as resolved with these bindings: a new one
** (its bytes saved), or in the place of those of others (id). Returns
** their frames_id. */
static uint32_t remember(struct seen *seen, const struct seen_key *key,
                         uint32_t id, uint64_t bindings,
                         const struct sysprof_frame *frames, size_t n) {
  if (id == HASHTAB_NONE) {
    grow_mapped((void **)&seen->items, &seen->cap, seen->n + 1,
                sizeof *seen->items);
    grow_mapped((void **)&seen->frames, &seen->frames_cap, seen->nframes + n,
                sizeof *seen->frames);
    id = (uint32_t)seen->n++;
    seen->items[id] = (struct seen_sample){
        (uint32_t)seen->nbytes, (uint32_t)key->len, (uint32_t)seen->nframes,
        (uint32_t)n, 0, 0};
    seen->nbytes += key->len;
    seen->nframes += n;
    hashtab_add(&seen->index, key->hash, id);
  }
  struct seen_sample *e = &seen->items[id];
  e->bindings = bindings;
  e->frames_id = seen->frames_ids < UINT32_MAX ? ++seen->frames_ids : 0;
  memcpy(seen->frames + e->frames, frames, n * sizeof *frames);
  return e->frames_id;
}

/*
** The sample at the reader, if its frames' bytes were met before and
** resolved with these bindings: its frames from seen, the reader past
** them (1). Else 0, and where to keep the sample once decoded: *key, and
** *id for an entry of other bindings.
*/
static int take_seen(struct decoder *d, struct sysprof_sample *s,
                     uint64_t bindings, struct seen_key *key, uint32_t *id) {
  *id = find_seen(d, key);
  if (*id == HASHTAB_NONE) {
    if (key->len && !save_bytes(&d->seen, key)) key->len = 0;
    return 0;
  }
  const struct seen_sample *e = &d->seen.items[*id];
  if (e->bindings != bindings) return 0;
  reader_skip(d->r, e->len);
  s->nframes = e->nframes;
  s->frames = d->seen.frames + e->frames;
  s->frames_id = e->frames_id;
  return 1;
}

static void seen_free(struct seen *seen) {
  free(seen->guess);
  hashtab_free(&seen->index);
  mapped_free(seen->items, seen->cap, sizeof *seen->items);
  mapped_free(seen->bytes, seen->bytes_cap, 1);
  mapped_free(seen->frames, seen->frames_cap, sizeof *seen->frames);
}

static struct sysprof_frame resolve(struct symbols *sym,
                                    const struct raw_frame *f) {
  uint32_t loc;
  switch (f->tag) {
  case LJP_FRAME_LUA:
    return (struct sysprof_frame){symbols_loc_lua(sym, f->a, f->b),
                                  symbols_loc_proto(sym, f->a), 1, 0};
  case LJP_FRAME_CFUNC:
    loc = symbols_loc_code(sym, f->a);
    return (struct sysprof_frame){loc, loc, 1, 0};
  case LJP_FRAME_FFUNC:
    loc = symbols_loc_ffunc(sym, f->a);
    return (struct sysprof_frame){loc, loc, 1, 0};
  case LJP_FRAME_NATIVE:
    loc = symbols_loc_code(sym, f->a);
    return (struct sysprof_frame){loc, loc, 0, 0};
  default: /* a trace (LJP_FRAME_TRACE, _TRACE_LUA): the code running the
              Lua lines, not one */
    loc = symbols_loc_trace_frame(sym, f->a, f->b, f->c);
    return (struct sysprof_frame){loc, loc, 0, 0};
  }
}

/*
** A trace's frame (tag 6) says how many of the Lua frames that follow run
** in its machine code: those it inlined, innermost first, then the one it
** was entered in. Each but that last runs inlined into the next. Only Lua
** lines (tag 1) right after the trace count: a sample cut short, or a
** frame of another kind, ends them sooner than the count says.
*/
static void mark_inlined(struct decoder *d) {
  for (size_t t = 0; t < d->nraw; t++) {
    if (d->raw[t].tag != LJP_FRAME_TRACE_LUA) continue;
    size_t end = t + 1;
    while (end < d->nraw && end - t <= d->raw[t].d &&
           d->raw[end].tag == LJP_FRAME_LUA)
      end++;
    for (size_t i = t + 1; i + 1 < end; i++) d->frames[i].inlined = 1;
  }
}

static int read_sample(struct decoder *d, enum vmstate state, int jit,
                       const struct sysprof_sink *sink) {
  struct sysprof_sample s = {
      .vmstate = state, .has_jit = jit, .labels = d->labels};
  if (jit && (!reader_uleb(d->r, &s.jit_trace, "sample: trace") ||
              !reader_uleb(d->r, &s.jit_exit, "sample: exit")))
    return 0;
  struct seen_key key = {0};
  uint32_t id = HASHTAB_NONE;
  uint64_t bindings = symbols_bindings(d->sym);
  if (d->version != LJP_VERSION_REFERENCE &&
      take_seen(d, &s, bindings, &key, &id)) {
    sink->sample(sink->ud, &s);
    return 1;
  }
  uint64_t at = reader_offset(d->r);
  d->nraw = 0;
  int ok = d->version == LJP_VERSION_REFERENCE
               ? read_v2_sample(d, state)
               : read_tagged_frames(d, LJP_FRAME_TRACE_LUA,
                                    "frame or end (0x80)");
  if (!ok) return 0;
  /* Resolved only now, so that a damaged sample leaves no trace. */
  grow_array((void **)&d->frames, &d->frames_cap, d->nraw,
             sizeof *d->frames);
  for (size_t i = 0; i < d->nraw; i++) d->frames[i] = resolve(d->sym, &d->raw[i]);
  mark_inlined(d);
  if (key.len && reader_offset(d->r) - at == key.len)
    s.frames_id = remember(&d->seen, &key, id, bindings, d->frames, d->nraw);
  s.nframes = d->nraw;
  s.frames = d->frames;
  sink->sample(sink->ud, &s);
  return 1;
}

static int read_ffname(struct decoder *d) {
  uint64_t id;
  if (!reader_uleb(d->r, &id, "fast function name: id") ||
      !reader_string(d->r, &d->scratch, SYMTAB_MAX_NAME,
                     "fast function name: name"))
    return 0;
  symbols_bind_ffunc(d->sym, id, d->scratch.data, d->scratch.len);
  return 1;
}

static int read_config(struct decoder *d, struct sysprof_meta *meta) {
  uint64_t mode, interval, clock, at = reader_offset(d->r);
  if (!reader_uleb(d->r, &mode, "config: mode")) return 0;
  if (mode > SYSPROF_CALLGRAPH) {
    reader_fail(d->r, READER_CORRUPT, at,
                "corrupt at offset %" PRIu64 ": unknown profiling mode %" PRIu64
                " in the config record (0 D, 1 L, 2 C)",
                at, mode);
    return 0;
  }
  if (!reader_uleb(d->r, &interval, "config: interval")) return 0;
  at = reader_offset(d->r);
  if (!reader_uleb(d->r, &clock, "config: clock")) return 0;
  if (clock > SYSPROF_CLOCK_THREAD_CPU_PERF) {
    reader_fail(d->r, READER_CORRUPT, at,
                "corrupt at offset %" PRIu64 ": unknown clock %" PRIu64
                " in the config record (0 thread CPU time, 1 monotonic,"
                " 2 thread CPU time by perf)",
                at, clock);
    return 0;
  }
  meta->has_config = 1;
  meta->mode = (enum sysprof_mode)mode;
  meta->interval_us = interval;
  meta->clock = (enum sysprof_clock)clock;
  return 1;
}

static int read_stats(struct decoder *d, struct sysprof_meta *meta) {
  uint64_t v[1 + VMSTATE_COUNT + 3];
  static const char *const what[] = {
      "stats: samples",        "stats: INTERP samples", "stats: LFUNC samples",
      "stats: FFUNC samples",  "stats: CFUNC samples",  "stats: GC samples",
      "stats: EXIT samples",   "stats: RECORD samples", "stats: OPT samples",
      "stats: ASM samples",    "stats: TRACE samples",  "stats: samples dropped",
      "stats: timer overruns", "stats: nanoseconds elapsed"};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++)
    if (!reader_uleb(d->r, &v[i], what[i])) return 0;
  if (d->version >= LJP_VERSION_LABELS && !labelrec_read_folded(d->r, d->sym))
    return 0;
  meta->has_stats = 1;
  meta->samples = v[0];
  for (size_t i = 0; i < VMSTATE_COUNT; i++) meta->by_vmstate[i] = v[1 + i];
  meta->dropped = v[1 + VMSTATE_COUNT];
  meta->overruns = v[2 + VMSTATE_COUNT];
  meta->elapsed_ns = v[3 + VMSTATE_COUNT];
  return 1;
}

/* A Lua line of an event: proto address and line. */
static int read_jit_loc(struct decoder *d, struct sysprof_jit_event *e,
                        const char *what_proto, const char *what_line) {
  uint64_t proto, line;
  if (!reader_uleb(d->r, &proto, what_proto) ||
      !reader_uleb(d->r, &line, what_line))
    return 0;
  e->loc = proto ? symbols_loc_lua(d->sym, proto, line) : SYMBOLS_NONE;
  e->func = proto ? symbols_loc_proto(d->sym, proto) : SYMBOLS_NONE;
  return 1;
}

static void deliver(const struct sysprof_sink *sink,
                    const struct sysprof_jit_event *e) {
  if (sink->jit) sink->jit(sink->ud, e);
}

static int read_exits(struct decoder *d, const struct sysprof_sink *sink) {
  uint64_t n;
  if (!reader_uleb(d->r, &n, "exits: count")) return 0;
  for (uint64_t i = 0; i < n; i++) {
    struct sysprof_jit_event e = {.kind = JIT_EXIT};
    if (!reader_uleb(d->r, &e.trace, "exit: trace") ||
        !reader_uleb(d->r, &e.exit, "exit: number") ||
        !reader_uleb(d->r, &e.count, "exit: times taken") ||
        !read_jit_loc(d, &e, "exit: proto address", "exit: line"))
      return 0;
    deliver(sink, &e);
  }
  return 1;
}

/* An event of the trace compiler (records REC_TRACE_START ... REC_JIT). */
static int read_jit(struct decoder *d, unsigned byte,
                    const struct sysprof_sink *sink) {
  struct sysprof_jit_event e = {.loc = SYMBOLS_NONE, .func = SYMBOLS_NONE};
  uint64_t how = 0;
  int ok;
  switch (byte) {
  case REC_JIT:
    e.kind = JIT_STATE;
    ok = reader_uleb(d->r, &how, "jit: on");
    break;
  case REC_TRACE_START:
    e.kind = JIT_START;
    ok = reader_uleb(d->r, &e.trace, "trace start: trace") &&
         reader_uleb(d->r, &how, "trace start: kind") &&
         reader_uleb(d->r, &e.from, "trace start: from") &&
         reader_uleb(d->r, &e.exit, "trace start: exit") &&
         read_jit_loc(d, &e, "trace start: proto address",
                      "trace start: line");
    break;
  case REC_TRACE_END:
    e.kind = JIT_END;
    ok = reader_uleb(d->r, &e.trace, "trace end: trace") &&
         reader_uleb(d->r, &how, "trace end: link type") &&
         reader_uleb(d->r, &e.link, "trace end: link") &&
         reader_uleb(d->r, &e.nins, "trace end: IR instructions") &&
         reader_uleb(d->r, &e.nmcode, "trace end: machine code bytes");
    break;
  case REC_TRACE_ABORT:
    e.kind = JIT_ABORT;
    ok = reader_uleb(d->r, &e.trace, "trace abort: trace") &&
         read_jit_loc(d, &e, "trace abort: proto address",
                      "trace abort: line") &&
         reader_uleb(d->r, &e.error, "trace abort: error") &&
         reader_string(d->r, &d->scratch, SYMTAB_MAX_NAME,
                       "trace abort: reason");
    e.reason = d->scratch.data;
    e.reason_len = d->scratch.len;
    break;
  case REC_BLACKLIST:
    e.kind = JIT_BLACKLIST;
    ok = read_jit_loc(d, &e, "blacklist: proto address", "blacklist: line");
    break;
  case REC_FLUSH:
    e.kind = JIT_FLUSH;
    ok = reader_uleb(d->r, &how, "flush: why");
    break;
  default: /* REC_EXITS */
    return read_exits(d, sink);
  }
  if (!ok) return 0;
  e.how = how > 255 ? 255 : (unsigned)how;
  deliver(sink, &e);
  return 1;
}

/* A label record (v4). */
static int read_labels(struct decoder *d, unsigned byte,
                       const struct sysprof_sink *sink) {
  if (byte == REC_LABELSET)
    return labelrec_read_set(d->r, d->sym, &d->scratch);
  if (byte == REC_LABELS)
    return labelrec_read_in_force(d->r, d->sym, &d->labels);
  const struct sysprof_meta *m = sink->meta;
  if (!m->has_config || m->mode != SYSPROF_DEFAULT)
    return corrupt(d->r, reader_offset(d->r) - 1,
                   "samples by label set outside mode D, record", byte);
  return labelrec_read_counts(d->r, d->sym, sink->label_count, sink->ud);
}

/* One record; returns 1, 0 on damage, or -1 at the end byte. */
static int read_record(struct decoder *d, const struct sysprof_sink *sink) {
  uint8_t byte;
  if (!reader_u8(d->r, &byte, "record or end (0x80)")) return 0;
  if (byte == LJP_END) return -1;
  if (byte < VMSTATE_COUNT)
    return read_sample(d, (enum vmstate)byte, 0, sink);
  int v3 = d->version >= LJP_VERSION;
  if (v3 && (byte & LJP_SAMPLE_JIT) &&
      (byte & ~LJP_SAMPLE_JIT) < VMSTATE_COUNT)
    return read_sample(d, (enum vmstate)(byte & ~LJP_SAMPLE_JIT), 1, sink);
  if (v3 && byte >= REC_TRACE_START && byte <= REC_JIT)
    return read_jit(d, byte, sink);
  switch (byte) {
  case REC_PROTO:
    return symtab_read_entry(d->r, d->sym, SYMTAB_LFUNC, &d->scratch);
  case REC_CSYM:
    return symtab_read_entry(d->r, d->sym, SYMTAB_CFUNC, &d->scratch);
  case REC_TRACE:
    return symtab_read_entry(d->r, d->sym, SYMTAB_TRACE, &d->scratch);
  case REC_FFNAME:
    if (v3) return read_ffname(d);
    break;
  case REC_CONFIG:
    if (v3) return read_config(d, sink->meta);
    break;
  case REC_STATS:
    if (v3) return read_stats(d, sink->meta);
    break;
  case REC_PROCESS:
    if (v3) return symtab_read_process(d->r, d->sym, &d->scratch);
    break;
  case REC_LABELSET:
  case REC_LABELS:
  case REC_LABELCOUNTS:
    if (d->version >= LJP_VERSION_LABELS) return read_labels(d, byte, sink);
    break;
  }
  return corrupt(d->r, reader_offset(d->r) - 1, "unknown sysprof record",
                 byte);
}

int sysprof_read_records(struct reader *r, struct symbols *sym,
                         unsigned version, const struct sysprof_sink *sink) {
  struct decoder d = {.r = r, .sym = sym, .version = version};
  sink->meta->version = version;
  int status;
  while ((status = read_record(&d, sink)) == 1) continue;
  free(d.raw);
  free(d.frames);
  seen_free(&d.seen);
  sbuf_free(&d.scratch);
  return status == -1;
}
