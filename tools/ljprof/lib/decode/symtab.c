/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "symtab.h"

#include <inttypes.h>
#include <string.h>

int symtab_read_entry(struct reader *r, struct symbols *sym, unsigned type,
                      struct sbuf *scratch) {
  uint64_t key, proto, line;
  switch (type) {
  case SYMTAB_LFUNC:
    if (!reader_uleb(r, &key, "symtab: Lua function address") ||
        !reader_string(r, scratch, SYMTAB_MAX_NAME, "symtab: chunk name") ||
        !reader_uleb(r, &line, "symtab: first line"))
      return 0;
    symbols_bind_proto(sym, key, scratch->data, scratch->len, line);
    return 1;
  case SYMTAB_CFUNC:
    if (!reader_uleb(r, &key, "symtab: C symbol address") ||
        !reader_string(r, scratch, SYMTAB_MAX_NAME, "symtab: C symbol name"))
      return 0;
    symbols_bind_cfunc(sym, key, scratch->data, scratch->len);
    return 1;
  case SYMTAB_TRACE:
    if (!reader_uleb(r, &key, "symtab: trace number") ||
        !reader_uleb(r, &proto, "symtab: trace start proto address") ||
        !reader_uleb(r, &line, "symtab: trace start line"))
      return 0;
    symbols_bind_trace(sym, key, proto, line);
    return 1;
  }
  return 0;
}

int symtab_read(struct reader *r, struct symbols *sym) {
  struct sbuf scratch = {0};
  uint8_t header;
  int ok;
  while ((ok = reader_u8(r, &header, "symtab entry header or end (0x80)"))) {
    if (header & SYMTAB_FINAL) break;
    unsigned type = header & SYMTAB_TYPE_MASK;
    if (type > SYMTAB_TRACE) {
      uint64_t at = reader_offset(r) - 1;
      reader_fail(r, READER_CORRUPT, at,
                  "corrupt at offset %" PRIu64
                  ": unknown symtab entry type %u (header byte 0x%02x)",
                  at, type, header);
      ok = 0;
      break;
    }
    if (!(ok = symtab_read_entry(r, sym, type, &scratch)))
      break;
  }
  sbuf_free(&scratch);
  return ok;
}

int symtab_read_process(struct reader *r, struct symbols *sym,
                        struct sbuf *scratch) {
  struct stream_process *p = &sym->process;
  if (!reader_uleb(r, &p->pid, "process: pid") ||
      !reader_string(r, scratch, SYMBOLS_HOST_MAX, "process: host name") ||
      !reader_uleb(r, &p->epoch_ns, "process: wall clock"))
    return 0;
  if (scratch->len) memcpy(p->host, scratch->data, scratch->len);
  p->host[scratch->len] = '\0';
  p->known = 1;
  return 1;
}
