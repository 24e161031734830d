#include "memprof.h"

#include <inttypes.h>

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
  SRC_TRACE = 4
};

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
  uint64_t a; /* proto address, C function address or trace number */
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
  default: /* SRC_TRACE; the caller checked the range */
    return reader_uleb(r, &loc->a, "location: trace number");
  }
}

static uint32_t resolve_location(struct symbols *sym,
                                 const struct raw_location *loc) {
  switch (loc->source) {
  case SRC_INTERNAL:
    return symbols_loc_internal(sym);
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
                              unsigned source, struct sbuf *scratch) {
  enum symtab_entry type = source == SRC_LFUNC   ? SYMTAB_LFUNC
                           : source == SRC_CFUNC ? SYMTAB_CFUNC
                                                 : SYMTAB_TRACE;
  return symtab_read_entry(r, sym, type, scratch);
}

int memprof_read_events(struct reader *r, struct symbols *sym,
                        const struct memprof_sink *sink) {
  struct sbuf scratch = {0};
  struct memprof_event batch[MEMPROF_BATCH];
  size_t n = 0;
  uint8_t header;
  int ok;
  while ((ok = reader_u8(r, &header, "event header or end (0x80)"))) {
    if (header & HEADER_END) break;
    unsigned event = HEADER_EVENT(header), source = HEADER_SOURCE(header);
    uint64_t at = reader_offset(r) - 1;
    if (event == EV_SYMTAB) {
      if (source < SRC_LFUNC || source > SRC_TRACE) {
        ok = bad_header(r, at, header, "unknown symtab update kind");
        break;
      }
      if (!(ok = read_symtab_update(r, sym, source, &scratch))) break;
      continue;
    }
    if (source < SRC_INTERNAL || source > SRC_TRACE) {
      ok = bad_header(r, at, header, "unknown event source");
      break;
    }
    struct raw_location loc = {source, 0, 0};
    struct memprof_event *ev = &batch[n];
    *ev = (struct memprof_event){.kind = (enum memprof_event_kind)event};
    if (!(ok = read_location(r, &loc) && read_payload(r, ev))) break;
    /* Resolved only now, so that a damaged event leaves no trace. */
    ev->loc = resolve_location(sym, &loc);
    if (++n == MEMPROF_BATCH) {
      sink->events(sink->ud, batch, n);
      n = 0;
    }
  }
  if (n > 0) sink->events(sink->ud, batch, n);
  sbuf_free(&scratch);
  return ok;
}
