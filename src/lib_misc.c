/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The misc library: VM metrics and the profilers, for Lua code.
*/

#define lib_misc_c
#define LUA_LIB

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"
#include "lmisclib.h"
#include "lj_memprof.h"
#include "lj_sysprof.h"
#include "lj_proffile.h"
#include "lj_heapsnap.h"
#include "lj_prof.h"
#include "lj_profstream.h"
#include "lj_label.h"

/* -- misc.getmetrics() --------------------------------------------------- */

static void setnum(lua_State *L, const char *name, size_t v)
{
  lua_pushnumber(L, (lua_Number)v);
  lua_setfield(L, -2, name);
}

static int misc_getmetrics(lua_State *L)
{
  struct luam_Metrics m;
  luaM_metrics(L, &m);
  lua_createtable(L, 0, 19);
  setnum(L, "strhash_hit", m.strhash_hit);
  setnum(L, "strhash_miss", m.strhash_miss);
  setnum(L, "gc_strnum", m.gc_strnum);
  setnum(L, "gc_tabnum", m.gc_tabnum);
  setnum(L, "gc_udatanum", m.gc_udatanum);
  setnum(L, "gc_cdatanum", m.gc_cdatanum);
  setnum(L, "gc_total", m.gc_total);
  setnum(L, "gc_freed", m.gc_freed);
  setnum(L, "gc_allocated", m.gc_allocated);
  setnum(L, "gc_steps_pause", m.gc_steps_pause);
  setnum(L, "gc_steps_propagate", m.gc_steps_propagate);
  setnum(L, "gc_steps_atomic", m.gc_steps_atomic);
  setnum(L, "gc_steps_sweepstring", m.gc_steps_sweepstring);
  setnum(L, "gc_steps_sweep", m.gc_steps_sweep);
  setnum(L, "gc_steps_finalize", m.gc_steps_finalize);
  setnum(L, "jit_snap_restore", m.jit_snap_restore);
  setnum(L, "jit_trace_abort", m.jit_trace_abort);
  setnum(L, "jit_mcode_size", m.jit_mcode_size);
  setnum(L, "jit_trace_num", m.jit_trace_num);
  return 1;
}

/* -- Profiler results ---------------------------------------------------- */

/* Lua's convention: true, or nil, message, errno. */
static int prof_result(lua_State *L, int status, const char *what)
{
  int err = errno;
  const char *msg;
  switch (status) {
  case PROFILE_SUCCESS:
    lua_pushboolean(L, 1);
    return 1;
  case PROFILE_ERRUSE: msg = "profiler misuse"; err = EINVAL; break;
  case PROFILE_ERRRUN: msg = what; err = EINVAL; break;
  case PROFILE_ERRMEM: msg = "not enough memory"; err = ENOMEM; break;
  default: msg = strerror(err); break;
  }
  lua_pushnil(L);
  lua_pushstring(L, msg);
  lua_pushinteger(L, err);
  return 3;
}

static int prof_error(lua_State *L, const char *msg, int err)
{
  lua_pushnil(L);
  lua_pushstring(L, msg);
  lua_pushinteger(L, err);
  return 3;
}

/* Bad options: the reference's words first (scripts match them), then
** what is wrong. */
static int prof_misuse(lua_State *L, const char *why)
{
  lua_pushfstring(L, "profiler misuse: %s", why);
  return prof_error(L, lua_tostring(L, -1), EINVAL);
}

/* The reference calls a profiler missing from the build a misuse, too. */
static int prof_disabled(lua_State *L)
{
  return prof_misuse(L, "profiler is disabled in this build");
}

/* errno's words and the path: the reference names the path first for
** memprof, and not at all for sysprof, where ours adds it after. */
static int prof_ioerror(lua_State *L, const char *path, int pathlast)
{
  int err = errno;
  if (pathlast)
    lua_pushfstring(L, "%s: %s", strerror(err), path);
  else
    lua_pushfstring(L, "%s: %s", path, strerror(err));
  return prof_error(L, lua_tostring(L, -1), err);
}

/* The names of an option's values. */
typedef struct ProfName {
  const char *name;
  int value;
} ProfName;

/* The option at idx, one of names, as its value in *v; nil leaves *v as
** it is. Another name is -1, which no profiler's check takes. */
static void prof_choice(lua_State *L, int idx, const ProfName *names, int *v)
{
  const char *s;
  if (lua_isnil(L, idx))
    return;
  *v = -1;
  if ((s = lua_tostring(L, idx)) == NULL)
    return;
  for (; names->name != NULL; names++)
    if (strcmp(s, names->name) == 0)
      *v = names->value;
}

/* A boolean option at idx into *v; nil leaves *v as it is. 0 if it is
** another type. */
static int prof_bool(lua_State *L, int idx, int *v)
{
  if (lua_isnil(L, idx))
    return 1;
  *v = lua_toboolean(L, idx);
  return lua_isboolean(L, idx);
}

/* -- Profiles started from Lua ------------------------------------------- */

/* The file a profile started from Lua writes to; NULL after pushing the
** error triple. */
static ProfFile *prof_open(lua_State *L, const char *path, size_t bufsize,
			  int pathlast)
{
  ProfFile *pf = lj_proffile_open(path, bufsize);
  if (pf == NULL)
    prof_ioerror(L, path, pathlast);
  return pf;
}

/* What start() returns. The profiler owns the file from start on (on an
** I/O failure it has closed it already); a refused start leaves it to us. */
static int prof_started(lua_State *L, int status, ProfFile *pf)
{
  if (status == PROFILE_SUCCESS) {
    lj_prof_exitguard();  /* A script may end with os.exit(). */
  } else if (status != PROFILE_ERRIO) {
    lj_proffile_close(pf, lj_proffile_buf(pf));
  }
  return prof_result(L, status, "profiler is running already");
}

/* What stop() returns. */
static int prof_stopped(lua_State *L, int status)
{
  return prof_result(L, status, "profiler is not running");
}

/* -- misc.memprof -------------------------------------------------------- */

#define MEMPROF_DEFAULT_PATH	"memprof.bin"

/* sample = BYTES, stack_budget = BYTES: a whole number of bytes, 1 or
** more (a sample of 0 would be no sampling); past 2^64 it saturates, for
** the check to refuse. nan, bad: what is wrong, if it is not a number, or
** not such a number. */
static const char *memprof_bytes(lua_State *L, int idx, uint64_t *bytes,
				 const char *nan, const char *bad)
{
  lua_Number n;
  if (lua_isnil(L, idx))
    return NULL;
  if (lua_type(L, idx) != LUA_TNUMBER)
    return nan;
  n = lua_tonumber(L, idx);
  if (n >= 18446744073709551616.0) {
    *bytes = UINT64_MAX;
    return NULL;
  }
  if (!(n >= 1) || n != (lua_Number)(uint64_t)n)
    return bad;
  *bytes = (uint64_t)n;
  return NULL;
}

/* path = PATH at idx, and follow = BOOL on top (popped): forked children
** profile themselves into PATH.PID. NULL or an error message. */
static const char *prof_path(lua_State *L, int idx, const char **path,
			     const char **follow)
{
  int on = 0;
  if (!lua_isnil(L, idx) && (*path = lua_tostring(L, idx)) == NULL)
    return "path must be a string";
  if (!prof_bool(L, -1, &on))
    return "follow must be a boolean";
  if (on && strlen(*path) >= LJ_PROF_FOLLOWMAX)
    return "path too long to follow forks";
  *follow = on ? *path : NULL;
  lua_pop(L, 1);
  return NULL;
}

/* start(path), the reference's call, writes its format (v3); start{path =
** PATH, format = "v3" | "v4" | "v5" | "v6", stacks = BOOL, native = BOOL,
** sample = BYTES, stack_budget = BYTES, follow = BOOL} writes v4 unless
** told otherwise (lj_memprof.h: why).
** NULL or an error message. */
static const char *memprof_options(lua_State *L, const char **path,
				   MemprofConfig *cfg)
{
  static const ProfName formats[] = {
    { "v3", LJM_VERSION_REFERENCE }, { "v4", LJM_VERSION },
    { "v5", LJM_VERSION_STACKS }, { "v6", LJM_VERSION_LABELS }, { NULL, 0 }
  };
  const char *bad;
  *path = MEMPROF_DEFAULT_PATH;
  lj_memprof_defaults(cfg);
  if (lua_isnoneornil(L, 1))
    return NULL;
  if (lua_type(L, 1) == LUA_TSTRING) {
    *path = lua_tostring(L, 1);
    return NULL;
  }
  if (!lua_istable(L, 1))
    return "options must be a path or a table";
  cfg->version = LJM_VERSION;  /* Ours, the table form (lj_memprof.h). */
  lua_getfield(L, 1, "path");
  lua_getfield(L, 1, "format");
  lua_getfield(L, 1, "stacks");
  lua_getfield(L, 1, "sample");
  lua_getfield(L, 1, "native");
  lua_getfield(L, 1, "stack_budget");
  lua_getfield(L, 1, "follow");
  if ((bad = prof_path(L, -7, path, &cfg->follow)) != NULL)
    return bad;
  prof_choice(L, -5, formats, &cfg->format);
  if (!prof_bool(L, -4, &cfg->stacks))
    return "stacks must be a boolean";
  if ((bad = memprof_bytes(L, -3, &cfg->sample,
			   "sample must be a number of bytes",
			   "sample must be a whole number of bytes, 1 or more"))
      != NULL)
    return bad;
  if (!prof_bool(L, -2, &cfg->native))
    return "native must be a boolean";
  if ((bad = memprof_bytes(L, -1, &cfg->budget,
			   "stack_budget must be a number of bytes",
			   "stack_budget must be a whole number of bytes"))
      != NULL)
    return bad;
  return lj_memprof_check(cfg);
}

static int memprof_start(lua_State *L)
{
  const char *path;
  struct luam_Memprof_Options opt;
  MemprofConfig cfg;
  ProfFile *pf;
  int status;
  const char *bad = memprof_options(L, &path, &cfg);
  if (!LJ_HASMEMPROF)
    return prof_disabled(L);
  if (bad != NULL)
    return prof_misuse(L, bad);
  if (lj_memprof_busy(G(L)))  /* Before the file is opened and truncated. */
    return prof_result(L, PROFILE_ERRRUN, "profiler is running already");
  if ((pf = prof_open(L, path, LJ_PROFFILE_MEMBUF, 0)) == NULL)
    return 3;
  opt.ctx = pf;
  opt.buf = lj_proffile_buf(pf);
  opt.len = lj_proffile_bufsize(pf);
  opt.writer = lj_proffile_write;
  opt.on_stop = lj_proffile_close;
  status = lj_memprof_start(L, &opt, &cfg);
  if (status == PROFILE_ERRIO)  /* The symbol table could not be written. */
    return prof_ioerror(L, path, 0);
  return prof_started(L, status, pf);
}

static int memprof_stop(lua_State *L)
{
  int status;
  if (!LJ_HASMEMPROF)
    return prof_disabled(L);
  status = luaM_memprof_stop(L);
  return prof_stopped(L, status);
}

static const luaL_Reg memprof_lib[] = {
  { "start", memprof_start },
  { "stop", memprof_stop },
  { NULL, NULL }
};

/* -- misc.sysprof -------------------------------------------------------- */

#define SYSPROF_DEFAULT_PATH	"sysprof.bin"

static const char *const sysprof_vmstates[] = { LJP_VMSTDEF(LJP_VMSTNAME) };

/* misc.sysprof.report(): counters of this VM's profile running or last. */
static int sysprof_report(lua_State *L)
{
  struct luam_Sysprof_Counters c;
  const uint64_t *n = &c.vmst_interp;
  int i;
  if (!LJ_HASSYSPROF)
    return prof_disabled(L);
  lj_sysprof_report(G(L), &c);
  lua_createtable(L, 0, 2);
  lua_pushnumber(L, (lua_Number)c.samples);
  lua_setfield(L, -2, "samples");
  lua_createtable(L, 0, 10);
  for (i = 0; i < 10; i++) {
    lua_pushnumber(L, (lua_Number)n[i]);
    lua_setfield(L, -2, sysprof_vmstates[i]);
  }
  lua_setfield(L, -2, "vmstate");
  return 1;
}

/* Options table -> config; NULL or an error message. */
static const char *sysprof_options(lua_State *L, SysprofConfig *cfg,
				   const char **path)
{
  static const ProfName modes[] = {
    { "D", LUAM_SYSPROF_DEFAULT }, { "L", LUAM_SYSPROF_LEAF },
    { "C", LUAM_SYSPROF_CALLGRAPH }, { NULL, 0 }
  };
  static const ProfName clocks[] = {
    { "cpu", SYSPROF_CLOCK_CPU }, { "wall", SYSPROF_CLOCK_WALL }, { NULL, 0 }
  };
  static const ProfName formats[] = {
    { "v2", LUAM_SYSPROF_V2 }, { "v3", LUAM_SYSPROF_V3 },
    { "v4", LUAM_SYSPROF_V4 }, { NULL, 0 }
  };
  const char *bad;
  *path = SYSPROF_DEFAULT_PATH;
  lj_sysprof_defaults(cfg);
  if (lua_isnoneornil(L, 1))
    return NULL;
  if (!lua_istable(L, 1))
    return "options must be a table";
  lua_getfield(L, 1, "jit");
  lua_getfield(L, 1, "mode");
  lua_getfield(L, 1, "interval");
  lua_getfield(L, 1, "clock");
  lua_getfield(L, 1, "format");
  lua_getfield(L, 1, "path");
  lua_getfield(L, 1, "follow");
  if ((bad = prof_path(L, -2, path, &cfg->follow)) != NULL)
    return bad;
  if (!prof_bool(L, -6, &cfg->jitev))
    return "jit must be a boolean";
  prof_choice(L, -5, modes, &cfg->mode);
  if (!lua_isnil(L, -4))  /* Not a number: 0, refused. */
    cfg->interval = lj_sysprof_interval(lua_tonumber(L, -4));
  prof_choice(L, -3, clocks, &cfg->clock);
  prof_choice(L, -2, formats, &cfg->format);
  return lj_sysprof_check(cfg);
}

static int sysprof_start(lua_State *L)
{
  SysprofConfig cfg;
  const char *path;
  const char *bad = sysprof_options(L, &cfg, &path);
  ProfFile *pf;
  int status;
  if (!LJ_HASSYSPROF)
    return prof_disabled(L);
  if (bad != NULL)
    return prof_misuse(L, bad);
  if (lj_sysprof_busy(G(L)))  /* Before the file is opened and truncated. */
    return prof_result(L, PROFILE_ERRRUN, "profiler is running already");
  if ((pf = prof_open(L, path, LJ_PROFFILE_SYSBUF, 1)) == NULL)
    return 3;
  cfg.ctx = pf;
  cfg.buf = lj_proffile_buf(pf);
  cfg.len = lj_proffile_bufsize(pf);
  cfg.writer = lj_proffile_write;
  cfg.on_stop = lj_proffile_close;
  status = lj_sysprof_start(L, &cfg);
  return prof_started(L, status, pf);
}

static int sysprof_stop(lua_State *L)
{
  int status;
  if (!LJ_HASSYSPROF)
    return prof_disabled(L);
  status = luaM_sysprof_stop(L);
  return prof_stopped(L, status);
}

static const luaL_Reg sysprof_lib[] = {
  { "start", sysprof_start },
  { "stop", sysprof_stop },
  { "report", sysprof_report },
  { NULL, NULL }
};

/* -- misc.heapsnapshot --------------------------------------------------- */

#define HEAPSNAP_DEFAULT_PATH	"heapsnap.bin"

/* heapsnapshot(path) or heapsnapshot{path = PATH, strings = BYTES}:
** true, or nil, message, errno. The program goes on either way. */
static int misc_heapsnapshot(lua_State *L)
{
  HeapSnapConfig cfg;
  const char *path = HEAPSNAP_DEFAULT_PATH, *bad;
  int status;
  cfg.strings = 0;
  if (lua_type(L, 1) == LUA_TSTRING) {
    path = lua_tostring(L, 1);
  } else if (lua_istable(L, 1)) {
    lua_getfield(L, 1, "path");
    lua_getfield(L, 1, "strings");
    if (!lua_isnil(L, -2) && (path = lua_tostring(L, -2)) == NULL)
      return prof_misuse(L, "path must be a string");
    if ((bad = memprof_bytes(L, -1, &cfg.strings,
			     "strings must be a number of bytes",
			     "strings must be a whole number of bytes, 1 or more"))
	!= NULL)
      return prof_misuse(L, bad);
  } else if (!lua_isnoneornil(L, 1)) {
    return prof_misuse(L, "options must be a path or a table");
  }
  status = lj_heapsnap_file(L, path, &cfg);
  if (status == PROFILE_ERRIO)
    return prof_ioerror(L, path, 0);
  return prof_result(L, status, NULL);
}

/* -- Perf map ------------------------------------------------------------ */

static int misc_perfmap(lua_State *L)
{
  if (!lua_isboolean(L, 1))
    return prof_misuse(L, "perfmap takes true or false");
  return prof_result(L, luaM_perfmap(L, lua_toboolean(L, 1)), NULL);
}

/* -- misc.label ----------------------------------------------------------- */

/* misc.label() or misc.label(nil): a new table of the labels in force. */
static int misc_labelget(lua_State *L)
{
  lj_label_totable(L, L);
  return 1;
}

/* The set at 1 becomes the running coroutine's: returns the one replaced;
** or, for a set that breaks a rule, nil and the rule, for the wrapper to
** raise at its caller. The VM's table of sets is upvalue 1. */
static int misc_labelswap(lua_State *L)
{
  GCtab *st = tabV(&curr_func(L)->c.upvalue[0]);
  if (lj_label_toset(L, 1, st) != NULL) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  lj_label_swap(L, L, st);
  return 1;
}

/* misc.label itself is Lua: fn runs in a Lua frame, so it may yield, and
** the set is restored when it returns or fails; the error is raised again
** as it was (its value), so a traceback shows it raised here.
**
** A switch to a set object goes through the FFI where there is one and
** the JIT is on, as misc.label is first called (the ffi module is not
** there yet when misc opens): the JIT compiles that call into the trace
** (about 40 instructions), where a call of a C function of Lua's ends the
** trace and stitches another after it (about 400), but the interpreter
** makes an FFI call at about three times the cost of swap's. The id the
** switch returns finds the set replaced. Other switches (a table, no FFI,
** no JIT) call swap; the call form's are in functions of fixed arguments,
** for a stitched trace cannot read the varargs of the frame below it. */
static const char misc_label_lua[] =
  "local swap, get, pcall, error, require, fptr, byid, sets = ...\n"
  "local fswap, bound\n"  /* Not fswap == nil: cdata's __eq would run. */
  "local function bind()\n"
  "  bound = true\n"
  "  local okj, jit = pcall(require, 'jit')\n"
  "  local ok, ffi = pcall(require, 'ffi')\n"
  "  ok = ok and okj and type(jit) == 'table' and jit.status() and\n"
  "       type(ffi) == 'table'\n"
  "  if ok then\n"
  "    ok, fswap = pcall(ffi.cast, 'uint32_t (*)(void *)', fptr)\n"
  "  end\n"
  "  if not ok then fswap = false end\n"
  "end\n"
  "local function enter(set)\n"
  "  if fswap and sets[set] then return byid[fswap(set)] end\n"
  "  local prev, bad = swap(set)\n"
  "  if prev == nil then error(bad, 3) end\n"  /* At misc.label's caller. */
  "  return prev\n"
  "end\n"
  "local function leave(prev)\n"
  "  if fswap then fswap(prev) else swap(prev) end\n"
  "end\n"
  "local function back(prev, ok, ...)\n"
  "  leave(prev)\n"
  "  if ok then return ... end\n"
  "  error((...), 0)\n"
  "end\n"
  "return function(set, fn, ...)\n"
  "  if not bound then bind() end\n"
  "  if fn == nil then\n"
  "    if fswap and sets[set] then return byid[fswap(set)] end\n"
  "    if set == nil then return get() end\n"
  "    local prev, bad = swap(set)\n"
  "    if prev == nil then error(bad, 2) end\n"
  "    return prev\n"
  "  end\n"
  "  return back(enter(set), pcall(fn, ...))\n"
  "end\n";

/* misc.label is compiled when first read, by misc's __index, not as misc
** opens: its parse would be a fifth of a VM's start. Upvalues: pcall,
** error and require as misc opened. */
static int misc_lazy(lua_State *L)
{
  if (lua_type(L, 2) != LUA_TSTRING || strcmp(lua_tostring(L, 2), "label"))
    return 0;
  lj_label_state(L);
  if (luaL_loadbuffer(L, misc_label_lua, sizeof(misc_label_lua) - 1,
		      "=misc.label") != 0)
    lua_error(L);
  lua_getfield(L, LUA_REGISTRYINDEX, LJ_LABEL_REGKEY);
  lua_pushcclosure(L, misc_labelswap, 1);
  lua_pushcfunction(L, misc_labelget);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushvalue(L, lua_upvalueindex(2));
  lua_pushvalue(L, lua_upvalueindex(3));
  lua_pushlightuserdata(L, (void *)(uintptr_t)lj_label_ffiswap);
  lua_getfield(L, LUA_REGISTRYINDEX, LJ_LABEL_REGKEY);
  lua_rawgeti(L, -1, LJ_LABEL_BYID);
  lua_rawgeti(L, -2, LJ_LABEL_SETS);
  lua_remove(L, -3);
  lua_call(L, 8, 1);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, -2);
  lua_rawset(L, 1);
  return 1;
}

/* misc's metatable, set on the table at the top of the stack. */
static void misc_label_open(lua_State *L)
{
  lua_createtable(L, 0, 1);
  lua_getfield(L, LUA_GLOBALSINDEX, "pcall");
  lua_getfield(L, LUA_GLOBALSINDEX, "error");
  lua_getfield(L, LUA_GLOBALSINDEX, "require");
  lua_pushcclosure(L, misc_lazy, 3);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
}

/* -- Library registration ------------------------------------------------ */

static const luaL_Reg misc_lib[] = {
  { "getmetrics", misc_getmetrics },
  { "perfmap", misc_perfmap },
  { "heapsnapshot", misc_heapsnapshot },
  { NULL, NULL }
};

LUALIB_API int luaopen_misc(lua_State *L)
{
  luaL_register(L, LUAM_MISCLIBNAME, misc_lib);
  misc_label_open(L);
  lua_newtable(L);
  luaL_register(L, NULL, memprof_lib);
  lua_pushboolean(L, LJ_HASMEMPROF);
  lua_setfield(L, -2, "available");
  lua_setfield(L, -2, "memprof");
  lua_newtable(L);
  luaL_register(L, NULL, sysprof_lib);
  lua_pushboolean(L, LJ_HASSYSPROF);
  lua_setfield(L, -2, "available");
  lua_setfield(L, -2, "sysprof");
  return 1;
}
