/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Heap snapshots: every live object of a VM and every reference between
** them, each named, written as an 'ljh' stream (lj_profstream.h).
*/

#ifndef _LJ_HEAPSNAP_H
#define _LJ_HEAPSNAP_H

#include "lj_obj.h"
#include "lj_wbuf.h"

typedef struct HeapSnapConfig {
  uint64_t strings;		/* Bytes of each string's contents, 0: none. */
} HeapSnapConfig;

/* Walk L's VM on its own thread, the world stopped, into the writer of
** wb. PROFILE_SUCCESS, PROFILE_ERRMEM (the walk's own tables), or
** PROFILE_ERRIO (the writer failed: wb says why). Allocates no GC object
** and leaves the GC's state as it was. */
LJ_FUNC int lj_heapsnap_write(lua_State *L, struct lj_wbuf *wb,
			      const HeapSnapConfig *cfg);

/* The same to a file; errno set on PROFILE_ERRIO. */
LJ_FUNC int lj_heapsnap_file(lua_State *L, const char *path,
			     const HeapSnapConfig *cfg);

#endif
