/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** luaM_label_set / luaM_label_get: the rules misc.label keeps, from C;
** what a thread a host makes starts with, outside a call and inside one.
*/

#include <stdio.h>
#include <string.h>

#include "lua.h"
#include "lualib.h"
#include "lauxlib.h"
#include "lmisclib.h"
#include "tap.h"

static lua_State *mainL;

/* The value of key in L's labels, "" for none: in buf. */
static const char *labelof(lua_State *L, const char *key, char *buf)
{
  luaM_label_get(L);
  lua_getfield(L, -1, key);
  strcpy(buf, lua_isstring(L, -1) ? lua_tostring(L, -1) : "");
  lua_pop(L, 2);
  return buf;
}

/* Labels in a new table: n pairs of k, v. */
static void pushset(lua_State *L, int n, const char *const *kv)
{
  int i;
  lua_newtable(L);
  for (i = 0; i < n; i++) {
    lua_pushstring(L, kv[2*i+1]);
    lua_setfield(L, -2, kv[2*i]);
  }
}

/* A refusal: PROFILE_ERRUSE, the message, nothing changed. */
static void refused(lua_State *L, const char *want, const char *name)
{
  char buf[64];
  int top = lua_gettop(L);
  int status = luaM_label_set(L, -1);
  int ok = status == PROFILE_ERRUSE && lua_gettop(L) == top + 1 &&
	   lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), want) == 0;
  if (!tap_ok(ok, name))
    printf("#   status %d, message: %s\n", status,
	   lua_isstring(L, -1) ? lua_tostring(L, -1) : "(none)");
  lua_settop(L, top - 1);
  tap_ok(strcmp(labelof(L, "route", buf), "/kept") == 0,
	 "  and the set in force is unchanged");
}

/* spawn(): as ngx.thread.spawn, a thread of the main state made in a C
** function that Lua called: its labels' route. */
static int spawn(lua_State *L)
{
  char buf[64];
  lua_State *co = lua_newthread(mainL);
  lua_pushstring(L, labelof(co, "route", buf));
  lua_pop(mainL, 1);
  return 1;
}

int main(void)
{
  static const char *const api[] = { "route", "/api", "plugin", "auth" };
  static const char *const api2[] = { "plugin", "auth", "route", "/api" };
  static const char *const kept[] = { "route", "/kept" };
  char buf[64], key[80], val[300];
  lua_State *L = mainL = luaL_newstate(), *co;
  int i;

  luaL_openlibs(L);

  /* Set, get, restore. */
  luaM_label_get(L);
  lua_pushnil(L);
  tap_ok(lua_istable(L, -2) && lua_next(L, -2) == 0,
	 "luaM_label_get: {} for a state without labels");
  lua_pop(L, 1);
  pushset(L, 2, api);
  tap_is(luaM_label_set(L, -1), PROFILE_SUCCESS, "luaM_label_set(table)");
  tap_ok(lua_isuserdata(L, -1), "pushes the set it replaced, a set object");
  tap_ok(strcmp(labelof(L, "route", buf), "/api") == 0 &&
	 strcmp(labelof(L, "plugin", buf), "auth") == 0,
	 "luaM_label_get reads them");
  tap_is(luaM_label_set(L, -1), PROFILE_SUCCESS, "luaM_label_set(prev)");
  tap_ok(strcmp(labelof(L, "route", buf), "") == 0, "restores no labels");
  lua_pop(L, 3);

  /* The same labels, the same object, whichever side made them. */
  pushset(L, 2, api);
  luaM_label_set(L, -1);
  pushset(L, 2, api2);
  luaM_label_set(L, -1);	/* Pushes the set of api. */
  pushset(L, 0, NULL);
  luaM_label_set(L, -1);	/* Pushes the set of api2. */
  tap_ok(lua_rawequal(L, -1, -3), "the same labels in another order: the same set");
  lua_settop(L, 0);
  (void)luaL_dostring(L, "misc.label({route = '/api', plugin = 'auth'})");
  pushset(L, 0, NULL);
  luaM_label_set(L, -1);
  pushset(L, 2, api);
  luaM_label_set(L, -1);
  pushset(L, 0, NULL);
  luaM_label_set(L, -1);
  tap_ok(lua_rawequal(L, -1, -5), "a set misc.label made is luaM_label_set's");
  lua_settop(L, 0);

  /* The rules, from C: the same messages as misc.label's. */
  pushset(L, 1, kept);
  luaM_label_set(L, -1);
  lua_settop(L, 0);
  lua_newtable(L); lua_pushstring(L, "x"); lua_rawseti(L, -2, 1);
  refused(L, "label key must be a string, got number", "a number key is refused");
  lua_newtable(L); lua_pushstring(L, "x"); lua_setfield(L, -2, "");
  refused(L, "label key must not be empty", "an empty key is refused");
  lua_newtable(L); lua_pushinteger(L, 1); lua_setfield(L, -2, "route");
  refused(L, "label 'route' must be a string, got number", "a number value is refused");
  lua_pushinteger(L, 7);
  refused(L, "label set must be a table or a label set, got number",
	  "a number is refused");
  lua_newtable(L);
  for (i = 0; i <= LUAM_LABEL_MAXN; i++) {
    snprintf(key, sizeof(key), "k%d", i);
    lua_pushstring(L, "v");
    lua_setfield(L, -2, key);
  }
  refused(L, "label set has more than 16 labels", "17 labels are refused");
  memset(key, 'k', sizeof(key));
  key[LUAM_LABEL_MAXKEY+1] = '\0';
  lua_newtable(L); lua_pushstring(L, "v"); lua_setfield(L, -2, key);
  refused(L, "label key is longer than 64 bytes", "a key of 65 bytes is refused");
  memset(val, 'v', sizeof(val));
  val[LUAM_LABEL_MAXVALUE+1] = '\0';
  lua_newtable(L); lua_pushstring(L, val); lua_setfield(L, -2, "k");
  refused(L, "label 'k' is longer than 255 bytes", "a value of 256 bytes is refused");
  key[LUAM_LABEL_MAXKEY] = '\0';
  val[LUAM_LABEL_MAXVALUE] = '\0';
  lua_newtable(L); lua_pushstring(L, val); lua_setfield(L, -2, key);
  tap_is(luaM_label_set(L, -1), PROFILE_SUCCESS, "a key of 64 bytes, a value of 255");
  tap_ok(strcmp(labelof(L, "route", buf), "") == 0, "  replace the set");
  lua_settop(L, 0);

  /* A host's thread, made outside any call: none, whatever the main
  ** thread carries; its own set is its own. */
  pushset(L, 1, kept);
  luaM_label_set(L, -1);
  lua_settop(L, 0);
  co = lua_newthread(L);
  tap_ok(strcmp(labelof(co, "route", buf), "") == 0,
	 "lua_newthread outside any call: no labels");
  pushset(co, 2, api);
  luaM_label_set(co, -1);
  lua_settop(co, 0);
  tap_ok(strcmp(labelof(co, "route", buf), "/api") == 0 &&
	 strcmp(labelof(L, "route", buf), "/kept") == 0,
	 "luaM_label_set on a thread sets only its labels");

  /* The thread yields back to the host under its labels: a thread the
  ** host makes then still starts with none. */
  luaL_loadstring(co, "coroutine.yield(misc.label().route); return misc.label().route");
  tap_is(lua_resume(co, 0), LUA_YIELD, "a coroutine of the host's yields");
  tap_ok(strcmp(lua_tostring(co, -1), "/api") == 0, "  under its labels");
  lua_pop(co, 1);
  tap_ok(strcmp(labelof(lua_newthread(L), "route", buf), "") == 0,
	 "lua_newthread after it yielded: no labels");
  lua_pop(L, 1);
  tap_is(lua_resume(co, 0), 0, "it resumes");
  tap_ok(strcmp(lua_tostring(co, -1), "/api") == 0, "  under its labels still");
  lua_settop(co, 0);
  lua_settop(L, 0);

  /* Inside a call: as ngx.thread.spawn, the running coroutine's set. */
  lua_register(L, "spawn", spawn);
  (void)luaL_dostring(L, "return coroutine.wrap(function()"
		   " misc.label({route = '/spawner'}) return spawn() end)()");
  tap_ok(lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "/spawner") == 0,
	 "lua_newthread(main) in a C function a coroutine called: its labels");
  lua_pop(L, 1);

  lua_close(L);
  return tap_done();
}
