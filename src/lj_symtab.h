/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Symbol tables of profile streams: Lua functions, traces and the C
** symbols of every loaded ELF object, as `ljs` entries.
*/

#ifndef _LJ_SYMTAB_H
#define _LJ_SYMTAB_H

#include "lj_obj.h"
#include "lj_wbuf.h"
#include "lj_profstream.h"

/* The loaded ELF objects whose symbols a stream has: new ones are found
** by comparing the loader's counters, and only then by a walk. */
struct lj_symtab_objs {
  unsigned long long adds, subs;	/* Loader counters at the last walk. */
  struct lj_symtab_obj *known;		/* Objects written so far. */
  size_t n, size;
};

struct GCtrace;

/* Each writes `header` and then the entry's fields. */
void lj_symtab_writeproto(struct lj_wbuf *out, uint8_t header,
			  const GCproto *pt);
#if LJ_HASJIT
void lj_symtab_writetrace(struct lj_wbuf *out, uint8_t header,
			  const struct GCtrace *T);
#endif

/* The whole `ljs` section: prologue, protos, traces, C symbols (unless
** objs is NULL: they may follow as updates), end. */
void lj_symtab_dump(struct lj_wbuf *out, global_State *g,
		    struct lj_symtab_objs *objs);

/* Write C symbols of objects loaded since the last call, each entry
** preceded by `header`. Cheap when nothing changed. */
void lj_symtab_newobjs(struct lj_wbuf *out, struct lj_symtab_objs *objs,
		       uint8_t header);

void lj_symtab_freeobjs(struct lj_symtab_objs *objs);

/* The child of a fork(): the functions kept for the process stay usable. */
void lj_symtab_forked(void);

#endif
