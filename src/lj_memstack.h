/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Memory profiler: the call stack of each allocation (stream version 5).
**
** A profile's stacks are kept as a tree of frames, each stack announced
** once in the stream and named by its id in the events. Their tables,
** the last stack walked and the walk of native frames are this module's
** (lj_memstack.c), off the Lua heap; the profile (lj_memprof.c) asks for
** the id of the current stack at each allocation, and says when code
** appears where dead code may have been.
*/

#ifndef _LJ_MEMSTACK_H
#define _LJ_MEMSTACK_H

#include "lj_obj.h"

struct lj_wbuf;
struct lj_symtab_objs;

/* An event without a stack: an internal one, or none could be walked. */
#define MEMSTACK_NONE		(~(uint32_t)0)

/* A frame as a walk finds it: the function and as little as tells its
** line (lj_memstack.c). Two raw frames alike are the same frame. */
typedef struct RawFrame {
  uint64_t addr;	/* Proto, C function or code address; 0: marker. */
  uint64_t at;		/* Lua: the PC the VM keeps; else a tag, line. */
} RawFrame;

/* A trace's call site, by the return address of its call out: the frames
** the trace runs there depend on it alone (and the function entered,
** checked). Kept by the profile with the site's location, filled here. */
#define MEMSTACK_SITEFRAMES	6
typedef struct MemStackSite {
  uintptr_t ra;			/* Return address into a trace; 0: none. */
  int n;			/* Frames; 0: not known yet. */
  const GCproto *pt;		/* The function the trace was entered in. */
  RawFrame f[MEMSTACK_SITEFRAMES];
  uint32_t below, node;		/* The frames' node on node below; 0: none. */
} MemStackSite;

/* A profile's stacks. The allocator sets gone and allocra before each
** event; the counts are for the profile's stats record. */
typedef struct MemStacks {
  struct MemStackTab *t;	/* The tables; NULL: no stacks. */
  const void *gone;		/* The block the event frees, a realloc's
				** old one: maybe the stack being resized,
				** which is not read then. */
  uintptr_t allocra;		/* Return address of the allocator's call:
				** where a native walk starts. */
  uint32_t nstacks;		/* Stacks announced. */
  uint64_t full;		/* Events whose stack found no room. */
  uint64_t truncated;		/* Events whose stack was cut. */
} MemStacks;

/* What appeared, and what the stacks forget for it: a proto may sit where
** a proto of the last stack was (frames are named by its address); a
** trace's machine code may be a dead one's (sites are named by address). */
enum { MEMSTACK_PROTO, MEMSTACK_TRACE };

/* The tables of VM g's profile, whose new stacks are announced in out
** (C functions first named with objs); native: with C frames; budget: the
** address space they may take, in bytes. 0 if they cannot be had (then
** free them all the same). */
LJ_FUNC int lj_memstack_init(MemStacks *s, global_State *g, int native,
			     uint64_t budget, struct lj_wbuf *out,
			     struct lj_symtab_objs *objs);
LJ_FUNC void lj_memstack_free(MemStacks *s);
/* The id of the stack of the allocation now made: the coroutine that
** allocates, or the trace at site (NULL: not known) and what lies below
** it. internal: the VM's own, with no Lua frame to start from. */
LJ_FUNC uint32_t lj_memstack_id(MemStacks *s, int internal,
				MemStackSite *site);
LJ_FUNC void lj_memstack_forget(MemStacks *s, int what);
/* Stacks without native frames, every event: the VM marks the lowest
** frame returned from between two events (lj_vm_retwatch), so that the
** frames below it are not checked. */
LJ_FUNC void lj_memstack_watch(MemStacks *s, lua_State *L, int on);

#endif
