/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** sysprof_probe: what sysprof's samples and starts cost, measured in the
** sampled thread (bench/sysprof.lua).
**
** A sample: each round sends sysprof's signal to the calling thread, which
** takes it before tgkill(2) returns: the time around the call is the
** delivery and the handler's walk. A profile in mode D pays the delivery
** and a count, mode C the walk on top: the difference of their medians is
** the walk.
*/

#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lua.h"
#include "lauxlib.h"
#include "lmisclib.h"

static int cmp_long(const void *a, const void *b)
{
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

static long now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* median(n): the median of n deliveries, in nanoseconds. */
static int probe_median(lua_State *L)
{
  int n = (int)luaL_checkinteger(L, 1), i;
  int signo = SIGRTMIN + LUAM_SYSPROF_SIGRTOFS;
  pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
  long *ns;
  luaL_argcheck(L, n > 0 && n <= 1000000, 1, "1..1000000 rounds");
  ns = (long *)lua_newuserdata(L, sizeof(long) * (size_t)n);
  for (i = 0; i < n; i++) {
    long t0 = now_ns();
    syscall(SYS_tgkill, pid, tid, signo);
    ns[i] = now_ns() - t0;
  }
  qsort(ns, (size_t)n, sizeof(long), cmp_long);
  lua_pushinteger(L, ns[n / 2]);
  return 1;
}

/* call(f, ...): f called from C, a native frame between Lua's. */
static int probe_call(lua_State *L)
{
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* now(): the monotonic clock, in nanoseconds. */
static int probe_now(lua_State *L)
{
  lua_pushnumber(L, (lua_Number)now_ns());
  return 1;
}

int luaopen_sysprof_probe(lua_State *L)
{
  static const luaL_Reg funcs[] = {
    { "median", probe_median }, { "call", probe_call }, { "now", probe_now },
    { NULL, NULL }
  };
  luaL_register(L, "sysprof_probe", funcs);
  return 1;
}
