/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Labels: the sets coroutines carry, their rules, and their C API.
**
** The VM's sets hang off one table, the registry's LJ_LABEL_REGKEY, which
** is also every set's metatable: its methods, and at [1] the weak table
** that interns sets by their encoding, at [2] the empty set, at [3] the
** next id, at [4] and [5] the sets by id and as keys (for misc.label's
** compiled switch, lib_misc.c), at [6] the set that switch replaced last.
** Weak, so that a set nothing holds any more is collected: a request id
** used as a label costs memory only while requests hold it.
*/

#define lj_label_c
#define LUA_CORE

#include <string.h>

#include "lua.h"
#include "lauxlib.h"

#include "lj_obj.h"
#include "lj_gc.h"
#include "lj_tab.h"
#include "lj_state.h"
#include "lj_label.h"

/* The slots of the VM's table of sets. */
enum {
  LABEL_INTERN = 1, LABEL_EMPTY, LABEL_NEXTID,
  LABEL_BYID = LJ_LABEL_BYID, LABEL_SETS = LJ_LABEL_SETS, LABEL_LAST,
  LABEL_SLOTS
};

/* -- Encoding ------------------------------------------------------------ */

static uint8_t *label_putlen(uint8_t *p, uint32_t v)
{
  for (; v >= 0x80; v >>= 7)
    *p++ = (uint8_t)(v | 0x80);
  *p++ = (uint8_t)v;
  return p;
}

static const uint8_t *label_getlen(const uint8_t *p, uint32_t *v)
{
  uint32_t x = 0;
  int sh = 0;
  do {
    x |= (uint32_t)(*p & 0x7f) << sh;
    sh += 7;
  } while (*p++ & 0x80);
  *v = x;
  return p;
}

/* The next string of an encoding. */
static const uint8_t *label_getstr(const uint8_t *p, const char **s,
				   size_t *len)
{
  uint32_t n;
  p = label_getlen(p, &n);
  *s = (const char *)p;
  *len = n;
  return p + n;
}

/* A label of a table, while it is checked and sorted. */
typedef struct LabelKV {
  const char *k, *v;
  size_t klen, vlen;
} LabelKV;

static int label_before(const LabelKV *a, const LabelKV *b)
{
  size_t n = a->klen < b->klen ? a->klen : b->klen;
  int c = memcmp(a->k, b->k, n);
  return c < 0 || (c == 0 && a->klen < b->klen);
}

/* -- The rules ----------------------------------------------------------- */

/* The labels of the table at idx into kv[], checked against lmisclib.h's
** rules: their number, or -1 with the rule broken pushed as a message.
** Every check of a set made from Lua or from C is here. */
static int label_check(lua_State *L, int idx, LabelKV *kv)
{
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    LabelKV *p = &kv[n];
    if (lua_type(L, -2) != LUA_TSTRING) {
      lua_pushfstring(L, "label key must be a string, got %s",
		      luaL_typename(L, -2));
      goto fail;
    }
    p->k = lua_tolstring(L, -2, &p->klen);
    if (p->klen == 0) {
      lua_pushliteral(L, "label key must not be empty");
      goto fail;
    }
    if (p->klen > LUAM_LABEL_MAXKEY) {
      lua_pushfstring(L, "label key is longer than %d bytes",
		      LUAM_LABEL_MAXKEY);
      goto fail;
    }
    if (lua_type(L, -1) != LUA_TSTRING) {
      lua_pushfstring(L, "label '%s' must be a string, got %s", p->k,
		      luaL_typename(L, -1));
      goto fail;
    }
    p->v = lua_tolstring(L, -1, &p->vlen);
    if (p->vlen > LUAM_LABEL_MAXVALUE) {
      lua_pushfstring(L, "label '%s' is longer than %d bytes", p->k,
		      LUAM_LABEL_MAXVALUE);
      goto fail;
    }
    if (++n > LUAM_LABEL_MAXN) {
      lua_pushfstring(L, "label set has more than %d labels",
		      LUAM_LABEL_MAXN);
      goto fail;
    }
    lua_pop(L, 1);
  }
  return n;
fail:
  lua_replace(L, -3);  /* Only the message stays. */
  lua_pop(L, 1);
  return -1;
}

/* -- The VM's sets ------------------------------------------------------- */

/* set[key]: the label's value, or nil. */
static int label_index(lua_State *L)
{
  const LabelSet *ls = (const LabelSet *)lua_touserdata(L, 1);
  const uint8_t *p = ls->enc;
  const char *key, *k, *v;
  size_t keylen, klen, vlen;
  uint32_t n, i;
  if (lua_type(L, 2) == LUA_TSTRING) {
    key = lua_tolstring(L, 2, &keylen);
    p = label_getlen(p, &n);
    for (i = 0; i < n; i++) {
      p = label_getstr(label_getstr(p, &k, &klen), &v, &vlen);
      if (klen == keylen && memcmp(k, key, klen) == 0) {
	lua_pushlstring(L, v, vlen);
	return 1;
      }
    }
  }
  lua_pushnil(L);
  return 1;
}

static int label_newindex(lua_State *L)
{
  return luaL_error(L, "label sets are immutable");
}

/* tostring(set): "labels: N", its id. */
static int label_tostring(lua_State *L)
{
  const LabelSet *ls = (const LabelSet *)lua_touserdata(L, 1);
  lua_pushfstring(L, "labels: %d", (int)ls->id);
  return 1;
}

/* A new set of the encoding at enc, interned in st's table as key, which
** is on the stack at kidx. Pushed. */
static void label_new(lua_State *L, GCtab *st, int kidx, const uint8_t *enc,
		      size_t len, int n)
{
  LabelSet *ls;
  lua_Number id;
  settabV(L, L->top, st);
  incr_top(L);
  lua_rawgeti(L, -1, LABEL_NEXTID);
  id = lua_tonumber(L, -1);
  lua_pushnumber(L, id + 1);
  lua_rawseti(L, -3, LABEL_NEXTID);
  lua_pop(L, 1);
  ls = (LabelSet *)lua_newuserdata(L, offsetof(LabelSet, enc) + len);
  ls->g = G(L);
  ls->st = st;
  ls->id = (uint32_t)id;
  ls->n = (uint16_t)n;
  ls->len = (uint16_t)len;
  memcpy(ls->enc, enc, len);
  lua_pushvalue(L, -2);
  lua_setmetatable(L, -2);
  lua_rawgeti(L, -2, LABEL_INTERN);
  lua_pushvalue(L, kidx);
  lua_pushvalue(L, -3);
  lua_rawset(L, -3);
  lua_rawgeti(L, -3, LABEL_BYID);
  lua_pushvalue(L, -3);
  lua_rawseti(L, -2, (int)id);
  lua_rawgeti(L, -4, LABEL_SETS);
  lua_pushvalue(L, -4);
  lua_pushnumber(L, id);
  lua_rawset(L, -3);
  lua_pop(L, 3);
  lua_replace(L, -2);
}

/* A new weak table, its mode at the top of the stack, pushed. */
static void label_weak(lua_State *L)
{
  lua_createtable(L, 0, 0);
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_replace(L, -2);
}

/* The set of these labels, pushed: found, or made. */
static void label_intern(lua_State *L, GCtab *st, LabelKV *kv, int n)
{
  uint8_t buf[LJ_LABEL_ENCMAX], *p = buf;
  int i, j;
  for (i = 1; i < n; i++) {  /* Few: insertion sort. */
    LabelKV x = kv[i];
    for (j = i; j > 0 && label_before(&x, &kv[j-1]); j--)
      kv[j] = kv[j-1];
    kv[j] = x;
  }
  p = label_putlen(p, (uint32_t)n);
  for (i = 0; i < n; i++) {
    p = label_putlen(p, (uint32_t)kv[i].klen);
    memcpy(p, kv[i].k, kv[i].klen); p += kv[i].klen;
    p = label_putlen(p, (uint32_t)kv[i].vlen);
    memcpy(p, kv[i].v, kv[i].vlen); p += kv[i].vlen;
  }
  lua_pushlstring(L, (const char *)buf, (size_t)(p - buf));
  settabV(L, L->top, st);
  incr_top(L);
  lua_rawgeti(L, -1, LABEL_INTERN);
  lua_pushvalue(L, -3);
  lua_rawget(L, -2);
  if (lua_isuserdata(L, -1)) {
    lua_replace(L, -4);
    lua_pop(L, 2);
    return;
  }
  lua_pop(L, 3);
  label_new(L, st, lua_gettop(L), buf, (size_t)(p - buf), n);
  lua_replace(L, -2);
}

GCtab *lj_label_state(lua_State *L)
{
  static const luaL_Reg methods[] = {
    { "__index", label_index },
    { "__newindex", label_newindex },
    { "__tostring", label_tostring },
    { NULL, NULL }
  };
  GCtab *st;
  lua_getfield(L, LUA_REGISTRYINDEX, LJ_LABEL_REGKEY);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_createtable(L, LABEL_SLOTS, 4);  /* [LABEL_LAST] in its array. */
    luaL_register(L, NULL, methods);
    lua_pushliteral(L, "label set");
    lua_setfield(L, -2, "__metatable");
    lua_pushnumber(L, 1);
    lua_rawseti(L, -2, LABEL_NEXTID);
    lua_pushliteral(L, "v");
    label_weak(L);  /* Interned sets, by their encoding. */
    lua_rawseti(L, -2, LABEL_INTERN);
    lua_pushliteral(L, "v");
    label_weak(L);
    lua_rawseti(L, -2, LABEL_BYID);
    lua_pushliteral(L, "k");
    label_weak(L);
    lua_rawseti(L, -2, LABEL_SETS);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, LJ_LABEL_REGKEY);
    st = tabV(L->top-1);
    /* The empty set, LJ_LABEL_EMPTYID, held here for good. */
    lua_pushlstring(L, "", 1);
    label_new(L, st, lua_gettop(L), (const uint8_t *)"", 1, 0);
    lua_rawseti(L, -3, LABEL_EMPTY);
    lua_pop(L, 1);
  }
  st = tabV(L->top-1);
  lua_pop(L, 1);  /* The registry holds it. */
  return st;
}

/* -- Sets and coroutines ------------------------------------------------- */

/* The set object at o, or NULL: one of st's, its size checked too, for a
** userdata given st by the debug library is no set. */
static GCudata *label_obj(cTValue *o, GCtab *st)
{
  GCudata *ud;
  if (!tvisudata(o))
    return NULL;
  ud = udataV(o);
  if (tabref(ud->metatable) != st || ud->len < offsetof(LabelSet, enc) ||
      ud->len != offsetof(LabelSet, enc) + ((LabelSet *)uddata(ud))->len)
    return NULL;
  return ud;
}

const char *lj_label_toset(lua_State *L, int idx, GCtab *st)
{
  LabelKV kv[LUAM_LABEL_MAXN+1];
  cTValue *o = idx > 0 ? L->base + idx - 1 : L->top + idx;
  int n;
  if (o < L->top && label_obj(o, st) != NULL) {
    copyTV(L, L->top, o);
    incr_top(L);
    return NULL;
  }
  if (!lua_istable(L, idx)) {
    lua_pushfstring(L, "label set must be a table or a label set, got %s",
		    luaL_typename(L, idx));
    return lua_tostring(L, -1);
  }
  if (idx < 0)
    idx = lua_gettop(L) + idx + 1;
  if ((n = label_check(L, idx, kv)) < 0)
    return lua_tostring(L, -1);
  label_intern(L, st, kv, n);
  return NULL;
}

void lj_label_swap(lua_State *L, lua_State *co, GCtab *st)
{
  GCudata *ud = udataV(L->top-1);
  GCobj *prev = gcref(co->labels);
  /* NOBARRIER: threads are never black; the GC traverses them again. */
  if (((LabelSet *)uddata(ud))->n != 0)
    setgcref(co->labels, obj2gco(ud));
  else
    setgcrefnull(co->labels);
  if (prev != NULL)
    setudataV(L, L->top-1, gco2ud(prev));
  else
    copyTV(L, L->top-1, lj_tab_getint(st, LABEL_EMPTY));
}

uint32_t lj_label_ffiswap(LabelSet *ls)
{
  lua_State *L = gco2th(gcref(ls->g->cur_L));
  GCobj *prev = gcref(L->labels);
  if (prev != NULL) {  /* Held until misc.label has it. */
    setudataV(L, arrayslot(ls->st, LABEL_LAST), gco2ud(prev));
    lj_gc_anybarriert(L, ls->st);
  }
  /* NOBARRIER: threads are never black. */
  if (ls->n != 0)
    setgcref(L->labels, obj2gco((GCudata *)ls - 1));
  else
    setgcrefnull(L->labels);
  return prev != NULL ? ((LabelSet *)uddata(gco2ud(prev)))->id :
			LJ_LABEL_EMPTYID;
}

void lj_label_totable(lua_State *L, lua_State *co)
{
  const LabelSet *ls = lj_label_of(co);
  const uint8_t *p;
  const char *k, *v;
  size_t klen, vlen;
  uint32_t n, i;
  if (ls == NULL) {
    lua_createtable(L, 0, 0);
    return;
  }
  /* The set stays alive: co holds it, and pushing runs no Lua code. */
  p = label_getlen(ls->enc, &n);
  lua_createtable(L, 0, (int)n);
  for (i = 0; i < n; i++) {
    p = label_getstr(label_getstr(p, &k, &klen), &v, &vlen);
    lua_pushlstring(L, k, klen);
    lua_pushlstring(L, v, vlen);
    lua_rawset(L, -3);
  }
}

/* -- C API --------------------------------------------------------------- */

LUA_API int luaM_label_set(lua_State *L, int idx)
{
  GCtab *st;
  if (idx < 0 && idx > LUA_REGISTRYINDEX)
    idx = lua_gettop(L) + idx + 1;
  luaL_checkstack(L, 8, "labels");
  st = lj_label_state(L);
  if (lj_label_toset(L, idx, st) != NULL)
    return PROFILE_ERRUSE;
  lj_label_swap(L, L, st);
  return PROFILE_SUCCESS;
}

LUA_API void luaM_label_get(lua_State *L)
{
  lj_label_totable(L, L);
}
