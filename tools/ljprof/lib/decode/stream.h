/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Profile files: a symbol table (`ljs`) followed by one profiler stream
** (`ljm` memprof, `ljp` sysprof); a profiler stream alone is read too.
** This layer reads the prologues, checks versions and hands each section
** to its decoder.
*/
#ifndef LJPROF_STREAM_H
#define LJPROF_STREAM_H

#include "memprof.h"
#include "shared/reader.h"
#include "shared/symbols.h"
#include "sysprof.h"

enum stream_kind {
  STREAM_UNKNOWN, /* damaged before a symbol table, or inside it */
  STREAM_SYMTAB,  /* a whole symbol table, then no profiler section (damage
                     where one should begin) */
  STREAM_MEMPROF,
  STREAM_SYSPROF
};

struct stream_sinks {
  struct memprof_sink memprof;
  struct sysprof_sink sysprof;
};

/*
** Decode a whole file, delivering events to the sinks as they come.
** Returns the kind of profiler stream met; on damage the reader holds the
** error and the sinks have had every complete event before it.
*/
enum stream_kind stream_read(struct reader *r, struct symbols *sym,
                             const struct stream_sinks *sinks);

#endif
