/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Sampled memory profiles: what the VM's allocation path checks itself
** (lj_gc.c, lj_gc.h), so that events not sampled never leave it.
*/

#ifndef _LJ_PROFMEM_H
#define _LJ_PROFMEM_H

#include "lj_obj.h"

/* Buckets of the filter of sampled blocks: 4096 bytes, each the number of
** sampled blocks in its bucket (saturating), read at every free. */
#define LJ_PROFMEM_FILTER_BITS	12

static LJ_AINLINE uint32_t lj_profmem_bucket(const void *p)
{
  return (uint32_t)(((uint64_t)(uintptr_t)p * 0xc4ceb9fe1a85ec53ull) >>
		    (64 - LJ_PROFMEM_FILTER_BITS));
}

/* p may be a sampled block: its free or realloc is recorded. */
static LJ_AINLINE int lj_profmem_insample(global_State *g, const void *p)
{
  const uint8_t *f = g->prof.mem_filter;
  return f != NULL && f[lj_profmem_bucket(p)] != 0;
}

/* An allocation of nsz bytes (or a realloc of p) for the profile: the
** bytes to the next sample ran out, or p may be sampled. Without a sampled
** profile the count starts from INT64_MAX: it never runs out. */
static LJ_AINLINE int lj_profmem_due(global_State *g, const void *p,
				     GCSize nsz)
{
  return (g->prof.mem_left -= (int64_t)nsz) < 0 ||
	 (p != NULL && lj_profmem_insample(g, p));
}

/* What the allocator does when lj_profmem_due says so (lj_memprof.c):
** the allocation, then its record. */
LJ_FUNC void *lj_memprof_sampled(global_State *g, void *p, GCSize osz,
				 GCSize nsz);

#endif
