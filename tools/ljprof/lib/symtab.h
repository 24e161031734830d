/*
** Symbol table (`ljs`) entries: decoded into bindings of a resolver.
**
** The same entries appear as the body of the `ljs` section and, without
** their header byte, as symtab-update events inside profiler streams.
*/
#ifndef LJPROF_SYMTAB_H
#define LJPROF_SYMTAB_H

#include "reader.h"
#include "symbols.h"

#define SYMTAB_VERSION 3

/* Names longer than this are taken for corruption, not allocated. */
#define SYMTAB_MAX_NAME (UINT64_C(1) << 20)

enum symtab_entry {
  SYMTAB_LFUNC = 0, /* proto address, chunk name, first line */
  SYMTAB_CFUNC = 1, /* address, symbol name */
  SYMTAB_TRACE = 2  /* trace number, proto address, line */
};

/* Decode one entry's fields and bind them. scratch holds the name. */
int symtab_read_entry(struct reader *r, struct symbols *sym,
                      enum symtab_entry type, struct sbuf *scratch);

/* Decode the entries after the prologue, up to and with the end byte. */
int symtab_read(struct reader *r, struct symbols *sym);

#endif
