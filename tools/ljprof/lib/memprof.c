#include "memprof.h"

#include <inttypes.h>
#include <stdlib.h>

#include "symtab.h"

/* Event header: [F UU SSS EE], high bit to low. */
#define HEADER_END 0x80
#define HEADER_EVENT(h) ((h)&3u)
#define HEADER_SOURCE(h) (((h) >> 2) & 7u)

enum { EV_SYMTAB = 0 }; /* the other event values are memprof_event_kind */

enum source {
  SRC_INTERNAL = 1,
  SRC_LFUNC = 2,
  SRC_CFUNC = 3,
  SRC_TRACE = 4,
  SRC_TRACE_LUA = 5 /* v4: a trace location, announced before */
};

/* Trace locations are numbered 0, 1, ... in the order they are announced;
** more than this is not a stream our writer makes. */
#define TRACE_LOCS_MAX (1u << 24)

/* The location each announced trace location resolved to. */
struct trace_locs {
  uint32_t *loc;
  size_t n, cap;
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
  uint64_t a; /* proto address, C function address, trace number or trace
                location */
  uint64_t line;
};

static int read_location(struct reader *r, struct raw_location *loc) {
  switch (loc->source) {
  case SRC_INTERNAL:
    return 1;
  case SRC_LFUNC:
    return reader_uleb(r, &loc->a, "location: proto address") &&
           reader_uleb(r, &loc->line, "location: line");
  case SRC_CFUNC:
    return reader_uleb(r, &loc->a, "location: C function address");
  case SRC_TRACE_LUA:
    return reader_uleb(r, &loc->a, "location: trace location");
  default: /* SRC_TRACE; the caller checked the range */
    return reader_uleb(r, &loc->a, "location: trace number");
  }
}

/* The caller checked that a trace location was announced. */
static uint32_t resolve_location(struct symbols *sym,
                                 const struct trace_locs *tl,
                                 const struct raw_location *loc) {
  switch (loc->source) {
  case SRC_INTERNAL:
    return symbols_loc_internal(sym);
  case SRC_TRACE_LUA: /* the line is what the reports name */
    return tl->loc[loc->a];
  case SRC_LFUNC:
    return symbols_loc_lua(sym, loc->a, loc->line);
  case SRC_CFUNC:
    return symbols_loc_cfunc(sym, loc->a);
  default:
    return symbols_loc_trace(sym, loc->a);
  }
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
                              unsigned source, struct trace_locs *tl,
                              struct sbuf *scratch) {
  if (source == SRC_TRACE_LUA) return read_trace_loc(r, sym, tl);
  enum symtab_entry type = source == SRC_LFUNC   ? SYMTAB_LFUNC
                           : source == SRC_CFUNC ? SYMTAB_CFUNC
                                                 : SYMTAB_TRACE;
  return symtab_read_entry(r, sym, type, scratch);
}

/* The longest event: a header, a Lua location and a realloc payload. */
#define EVENT_MAX_BYTES (1 + 6 * ULEB128_MAX_BYTES)

/* The next field of an event in a window of EVENT_MAX_BYTES at *p. */
static int take_field(const uint8_t **p, uint64_t *out) {
  int used = uleb128_decode_unchecked(*p, out);
  *p += used;
  return used > 0;
}

/*
** The fast path: an alloc, free or realloc event from a window of at
** least EVENT_MAX_BYTES, with one bounds check for the whole event.
** Returns the bytes it takes, or 0 for anything else (a symtab update,
** the end, damage), which the careful path then decodes and words.
*/
static size_t decode_event(const uint8_t *window, unsigned last_source,
                           struct raw_location *loc,
                           struct memprof_event *ev) {
  uint8_t header = window[0];
  unsigned event = HEADER_EVENT(header), source = HEADER_SOURCE(header);
  if ((header & HEADER_END) || event == EV_SYMTAB || source < SRC_INTERNAL ||
      source > last_source)
    return 0;
  const uint8_t *p = window + 1;
  int ok = 1;
  *loc = (struct raw_location){source, 0, 0};
  if (source != SRC_INTERNAL) ok = take_field(&p, &loc->a);
  if (source == SRC_LFUNC) ok = ok && take_field(&p, &loc->line);
  *ev = (struct memprof_event){.kind = (enum memprof_event_kind)event};
  if (event != MEMPROF_ALLOC)
    ok = ok && take_field(&p, &ev->oaddr) && take_field(&p, &ev->osize);
  if (event != MEMPROF_FREE)
    ok = ok && take_field(&p, &ev->naddr) && take_field(&p, &ev->nsize);
  return ok ? (size_t)(p - window) : 0;
}

/* What the careful path met. */
enum item { ITEM_EVENT, ITEM_SYMTAB_UPDATE, ITEM_END, ITEM_DAMAGED };

/* The careful path: any item, read byte by byte, errors worded. */
static enum item read_item(struct reader *r, struct symbols *sym,
                           unsigned last_source, struct raw_location *loc,
                           struct memprof_event *ev, struct trace_locs *tl,
                           struct sbuf *scratch) {
  uint8_t header;
  if (!reader_u8(r, &header, "event header or end (0x80)")) return ITEM_DAMAGED;
  if (header & HEADER_END) return ITEM_END;
  unsigned event = HEADER_EVENT(header), source = HEADER_SOURCE(header);
  uint64_t at = reader_offset(r) - 1;
  if (event == EV_SYMTAB) {
    if (source < SRC_LFUNC || source > last_source)
      return bad_header(r, at, header, "unknown symtab update kind"),
             ITEM_DAMAGED;
    return read_symtab_update(r, sym, source, tl, scratch) ? ITEM_SYMTAB_UPDATE
                                                           : ITEM_DAMAGED;
  }
  if (source < SRC_INTERNAL || source > last_source)
    return bad_header(r, at, header, "unknown event source"), ITEM_DAMAGED;
  *loc = (struct raw_location){source, 0, 0};
  *ev = (struct memprof_event){.kind = (enum memprof_event_kind)event};
  return read_location(r, loc) && read_payload(r, ev) ? ITEM_EVENT
                                                      : ITEM_DAMAGED;
}

int memprof_read_events(struct reader *r, struct symbols *sym, unsigned version,
                        const struct memprof_sink *sink) {
  unsigned last_source = version >= 4 ? SRC_TRACE_LUA : SRC_TRACE;
  struct trace_locs tl = {0};
  struct sbuf scratch = {0};
  struct memprof_event batch[MEMPROF_BATCH];
  size_t n = 0;
  enum item item;
  for (;;) {
    struct raw_location loc;
    struct memprof_event *ev = &batch[n];
    uint64_t at = reader_offset(r);
    const uint8_t *window = reader_window(r, EVENT_MAX_BYTES);
    size_t used = window ? decode_event(window, last_source, &loc, ev) : 0;
    if (used) {
      reader_skip(r, used);
    } else {
      item = read_item(r, sym, last_source, &loc, ev, &tl, &scratch);
      if (item == ITEM_SYMTAB_UPDATE) continue;
      if (item != ITEM_EVENT) break;
    }
    if (loc.source == SRC_TRACE_LUA && loc.a >= tl.n) {
      reader_fail(r, READER_CORRUPT, at,
                  "corrupt at offset %" PRIu64
                  ": event names trace location %" PRIu64
                  ", not announced before",
                  at, loc.a);
      item = ITEM_DAMAGED;
      break;
    }
    /* Resolved only now, so that a damaged event leaves no trace. */
    ev->loc = resolve_location(sym, &tl, &loc);
    if (++n == MEMPROF_BATCH) {
      sink->events(sink->ud, batch, n);
      n = 0;
    }
  }
  if (n > 0) sink->events(sink->ud, batch, n);
  free(tl.loc);
  sbuf_free(&scratch);
  return item == ITEM_END;
}
