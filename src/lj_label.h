/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Labels: the set of string keys and values a coroutine carries, for the
** profiles to charge what it does to (a route, a plugin, a tenant).
**
** A set is an immutable userdata, interned: the same labels are the same
** object, compared by pointer. Its payload is the set as a stream writes
** it, so a profile copies it once and names it by id after. A coroutine
** holds its set in lua_State.labels (patches/0015-labels.patch), NULL for
** none; the GC keeps a set alive while a coroutine or a Lua value holds it.
*/

#ifndef _LJ_LABEL_H
#define _LJ_LABEL_H

#include "lj_obj.h"
#include "lmisclib.h"

/* The payload of a set's userdata. enc[] holds, as a stream writes them,
** the number of labels, then each key and its value sorted by the key's
** bytes, each string as its length (ULEB128) and its bytes. */
typedef struct LabelSet {
  global_State *g;	/* Its VM, and its VM's table of sets: the FFI's */
  GCtab *st;		/* switch has no other way there. */
  uint32_t id;		/* Unique among the VM's sets, never reused. */
  uint16_t n;		/* Labels: 0 for the empty set (none). */
  uint16_t len;		/* Bytes of enc[]. */
  uint8_t enc[1];
} LabelSet;

/* Bytes of the longest encoding: at most 2 bytes of ULEB128 per length. */
#define LJ_LABEL_ENCMAX \
  (1 + LUAM_LABEL_MAXN * (1 + LUAM_LABEL_MAXKEY + 2 + LUAM_LABEL_MAXVALUE))

/* The set of coroutine L, or NULL for none. A sampler may call it in a
** signal handler on the VM's thread, with L = G->cur_L: the VM stores the
** pointer in one write and a set it points to lives until a GC sweep, which
** the handler cannot interrupt while L points to it. */
static LJ_AINLINE const LabelSet *lj_label_of(const lua_State *L)
{
  GCobj *o = gcref(L->labels);
  return o != NULL ? (const LabelSet *)uddata(gco2ud(o)) : NULL;
}

/* A new coroutine L1 starts with the set of the coroutine running, if a
** call into the VM is under way (coroutine.create, a C function of Lua's
** that calls lua_newthread); one a host makes outside any call (nginx's
** handlers and timers), with none. Called by lj_state_new. */
static LJ_AINLINE void lj_label_inherit(lua_State *L1, lua_State *L)
{
  lua_State *co = gco2th(gcref(G(L)->cur_L));
  /* NOBARRIER: L1 is new, or is reset to be as new; threads are never black. */
  if (co != NULL && co->cframe != NULL)
    setgcrefr(L1->labels, co->labels);
  else
    setgcrefnull(L1->labels);
}

/* The VM's table of sets (the sets' metatable), made at the first call. */
LJ_FUNC GCtab *lj_label_state(lua_State *L);

/* The set the value at idx names (a set object, or a table of labels), at
** the top of L's stack: NULL; or, for a table that breaks a rule of
** lmisclib.h, nothing pushed and the rule broken, as a message. */
LJ_FUNC const char *lj_label_toset(lua_State *L, int idx, GCtab *st);

/* The set at the top of L's stack becomes the set of co; it is replaced
** there by the set co had (the empty set for none). */
LJ_FUNC void lj_label_swap(lua_State *L, lua_State *co, GCtab *st);

/* A new table of co's labels, pushed on L's stack. */
LJ_FUNC void lj_label_totable(lua_State *L, lua_State *co);

/* The registry's key of the VM's table of sets (lj_label.c). */
#define LJ_LABEL_REGKEY		"ljprof.labels"

/* The id of the empty set, the first one made. */
#define LJ_LABEL_EMPTYID	1

/* Slots of the VM's table of sets (lj_label.c): the sets by id, and the
** sets as keys, for misc.label's compiled switch. */
#define LJ_LABEL_BYID		4
#define LJ_LABEL_SETS		5

/* The switch compiled code makes: misc.label calls it through the FFI,
** with the payload of a set object it has checked is one. The set
** becomes the running coroutine's; returns the id of the one replaced,
** for misc.label to find it by. The VM's table of sets holds that one
** until the next such switch: a hook that runs between the two (the
** interpreter's; a profiler's callback) may run the GC. */
LJ_FUNC uint32_t lj_label_ffiswap(LabelSet *ls);

#endif
