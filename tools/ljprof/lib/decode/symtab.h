/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Symbol table (`ljs`) entries: decoded into bindings of a resolver.
**
** The same entries appear as the body of the `ljs` section and, without
** their header byte, as symtab-update events inside profiler streams.
*/
#ifndef LJPROF_SYMTAB_H
#define LJPROF_SYMTAB_H

#include "lj_profstream.h"
#include "shared/reader.h"
#include "shared/symbols.h"

/* Names longer than this are taken for corruption, not allocated. */
#define SYMTAB_MAX_NAME (UINT64_C(1) << 20)

/* Decode the fields of one entry of that type (SYMTAB_LFUNC, SYMTAB_CFUNC
** or SYMTAB_TRACE) and bind them. scratch holds the name. */
int symtab_read_entry(struct reader *r, struct symbols *sym, unsigned type,
                      struct sbuf *scratch);

/* Decode the fields of a process record (sysprof's, memprof's info) into
** sym->process. */
int symtab_read_process(struct reader *r, struct symbols *sym,
                        struct sbuf *scratch);

/* Decode the entries after the prologue, up to and with the end byte. */
int symtab_read(struct reader *r, struct symbols *sym);

#endif
