/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The platform profiler's C API: callbacks set before start, return
** codes, counters, a host backtracer, and lua_close with a profile running.
*/

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lua.h"
#include "lualib.h"
#include "lauxlib.h"
#include "lmisclib.h"
#include "tap.h"

#define BUFLEN 8192

static uint8_t buf[BUFLEN];
static uint8_t *stream;
static size_t streamlen;
static int stops, frames_written;

static size_t sink_write(const void **data, size_t len, void *ctx)
{
  (void)ctx;
  stream = realloc(stream, streamlen + len);
  memcpy(stream + streamlen, *data, len);
  streamlen += len;
  return len;  /* Keep filling the same buffer. */
}

static int sink_stop(void *ctx, uint8_t *b)
{
  (void)ctx;
  (void)b;
  stops++;
  return 0;
}

/* A host backtracer: reports two made-up frames. */
static void host_backtrace(void *(*frame_writer)(int frame_no, void *addr))
{
  frame_writer(0, (void *)0x1234);
  frame_writer(1, (void *)0x5678);
  frames_written += 2;
}

static long long all_samples(void *ctx)
{
  struct luam_Sysprof_Counters c;
  (void)ctx;
  luaM_sysprof_report(&c);
  return (long long)c.samples;
}

/* A trace's sample has no host stack in a v2 stream. */
static long long samples_outside_traces(void *ctx)
{
  struct luam_Sysprof_Counters c;
  (void)ctx;
  luaM_sysprof_report(&c);
  return (long long)(c.samples - c.vmst_trace);
}

#define SPIN "capi_sysprof.spin"

/* Interpreted Lua, the clock's C function and a compiled loop by turns:
** one chunk, loaded once, so that no new function's symbol is written
** meanwhile (a sample taken then is dropped, the backtracer not called). */
static void spin_load(lua_State *L)
{
  luaL_loadstring(L, "for j = 1, 100 do os.clock() "
		     "for i = 1, 1000 do local _ = i % 7 end end");
  lua_setfield(L, LUA_REGISTRYINDEX, SPIN);
}

static void spin_step(void *ctx)
{
  lua_State *L = (lua_State *)ctx;
  lua_getfield(L, LUA_REGISTRYINDEX, SPIN);
  if (lua_pcall(L, 0, 0, 0) != 0)
    lua_pop(L, 1);
}

/* Runs Lua on L until the profile running has n samples by have(). */
static void spin(lua_State *L, long long n, long long (*have)(void *ctx))
{
  tap_wait_until("samples", n, have, spin_step, L, 60);
}

static void *idle_thread(void *arg)
{
  (void)arg;
  pause();  /* Until the process ends. */
  return NULL;
}

static uint64_t sum(const struct luam_Sysprof_Counters *c)
{
  return c->vmst_interp + c->vmst_lfunc + c->vmst_ffunc + c->vmst_cfunc +
	 c->vmst_gc + c->vmst_exit + c->vmst_record + c->vmst_opt +
	 c->vmst_asm + c->vmst_trace;
}

int main(void)
{
  lua_State *L = luaL_newstate();
  struct luam_Sysprof_Options o;
  struct luam_Sysprof_Counters c;
  int before;
  luaL_openlibs(L);
  spin_load(L);
  memset(&o, 0, sizeof(o));
  o.mode = LUAM_SYSPROF_CALLGRAPH;
  o.interval = 1;
  o.buf = buf;
  o.len = BUFLEN;

  tap_is(luaM_sysprof_start(L, &o), PROFILE_ERRUSE, "no writer set: PROFILE_ERRUSE");
  tap_is(luaM_sysprof_set_writer(sink_write), PROFILE_SUCCESS, "set_writer");
  tap_is(luaM_sysprof_set_on_stop(sink_stop), PROFILE_SUCCESS, "set_on_stop");
  o.mode = 7;
  tap_is(luaM_sysprof_start(L, &o), PROFILE_ERRUSE, "an unknown mode: PROFILE_ERRUSE");
  o.mode = LUAM_SYSPROF_CALLGRAPH;
  /* The interval's rule is misc.sysprof.start's and LJPROF's: 0.001 ms to
  ** 1000000 ms, whole milliseconds here. */
  o.interval = 0;
  tap_is(luaM_sysprof_start(L, &o), PROFILE_ERRUSE, "interval 0: PROFILE_ERRUSE");
  o.interval = 1000001;
  tap_is(luaM_sysprof_start(L, &o), PROFILE_ERRUSE, "interval 1000001 ms: PROFILE_ERRUSE");
  o.interval = (uint64_t)1 << 62;
  tap_is(luaM_sysprof_start(L, &o), PROFILE_ERRUSE, "interval 2^62 ms: PROFILE_ERRUSE");
  o.interval = 1000000;
  tap_is(luaM_sysprof_start(L, &o), PROFILE_SUCCESS, "interval 1000000 ms: started");
  tap_is(luaM_sysprof_stop(L), PROFILE_SUCCESS, "and stopped");
  o.interval = 1;
  stops = 0;
  streamlen = 0;
  tap_is(luaM_sysprof_stop(L), PROFILE_ERRRUN, "stop with nothing running: PROFILE_ERRRUN");

  tap_is(luaM_sysprof_start(L, &o), PROFILE_SUCCESS, "start: PROFILE_SUCCESS");
  tap_is(luaM_sysprof_start(L, &o), PROFILE_ERRRUN, "a second start: PROFILE_ERRRUN");
  tap_is(luaM_sysprof_set_writer(sink_write), PROFILE_ERRRUN, "set_writer while running: PROFILE_ERRRUN");
  spin(L, 100, all_samples);
  tap_is(luaM_sysprof_stop(L), PROFILE_SUCCESS, "stop: PROFILE_SUCCESS");
  tap_is(stops, 1, "on_stop was called once");
  tap_ok(streamlen > 7 && memcmp(stream, "ljs\3\0\0\0", 7) == 0, "the stream starts with ljs v3");
  tap_is(stream[streamlen-1], 0x80, "and ends with the epilogue");
  luaM_sysprof_report(&c);
  tap_ok(c.samples >= 100, "samples were taken");
  tap_is(sum(&c), c.samples, "the counters by VM state add up to the samples");

  /* A host backtracer is called in the handler, once per sample. */
  tap_is(luaM_sysprof_set_backtracer(host_backtrace), PROFILE_SUCCESS, "set_backtracer");
  tap_is(luaM_sysprof_start(L, &o), PROFILE_SUCCESS, "start with a host backtracer");
  spin(L, 100, all_samples);
  tap_is(luaM_sysprof_stop(L), PROFILE_SUCCESS, "stop");
  luaM_sysprof_report(&c);
  tap_is(frames_written, 2 * (int)c.samples, "the backtracer ran for every sample");
  luaM_sysprof_set_backtracer(NULL);

  /* The sampler's signal sent to a thread that does not run the VM is
  ** ignored there. The VM's thread only sleeps and signals, and its timer
  ** is set far beyond that, so no sample may appear. */
  {
    pthread_t other;
    struct timespec ms = { 0, 1000000 };
    uint64_t before;
    int i;
    pthread_create(&other, NULL, idle_thread, NULL);
    o.interval = 60000;
    tap_is(luaM_sysprof_start(L, &o), PROFILE_SUCCESS, "start, then signal another thread");
    o.interval = 1;
    luaM_sysprof_report(&c);
    before = c.samples;
    for (i = 0; i < 50; i++) {
      pthread_kill(other, SIGRTMIN + LUAM_SYSPROF_SIGRTOFS);
      nanosleep(&ms, NULL);
    }
    luaM_sysprof_report(&c);
    tap_is(c.samples, before, "50 signals to another thread: ignored, nothing counted");
    tap_is(luaM_sysprof_stop(L), PROFILE_SUCCESS, "and the profile stops cleanly");
    /* A perf event's last signal may come after the stop: the default
    ** action of a real-time signal would end the process. */
    for (i = 0; i < 50; i++)
      raise(SIGRTMIN + LUAM_SYSPROF_SIGRTOFS);
    tap_ok(1, "50 signals after the stop: the process lives on");
  }

  /* A VM whose libraries were never opened can be profiled too. */
  {
    lua_State *bare = luaL_newstate();
    tap_is(luaM_sysprof_start(bare, &o), PROFILE_SUCCESS, "start on a VM without libraries");
    if (luaL_dostring(bare, "local x = 0 for i = 1, 3e7 do x = x + i % 3 end") != 0)
      lua_pop(bare, 1);
    tap_is(luaM_sysprof_stop(bare), PROFILE_SUCCESS, "stop");
    luaM_sysprof_report(&c);
    tap_ok(c.samples > 0 && sum(&c) == c.samples, "it was sampled, and the counts add up");
    lua_close(bare);
  }

  /* The reference's stream, v2: chosen before start, kept while a profile
  ** runs. A host backtracer's frames are then the samples' host stack:
  ** bare addresses up to a zero, 0x1234 (b4 24) and 0x5678 (f8 ac 01). */
  {
    static const uint8_t host[] = { 0xb4, 0x24, 0xf8, 0xac, 0x01, 0x00 };
    const uint8_t *p, *q;
    uint64_t n = 0, m;
    tap_is(luaM_sysprof_set_format(5), PROFILE_ERRUSE, "set_format(5): PROFILE_ERRUSE");
    tap_is(luaM_sysprof_set_format(LUAM_SYSPROF_V2), PROFILE_SUCCESS, "set_format(V2)");
    luaM_sysprof_set_backtracer(host_backtrace);
    streamlen = 0;
    tap_is(luaM_sysprof_start(L, &o), PROFILE_SUCCESS, "start, v2, with a host backtracer");
    tap_is(luaM_sysprof_set_format(LUAM_SYSPROF_V3), PROFILE_ERRRUN,
	   "set_format while a profile runs: PROFILE_ERRRUN");
    spin(L, 100, samples_outside_traces);
    tap_is(luaM_sysprof_stop(L), PROFILE_SUCCESS, "stop");
    luaM_sysprof_report(&c);
    p = memmem(stream, streamlen, "ljp\2\0\0\0", 7);
    tap_ok(p != NULL && memmem(stream, streamlen, "ljp\3\0\0\0", 7) == NULL,
	   "the stream is ljp v2");
    for (q = p; q != NULL; q++, n++)
      if ((q = memmem(q, streamlen - (size_t)(q - stream), host, sizeof(host))) == NULL)
	break;
    m = c.samples - c.vmst_trace;  /* A trace's sample is the trace alone. */
    if (!tap_ok(m >= 100 && n >= m * 9 / 10 && n <= m,
		"nearly every sample but a trace's ends with the backtracer's frames, bare"))
      printf("#   %llu of %llu\n", (unsigned long long)n, (unsigned long long)m);
    luaM_sysprof_set_backtracer(NULL);
    tap_is(luaM_sysprof_set_format(LUAM_SYSPROF_V3), PROFILE_SUCCESS, "set_format(V3)");
    streamlen = 0;
    luaM_sysprof_start(L, &o);
    luaM_sysprof_stop(L);
    tap_ok(memmem(stream, streamlen, "ljp\3\0\0\0", 7) != NULL, "the next stream is v3 again");
  }

  /* fork() with set_follow: the child starts a profile of its own into
  ** PATH.PID, complete at its stop; the host's callbacks stay the parent's. */
  if (tap_emulated()) {
    tap_skip(8, "qemu-user aborts a forked child that starts a thread");
  } else {
    char path[] = "/tmp/capi_follow_XXXXXX", child[64], cmd[128];
    pid_t pid;
    int status = -1, fd = mkstemp(path);
    close(fd);
    tap_is(luaM_sysprof_set_follow(""), PROFILE_ERRUSE, "set_follow(\"\"): PROFILE_ERRUSE");
    tap_is(luaM_sysprof_set_follow(path), PROFILE_SUCCESS, "set_follow(path)");
    tap_is(luaM_sysprof_start(L, &o), PROFILE_SUCCESS, "start, following forks");
    tap_is(luaM_sysprof_set_follow(NULL), PROFILE_ERRRUN,
	   "set_follow while a profile runs: PROFILE_ERRRUN");
    fflush(stdout);
    if ((pid = fork()) == 0) {
      int had = stops;
      (void)luaL_dostring(L, "local t = {} for i = 1, 200000 do t[i] = { i } end");
      _exit(luaM_sysprof_stop(L) == PROFILE_SUCCESS && stops == had ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "the child stopped a profile of its own; the host's on_stop was not called");
    tap_is(luaM_sysprof_stop(L), PROFILE_SUCCESS, "the parent stops its profile");
    tap_is(luaM_sysprof_set_follow(NULL), PROFILE_SUCCESS, "set_follow(NULL)");
    snprintf(child, sizeof(child), "%s.%ld", path, (long)pid);
    snprintf(cmd, sizeof(cmd), "ljprof report %s >/dev/null", child);
    tap_is(system(cmd), 0, "the child's stream, PATH.PID, reads back complete");
    remove(child);
    remove(path);
  }

  /* lua_close with a profile running completes the stream. */
  free(stream);
  stream = NULL;
  streamlen = 0;
  tap_is(luaM_sysprof_start(L, &o), PROFILE_SUCCESS, "start, then lua_close");
  spin(L, 10, all_samples);
  before = stops;
  lua_close(L);
  tap_is(stops, before + 1, "lua_close called on_stop");
  tap_is(stream[streamlen-1], 0x80, "the stream ends with the epilogue");
  free(stream);
  return tap_done();
}
