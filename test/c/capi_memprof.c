/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The memory profiler's C API: return codes, the writer/on_stop contract
** (double buffering, a failing writer, ending the stream), lua_close with
** a profile running, fork(), and what the stream says.
*/

#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "lua.h"
#include "lualib.h"
#include "lauxlib.h"
#include "lmisclib.h"
#include "tap.h"

#define BUFLEN 4096

/* The host side: a growing copy of the stream, two buffers to swap. */
typedef struct Sink {
  uint8_t bufs[2][BUFLEN];
  uint8_t *data;
  size_t len;
  int writes;
  int fail_after;	/* Fail on this write (0: never). */
  int end_after;	/* End the stream on this write (0: never). */
  int stops;		/* on_stop calls. */
  uint8_t *stopbuf;	/* The buffer on_stop got. */
} Sink;

static size_t sink_write(const void **data, size_t len, void *ctx)
{
  Sink *s = (Sink *)ctx;
  s->writes++;
  if (s->fail_after && s->writes >= s->fail_after) {
    errno = EPIPE;
    return 0;
  }
  s->data = realloc(s->data, s->len + len);
  memcpy(s->data + s->len, *data, len);
  s->len += len;
  if (s->end_after && s->writes >= s->end_after)
    *data = NULL;
  else  /* Double buffering: fill the other one next. */
    *data = *data == s->bufs[0] ? s->bufs[1] : s->bufs[0];
  return len;
}

static int sink_stop(void *ctx, uint8_t *buf)
{
  Sink *s = (Sink *)ctx;
  s->stops++;
  s->stopbuf = buf;
  return 0;
}

static struct luam_Memprof_Options sink_opts(Sink *s)
{
  struct luam_Memprof_Options o;
  memset(s, 0, sizeof(*s));
  o.ctx = s;
  o.buf = s->bufs[0];
  o.len = BUFLEN;
  o.writer = sink_write;
  o.on_stop = sink_stop;
  return o;
}

/* Runs code; 1 if it ran to its end, 0 (and its error shown) if not. */
static int run(lua_State *L, const char *code, const char *name)
{
  if (luaL_loadbuffer(L, code, strlen(code), name) || lua_pcall(L, 0, 0, 0)) {
    printf("# %s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    return 0;
  }
  return 1;
}

/* The JSON report of the stream in path, by ljprof; NULL if it could not
** read it. */
static json_t *report_file(const char *path, int *rc)
{
  char cmd[256];
  FILE *p;
  json_t *doc;
  snprintf(cmd, sizeof(cmd), "ljprof report --format=json %s", path);
  p = popen(cmd, "r");
  doc = json_loadf(p, 0, NULL);
  *rc = WEXITSTATUS(pclose(p));
  return doc;
}

/* The same of the stream a sink holds. */
static json_t *report(const Sink *s, int *rc)
{
  char path[] = "/tmp/capi_memprof_XXXXXX";
  FILE *f;
  json_t *doc;
  int fd = mkstemp(path);
  if (fd < 0 || (f = fdopen(fd, "wb")) == NULL)
    return NULL;
  fwrite(s->data, 1, s->len, f);
  fclose(f);
  doc = report_file(path, rc);
  remove(path);
  return doc;
}

static json_int_t alloc_events(json_t *doc, const char *location)
{
  size_t i;
  json_t *loc;
  json_array_foreach(json_object_get(doc, "locations"), i, loc)
    if (strcmp(json_string_value(json_object_get(loc, "location")), location) == 0)
      return json_integer_value(json_object_get(loc, "alloc_events"));
  return 0;
}

static const char *payload =
  "jit.off()\n"
  "local t = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }\n"
  "for i = 1, 10 do t[i] = {} end\n";

int main(void)
{
  lua_State *L = luaL_newstate(), *other = luaL_newstate();
  struct luam_Memprof_Options o;
  Sink s;
  json_t *doc;
  int rc;

  luaL_openlibs(L);

  /* Misuse. */
  o = sink_opts(&s);
  tap_is(luaM_memprof_start(L, NULL), PROFILE_ERRUSE, "no options: PROFILE_ERRUSE");
  o.writer = NULL;
  tap_is(luaM_memprof_start(L, &o), PROFILE_ERRUSE, "no writer: PROFILE_ERRUSE");
  o = sink_opts(&s);
  o.len = 100;
  tap_is(luaM_memprof_start(L, &o), PROFILE_ERRUSE, "a buffer under 1 KiB: PROFILE_ERRUSE");
  tap_is(luaM_memprof_stop(L), PROFILE_ERRRUN, "stop with nothing running: PROFILE_ERRRUN");

  /* A profile through double buffers, and what it says. */
  o = sink_opts(&s);
  tap_is(luaM_memprof_start(L, &o), PROFILE_SUCCESS, "start: PROFILE_SUCCESS");
  tap_is(luaM_memprof_start(L, &o), PROFILE_ERRRUN, "a second start: PROFILE_ERRRUN");
  tap_is(luaM_memprof_stop(other), PROFILE_ERRRUN, "stop from another VM: PROFILE_ERRRUN");
  run(L, payload, "=capi");
  tap_is(luaM_memprof_stop(L), PROFILE_SUCCESS, "stop: PROFILE_SUCCESS");
  tap_is(s.stops, 1, "on_stop was called once");
  tap_ok(s.writes > 2, "the symbol table alone took several buffer swaps");
  tap_ok(s.len > 7 && memcmp(s.data, "ljs\3\0\0\0", 7) == 0, "the stream starts with ljs v3");
  tap_is(s.data[s.len-1], 0x80, "and ends with the epilogue");
  doc = report(&s, &rc);
  tap_is(rc, 0, "ljprof reads it back complete");
  tap_is(alloc_events(doc, "=capi:3"), 10, "line 3 of the payload made its 10 tables");
  json_decref(doc);
  free(s.data);

  /* A writer that fails on the symbol table: start fails. */
  o = sink_opts(&s);
  s.fail_after = 1;
  errno = 0;
  tap_is(luaM_memprof_start(L, &o), PROFILE_ERRIO, "a writer failing at once: start says PROFILE_ERRIO");
  tap_is(errno, EPIPE, "with the writer's errno");
  tap_is(s.stops, 1, "on_stop was called");
  tap_is(luaM_memprof_stop(L), PROFILE_ERRRUN, "nothing runs");
  free(s.data);

  /* A writer that fails later: the profile halts, the program goes on. */
  o = sink_opts(&s);
  tap_is(luaM_memprof_start(L, &o), PROFILE_SUCCESS, "start with a writer that will fail");
  s.fail_after = s.writes + 2;
  run(L, "local t = {} for i = 1, 2000 do t[i] = { i } end", "=fail");
  tap_is(s.stops, 1, "the failure stopped the profile (on_stop called)");
  tap_ok(run(L, "local t = {} for i = 1, 2000 do t[i] = { i } end "
	      "assert(#t == 2000 and t[2000][1] == 2000)", "=after"),
	 "the VM runs on (and allocates) after the writer failed");
  errno = 0;
  tap_is(luaM_memprof_stop(L), PROFILE_ERRIO, "stop reports PROFILE_ERRIO");
  tap_is(errno, EPIPE, "with the writer's errno");
  tap_is(luaM_memprof_stop(L), PROFILE_ERRRUN, "and then nothing runs");
  tap_is(s.stops, 1, "on_stop was not called twice");
  free(s.data);

  /* A writer that ends the stream: stopped, not an error. */
  o = sink_opts(&s);
  tap_is(luaM_memprof_start(L, &o), PROFILE_SUCCESS, "start with a writer that will end the stream");
  s.end_after = s.writes + 2;
  run(L, "local t = {} for i = 1, 2000 do t[i] = { i } end", "=end");
  tap_is(s.stops, 1, "ending the stream stopped the profile");
  tap_is(luaM_memprof_stop(L), PROFILE_SUCCESS, "stop then says PROFILE_SUCCESS");
  free(s.data);

  /* fork(): the child's profiler is idle; the host's writer and on_stop
  ** are never called there, whatever the child allocates or calls. */
  {
    pid_t pid;
    int status = -1, writes;
    o = sink_opts(&s);
    tap_is(luaM_memprof_start(L, &o), PROFILE_SUCCESS, "start, then fork");
    fflush(stdout);
    if ((pid = fork()) == 0) {
      writes = s.writes;
      run(L, "local t = {} for i = 1, 20000 do t[i] = { i } end", "=child");
      _exit(s.writes == writes && s.stops == 0 &&
	    luaM_memprof_stop(L) == PROFILE_ERRRUN && s.stops == 0 ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "the child allocated, wrote nothing, and had no profile to stop");
    run(L, payload, "=parent");
    tap_is(luaM_memprof_stop(L), PROFILE_SUCCESS, "the parent stops its profile");
    doc = report(&s, &rc);
    tap_is(rc, 0, "its stream reads back complete");
    tap_is(alloc_events(doc, "=parent:3"), 10, "with the parent's tables");
    tap_is(alloc_events(doc, "=child:1"), 0, "and none of the child's");
    json_decref(doc);
    free(s.data);
  }

  /* fork() with set_follow: the child starts a profile of its own, into
  ** PATH.PID by the profiler's writer; the host's is not called there. */
  if (tap_emulated()) {
    tap_skip(9, "qemu-user aborts a forked child that starts a thread");
  } else {
    char path[] = "/tmp/capi_follow_XXXXXX", child[64];
    pid_t pid;
    int status = -1, writes, fd = mkstemp(path);
    close(fd);
    tap_is(luaM_memprof_set_follow(""), PROFILE_ERRUSE, "set_follow(\"\"): PROFILE_ERRUSE");
    tap_is(luaM_memprof_set_follow(path), PROFILE_SUCCESS, "set_follow(path)");
    o = sink_opts(&s);
    tap_is(luaM_memprof_start(L, &o), PROFILE_SUCCESS, "start, following forks");
    tap_is(luaM_memprof_set_follow(NULL), PROFILE_ERRRUN,
	   "set_follow while a profile runs: PROFILE_ERRRUN");
    fflush(stdout);
    if ((pid = fork()) == 0) {
      writes = s.writes;
      run(L, "local t = {} for i = 1, 20000 do t[i] = { i } end", "=child");
      _exit(luaM_memprof_stop(L) == PROFILE_SUCCESS && s.writes == writes &&
	    s.stops == 0 ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "the child stopped a profile of its own; the host's writer was not called");
    tap_is(luaM_memprof_stop(L), PROFILE_SUCCESS, "the parent stops its profile");
    tap_is(luaM_memprof_set_follow(NULL), PROFILE_SUCCESS, "set_follow(NULL)");
    free(s.data);
    snprintf(child, sizeof(child), "%s.%ld", path, (long)pid);
    doc = report_file(child, &rc);
    tap_is(rc, 0, "the child's stream, PATH.PID, reads back complete");
    tap_ok(alloc_events(doc, "=child:1") >= 10000, "with the child's tables");
    json_decref(doc);
    remove(child);
    remove(path);
  }

  /* lua_close with a profile running completes the stream. */
  o = sink_opts(&s);
  tap_is(luaM_memprof_start(L, &o), PROFILE_SUCCESS, "start, then lua_close");
  run(L, payload, "=close");
  lua_close(L);
  tap_is(s.stops, 1, "lua_close called on_stop");
  tap_is(s.data[s.len-1], 0x80, "the stream ends with the epilogue");
  doc = report(&s, &rc);
  tap_is(rc, 0, "ljprof reads it back complete");
  tap_is(alloc_events(doc, "=close:3"), 10, "and it holds the payload's 10 tables");
  json_decref(doc);
  free(s.data);

  /* The stream format: v3 unless asked, v4 when asked, set only between
  ** profiles. */
  {
    lua_State *v = luaL_newstate();
    const uint8_t *ljm;
    tap_is(luaM_memprof_set_format(5), PROFILE_ERRUSE, "set_format(5): PROFILE_ERRUSE");
    tap_is(luaM_memprof_set_format(LUAM_MEMPROF_V4), PROFILE_SUCCESS, "set_format(V4)");
    o = sink_opts(&s);
    tap_is(luaM_memprof_start(v, &o), PROFILE_SUCCESS, "start");
    tap_is(luaM_memprof_set_format(LUAM_MEMPROF_V3), PROFILE_ERRRUN,
	   "set_format while a profile runs: PROFILE_ERRRUN");
    tap_is(luaM_memprof_stop(v), PROFILE_SUCCESS, "stop");
    ljm = memmem(s.data, s.len, "ljm", 3);
    tap_ok(ljm != NULL && ljm[3] == 4, "the stream is ljm v4");
    free(s.data);
    tap_is(luaM_memprof_set_format(LUAM_MEMPROF_V3), PROFILE_SUCCESS, "set_format(V3)");
    lua_close(v);
  }

  /* Call stacks and sampling: v5, set only between profiles; sampling
  ** refuses absurd intervals, and 0 records every event again. */
  {
    lua_State *v = luaL_newstate();
    const uint8_t *ljm;
    json_t *stacks;
    luaL_openlibs(v);
    tap_is(luaM_memprof_set_stacks(1), PROFILE_SUCCESS, "set_stacks(1)");
    tap_is(luaM_memprof_set_sample((uint64_t)1 << 41), PROFILE_ERRUSE,
	   "set_sample(2^41): PROFILE_ERRUSE");
    tap_is(luaM_memprof_set_sample(((uint64_t)1 << 40) + 1), PROFILE_ERRUSE,
	   "set_sample(2^40 + 1): PROFILE_ERRUSE, as from Lua and LJPROF");
    tap_is(luaM_memprof_set_stack_budget(((uint64_t)1 << 20) - 1),
	   PROFILE_ERRUSE, "set_stack_budget(2^20 - 1): PROFILE_ERRUSE");
    tap_is(luaM_memprof_set_stack_budget(((uint64_t)1 << 40) + 1),
	   PROFILE_ERRUSE, "set_stack_budget(2^40 + 1): PROFILE_ERRUSE");
    tap_is(luaM_memprof_set_stack_budget((uint64_t)1 << 20), PROFILE_SUCCESS,
	   "set_stack_budget(2^20)");
    o = sink_opts(&s);
    tap_is(luaM_memprof_start(v, &o), PROFILE_SUCCESS, "start with stacks");
    tap_is(luaM_memprof_set_stacks(0), PROFILE_ERRRUN,
	   "set_stacks while a profile runs: PROFILE_ERRRUN");
    tap_is(luaM_memprof_set_stack_budget((uint64_t)1 << 30), PROFILE_ERRRUN,
	   "set_stack_budget while a profile runs: PROFILE_ERRRUN");
    tap_is(luaM_memprof_set_sample(4096), PROFILE_ERRRUN,
	   "set_sample while a profile runs: PROFILE_ERRRUN");
    run(v, "local function f() return {} end\n"
	   "local t = {} for i = 1, 100 do t[i] = f() end", "=stacks");
    tap_is(luaM_memprof_stop(v), PROFILE_SUCCESS, "stop");
    ljm = memmem(s.data, s.len, "ljm", 3);
    tap_ok(ljm != NULL && ljm[3] == 6, "the stream is ljm v6 (stacks, labels)");
    doc = report(&s, &rc);
    tap_is(rc, 0, "ljprof reads it back complete");
    stacks = json_object_get(doc, "stacks");
    tap_ok(stacks && json_integer_value(json_object_get(stacks, "distinct")) >= 2,
	   "with its stacks");
    tap_ok(json_is_false(json_object_get(stacks, "native")),
	   "those stacks have no native frames");
    tap_ok(alloc_events(doc, "=stacks:1") >= 100, "the helper's 100 tables");
    json_decref(doc);
    free(s.data);
    tap_is(luaM_memprof_set_stack_budget((uint64_t)1 << 30), PROFILE_SUCCESS,
	   "set_stack_budget(2^30), the default again");
    tap_is(luaM_memprof_set_sample(4096), PROFILE_SUCCESS, "set_sample(4096)");
    o = sink_opts(&s);
    tap_is(luaM_memprof_start(v, &o), PROFILE_SUCCESS, "start sampled");
    run(v, "local t = {} for i = 1, 20000 do t[i] = { i } end", "=sampled");
    tap_is(luaM_memprof_stop(v), PROFILE_SUCCESS, "stop");
    doc = report(&s, &rc);
    tap_ok(rc == 0 && json_is_true(json_object_get(doc, "estimates")),
	   "the sampled stream reads back as estimates");
    json_decref(doc);
    free(s.data);
    tap_is(luaM_memprof_set_sample(0), PROFILE_SUCCESS, "set_sample(0)");
    tap_is(luaM_memprof_set_stacks(0), PROFILE_SUCCESS, "set_stacks(0)");
    /* Native frames: v5 with stacks, though stacks were turned off. */
    tap_is(luaM_memprof_set_native(1), PROFILE_SUCCESS, "set_native(1)");
    o = sink_opts(&s);
    tap_is(luaM_memprof_start(v, &o), PROFILE_SUCCESS, "start with native stacks");
    tap_is(luaM_memprof_set_native(0), PROFILE_ERRRUN,
	   "set_native while a profile runs: PROFILE_ERRRUN");
    run(v, "local t = {} for i = 1, 100 do t[i] = { i } end", "=native");
    tap_is(luaM_memprof_stop(v), PROFILE_SUCCESS, "stop");
    ljm = memmem(s.data, s.len, "ljm", 3);
    tap_ok(ljm != NULL && ljm[3] == 6, "the stream is ljm v6 (stacks, labels)");
    doc = report(&s, &rc);
    stacks = json_object_get(doc, "stacks");
    tap_ok(rc == 0 && json_is_true(json_object_get(stacks, "native")),
	   "it reads back with native stacks");
    json_decref(doc);
    free(s.data);
    tap_is(luaM_memprof_set_native(0), PROFILE_SUCCESS, "set_native(0)");
    o = sink_opts(&s);
    tap_is(luaM_memprof_start(v, &o), PROFILE_SUCCESS, "start");
    tap_is(luaM_memprof_stop(v), PROFILE_SUCCESS, "stop");
    ljm = memmem(s.data, s.len, "ljm", 3);
    tap_ok(ljm != NULL && ljm[3] == 3, "back to ljm v3");
    free(s.data);
    lua_close(v);
  }

  /* A VM whose libraries were never opened can be profiled too. */
  {
    lua_State *bare = luaL_newstate();
    o = sink_opts(&s);
    tap_is(luaM_memprof_start(bare, &o), PROFILE_SUCCESS, "start on a VM without libraries");
    run(bare, "local t = {} for i = 1, 100 do t[i] = {} end", "=bare");
    tap_is(luaM_memprof_stop(bare), PROFILE_SUCCESS, "stop");
    doc = report(&s, &rc);
    tap_is(rc, 0, "ljprof reads it back complete");
    tap_is(alloc_events(doc, "=bare:1"), 100 + 2, "its 100 tables, the outer one and its array are named");
    json_decref(doc);
    free(s.data);
    lua_close(bare);
  }

  /* The profiler is free again for another VM. */
  o = sink_opts(&s);
  tap_is(luaM_memprof_start(other, &o), PROFILE_SUCCESS, "another VM can profile after lua_close");
  tap_is(luaM_memprof_stop(other), PROFILE_SUCCESS, "...");
  free(s.data);
  lua_close(other);
  return tap_done();
}
