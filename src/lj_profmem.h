/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Sampled memory profiles: the filter of sampled blocks that the sampled
** profile's allocator (lj_memprof.c) reads at every free and realloc.
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
static LJ_AINLINE int lj_profmem_insample(const uint8_t *filter,
					  const void *p)
{
  return filter[lj_profmem_bucket(p)] != 0;
}

#endif
