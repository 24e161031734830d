/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Several VMs profiled at once through the C API: each VM has its own
** profiles and streams, on threads of their own or on one thread; a VM
** has one profile of each kind; the profilers take 8 VMs at once; two
** VMs' stack tables grow at the same time.
*/

#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lua.h"
#include "lualib.h"
#include "lauxlib.h"
#include "lmisclib.h"
#include "tap.h"

#define BUFLEN	8192
#define NSLOTS	8

/* A stream collected in memory: the writer's context. */
typedef struct Sink {
  uint8_t buf[BUFLEN];
  uint8_t *data;
  size_t len;
  int stops;
} Sink;

static size_t sink_write(const void **data, size_t len, void *ctx)
{
  Sink *s = (Sink *)ctx;
  s->data = realloc(s->data, s->len + len);
  memcpy(s->data + s->len, *data, len);
  s->len += len;
  return len;
}

static int sink_stop(void *ctx, uint8_t *buf)
{
  (void)buf;
  ((Sink *)ctx)->stops++;
  return 0;
}

static int sink_has(const Sink *s, const char *what)
{
  return memmem(s->data, s->len, what, strlen(what)) != NULL;
}

/* Stopped once, and the stream's last byte is its epilogue. */
static int sink_complete(const Sink *s)
{
  return s->stops == 1 && s->len > 8 && s->data[s->len-1] == 0x80;
}

static void sink_reset(Sink *s)
{
  free(s->data);
  memset(s, 0, sizeof(*s));
}

static int sysprof_start(lua_State *L, Sink *s, uint64_t interval)
{
  struct luam_Sysprof_Options o;
  memset(&o, 0, sizeof(o));
  o.mode = LUAM_SYSPROF_CALLGRAPH;
  o.interval = interval;
  o.buf = s->buf;
  o.len = BUFLEN;
  o.ctx = s;
  return luaM_sysprof_start(L, &o);
}

static int memprof_start(lua_State *L, Sink *s)
{
  struct luam_Memprof_Options o;
  memset(&o, 0, sizeof(o));
  o.buf = s->buf;
  o.len = BUFLEN;
  o.ctx = s;
  o.writer = sink_write;
  o.on_stop = sink_stop;
  return luaM_memprof_start(L, &o);
}

/* Work of its own, in a chunk named after the VM: n times a thousand
** strings (a million: about 0.02 s here). */
static int work(lua_State *L, const char *name, int n)
{
  static const char code[] =
    "local s = {}\n"
    "for _ = 1, ... do\n"
    "  for i = 1, 1000 do s[i % 64] = tostring(i) .. 'x' end\n"
    "end\n";
  char chunk[64];
  snprintf(chunk, sizeof(chunk), "@%s.lua", name);
  if (luaL_loadbuffer(L, code, sizeof(code)-1, chunk) != 0)
    return 0;
  lua_pushinteger(L, n);
  if (lua_pcall(L, 1, 0, 0) != 0) {
    lua_pop(L, 1);
    return 0;
  }
  return 1;
}

static uint64_t sum(const struct luam_Sysprof_Counters *c)
{
  return c->vmst_interp + c->vmst_lfunc + c->vmst_ffunc + c->vmst_cfunc +
	 c->vmst_gc + c->vmst_exit + c->vmst_record + c->vmst_opt +
	 c->vmst_asm + c->vmst_trace;
}

/* One VM on a thread of its own, both profilers on. */
typedef struct Job {
  const char *name;
  int n;			/* Of work(). */
  Sink cpu, mem;
  int started, stopped, worked;
  struct luam_Sysprof_Counters counters;
} Job;

static void *job_run(void *arg)
{
  Job *job = (Job *)arg;
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  job->started = sysprof_start(L, &job->cpu, 1) == PROFILE_SUCCESS &&
		 memprof_start(L, &job->mem) == PROFILE_SUCCESS;
  job->worked = work(L, job->name, job->n);
  job->stopped = luaM_sysprof_stop(L) == PROFILE_SUCCESS &&
		 luaM_memprof_stop(L) == PROFILE_SUCCESS;
  luaM_sysprof_report(&job->counters);  /* Of this thread's VM. */
  lua_close(L);
  return NULL;
}

static void threads(void)
{
  Job jobs[2];
  pthread_t t[2];
  int i;
  memset(jobs, 0, sizeof(jobs));
  jobs[0].name = "alpha";
  jobs[0].n = 2000;
  jobs[1].name = "beta";
  jobs[1].n = 8000;  /* Four times the work: four times the samples. */
  for (i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, job_run, &jobs[i]);
  for (i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  for (i = 0; i < 2; i++) {
    Job *j = &jobs[i], *other = &jobs[1-i];
    char chunk[64], msg[128];
    snprintf(chunk, sizeof(chunk), "%s.lua", j->name);
#define JOB_OK(cond, what) \
    (snprintf(msg, sizeof(msg), "threads, VM %s: %s", j->name, what), \
     tap_ok(cond, msg))
    JOB_OK(j->started && j->worked && j->stopped,
	   "both profiles start and stop while the other VM's run");
    JOB_OK(sink_complete(&j->cpu) && sink_complete(&j->mem),
	   "its streams are complete");
    JOB_OK(sink_has(&j->cpu, chunk) && sink_has(&j->mem, chunk),
	   "its streams name its chunk");
    snprintf(chunk, sizeof(chunk), "%s.lua", other->name);
    JOB_OK(!sink_has(&j->cpu, chunk) && !sink_has(&j->mem, chunk),
	   "and never the other VM's");
    JOB_OK(j->counters.samples > 0 &&
	   sum(&j->counters) == j->counters.samples,
	   "report() on its thread: its VM's counters, which add up");
    sink_reset(&j->cpu);
    sink_reset(&j->mem);
  }
  /* Thread CPU time: the ratio holds however busy the machine is. */
  if (!tap_ok(jobs[1].counters.samples > 2 * jobs[0].counters.samples,
	      "threads: the VM with four times the work has its samples"))
    printf("#   %llu and %llu samples\n",
	   (unsigned long long)jobs[0].counters.samples,
	   (unsigned long long)jobs[1].counters.samples);
}

/* Two VMs on one thread, in turn: each profile is its VM's. */
static void one_thread(void)
{
  lua_State *a = luaL_newstate(), *b = luaL_newstate();
  Sink ca, cb, ma, mb;
  memset(&ca, 0, sizeof(ca)); memset(&cb, 0, sizeof(cb));
  memset(&ma, 0, sizeof(ma)); memset(&mb, 0, sizeof(mb));
  luaL_openlibs(a);
  luaL_openlibs(b);
  tap_is(sysprof_start(a, &ca, 1), PROFILE_SUCCESS,
	 "one thread: sysprof starts in VM a");
  tap_is(sysprof_start(a, &cb, 1), PROFILE_ERRRUN,
	 "a second one in VM a: PROFILE_ERRRUN");
  tap_is(sysprof_start(b, &cb, 1), PROFILE_SUCCESS,
	 "one in VM b: PROFILE_SUCCESS");
  tap_is(memprof_start(a, &ma), PROFILE_SUCCESS, "memprof starts in VM a");
  tap_is(memprof_start(a, &mb), PROFILE_ERRRUN,
	 "a second one in VM a: PROFILE_ERRRUN");
  tap_is(memprof_start(b, &mb), PROFILE_SUCCESS,
	 "one in VM b: PROFILE_SUCCESS");
  tap_ok(work(a, "gamma", 300) && work(b, "delta", 300),
	 "each VM runs its chunk");
  tap_is(luaM_sysprof_stop(a), PROFILE_SUCCESS, "VM a's sysprof stops");
  tap_is(luaM_sysprof_stop(a), PROFILE_ERRRUN, "and is not running any more");
  tap_is(luaM_memprof_stop(b), PROFILE_SUCCESS, "VM b's memprof stops");
  lua_close(b);  /* Its sysprof with it. */
  tap_is(luaM_memprof_stop(a), PROFILE_SUCCESS, "VM a's memprof stops");
  tap_ok(sink_complete(&ca) && sink_complete(&cb) && sink_complete(&ma) &&
	 sink_complete(&mb), "four complete streams");
  tap_ok(sink_has(&ca, "gamma.lua") && !sink_has(&ca, "delta.lua") &&
	 sink_has(&ma, "gamma.lua") && !sink_has(&ma, "delta.lua"),
	 "VM a's streams name its chunk only");
  tap_ok(sink_has(&cb, "delta.lua") && !sink_has(&cb, "gamma.lua") &&
	 sink_has(&mb, "delta.lua") && !sink_has(&mb, "gamma.lua"),
	 "VM b's streams name its chunk only");
  lua_close(a);
  sink_reset(&ca); sink_reset(&cb); sink_reset(&ma); sink_reset(&mb);
}

/* Eight VMs at once; a ninth waits for a free slot. */
static void slots(void)
{
  static Sink cpu[NSLOTS+1], mem[NSLOTS+1];
  lua_State *L[NSLOTS+1];
  int i, cs = 0, ms = 0, stops = 0;
  for (i = 0; i <= NSLOTS; i++)
    L[i] = luaL_newstate();
  for (i = 0; i < NSLOTS; i++) {
    cs += sysprof_start(L[i], &cpu[i], 60000) == PROFILE_SUCCESS;
    ms += memprof_start(L[i], &mem[i]) == PROFILE_SUCCESS;
  }
  tap_is(cs + ms, 2 * NSLOTS, "8 VMs: each starts both profilers");
  tap_is(sysprof_start(L[NSLOTS], &cpu[NSLOTS], 60000), PROFILE_ERRRUN,
	 "a ninth VM's sysprof: PROFILE_ERRRUN");
  tap_is(memprof_start(L[NSLOTS], &mem[NSLOTS]), PROFILE_ERRRUN,
	 "a ninth VM's memprof: PROFILE_ERRRUN");
  stops += luaM_sysprof_stop(L[3]) == PROFILE_SUCCESS;
  stops += luaM_memprof_stop(L[3]) == PROFILE_SUCCESS;
  tap_is(stops, 2, "one VM stops its profiles");
  tap_is(sysprof_start(L[NSLOTS], &cpu[NSLOTS], 60000), PROFILE_SUCCESS,
	 "then the ninth VM's sysprof starts");
  tap_is(memprof_start(L[NSLOTS], &mem[NSLOTS]), PROFILE_SUCCESS,
	 "and its memprof");
  for (i = 0; i <= NSLOTS; i++)
    lua_close(L[i]);
  for (i = 0, cs = 0; i <= NSLOTS; i++) {
    cs += sink_complete(&cpu[i]) && sink_complete(&mem[i]);
    sink_reset(&cpu[i]);
    sink_reset(&mem[i]);
  }
  tap_is(cs, NSLOTS + 1, "lua_close completes every stream");
}

/* The last byte of a file; -1 if it has none. */
static int file_last(const char *path)
{
  FILE *f = fopen(path, "rb");
  int c = -1;
  if (f != NULL) {
    if (fseek(f, -1, SEEK_END) == 0)
      c = fgetc(f);
    fclose(f);
  }
  return c;
}

/* LJPROF: each VM has its file under %n; a ninth alive is not profiled,
** and stderr says so in one line. */
static void environment(void)
{
  char dir[] = "/tmp/capi_vms.XXXXXX", env[64], path[64], line[128] = "";
  lua_State *L[NSLOTS+1];
  FILE *err = tmpfile();
  int saved = dup(2), i, complete = 0;
  if (mkdtemp(dir) == NULL || err == NULL) {
    tap_ok(0, "LJPROF: a directory and a file for the test");
    return;
  }
  snprintf(env, sizeof(env), "mem:path=%s/m-%%n.bin", dir);
  setenv("LJPROF", env, 1);
  dup2(fileno(err), 2);
  for (i = 0; i <= NSLOTS; i++)
    L[i] = luaL_newstate();
  dup2(saved, 2);
  unsetenv("LJPROF");
  for (i = 0; i <= NSLOTS; i++)
    lua_close(L[i]);
  for (i = 1; i <= NSLOTS + 1; i++) {
    snprintf(path, sizeof(path), "%s/m-%d.bin", dir, i);
    complete += file_last(path) == 0x80;
    unlink(path);
  }
  rmdir(dir);
  tap_is(complete, NSLOTS, "LJPROF, 9 VMs alive: 8 complete files under %n");
  rewind(err);
  tap_ok(fgets(line, sizeof(line), err) != NULL &&
	 strcmp(line, "LJPROF: VM 9 is not profiled: the profilers take 8 "
		"VMs at once\n") == 0 && fgetc(err) == EOF,
	 "and one line on stderr says VM 9 is not profiled");
  fclose(err);
}

/* LJPROF's path without %n, two VMs alive (a server reloading its
** configuration): the first writes the path, the second PATH.N (its
** number), never the same file; with the first closed, a third takes the
** path again. */
static void same_path(void)
{
  char dir[] = "/tmp/capi_vms.XXXXXX", env[64], path[64], cmd[96];
  lua_State *a, *b, *c;
  FILE *ls;
  int others = 0, complete = 0;
  if (mkdtemp(dir) == NULL) {
    tap_ok(0, "same path: a directory for the test");
    return;
  }
  snprintf(env, sizeof(env), "mem:path=%s/m.bin", dir);
  setenv("LJPROF", env, 1);
  a = luaL_newstate();
  b = luaL_newstate();
  lua_close(a);
  c = luaL_newstate();
  lua_close(b);
  lua_close(c);
  unsetenv("LJPROF");
  snprintf(path, sizeof(path), "%s/m.bin", dir);
  snprintf(cmd, sizeof(cmd), "ls %s", dir);
  if ((ls = popen(cmd, "r")) != NULL) {
    char name[64];
    while (fgets(name, sizeof(name), ls) != NULL) {
      char file[160];
      name[strcspn(name, "\n")] = '\0';
      snprintf(file, sizeof(file), "%s/%s", dir, name);
      others += strcmp(name, "m.bin") != 0 && strncmp(name, "m.bin.", 6) == 0;
      complete += file_last(file) == 0x80;
      unlink(file);
    }
    pclose(ls);
  }
  rmdir(dir);
  tap_ok(others == 1 && complete == 2,
	 "same path, two VMs alive: PATH and PATH.N, both complete");
}

/* Two VMs whose stack tables grow at once, each on its thread: three
** levels of generated functions, a line each per branch (no tail call),
** reach a table's allocation from GROW_N^3 distinct stacks, beyond the
** tables' first size (64 K slots), in each VM. */
#define GROW_N		50
#define GROW_STACKS	(GROW_N*GROW_N*GROW_N)

static const char grow_code[] =
  "local path, n = ...\n"
  "local function level(callee, var)\n"
  "  local src = { 'local callee = ...', 'return function(i, j, k)' }\n"
  "  for b = 1, n do\n"
  "    src[#src+1] = (b == 1 and 'if ' or 'elseif ') .. var .. ' == ' .. b ..\n"
  "      (callee and ' then local t = callee(i, j, k) return t' or\n"
  "                  ' then return { i }')\n"
  "  end\n"
  "  src[#src+1] = 'end end'\n"
  "  return assert(load(table.concat(src, '\\n'), '=level'))(callee)\n"
  "end\n"
  "local A = level(level(level(nil, 'k'), 'j'), 'i')\n"
  "local keep = {}\n"
  "assert(misc.memprof.start({ path = path, stacks = true }))\n"
  "for i = 1, n do for j = 1, n do for k = 1, n do\n"
  "  keep[k] = A(i, j, k)\n"
  "end end end\n"
  "assert(misc.memprof.stop())\n";

typedef struct GrowJob {
  char path[64];
  int ran;
} GrowJob;

static void *grow_run(void *arg)
{
  GrowJob *job = (GrowJob *)arg;
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  job->ran = luaL_loadbuffer(L, grow_code, sizeof(grow_code)-1, "@grow.lua")
	     == 0;
  lua_pushstring(L, job->path);
  lua_pushinteger(L, GROW_N);
  job->ran = job->ran && lua_pcall(L, 2, 0, 0) == 0;
  if (!job->ran)
    printf("#   %s\n", lua_tostring(L, -1));
  lua_close(L);
  return NULL;
}

/* A number after "key": in ljprof's JSON report of path; -1 if none. */
static long report_number(const char *path, const char *key)
{
  char cmd[160], out[65536], *at;
  size_t len;
  FILE *p;
  snprintf(cmd, sizeof(cmd), "ljprof report --format=json --top=1 '%s' "
	   "2>&1", path);
  if ((p = popen(cmd, "r")) == NULL)
    return -1;
  len = fread(out, 1, sizeof(out) - 1, p);
  out[len] = '\0';
  if (pclose(p) != 0 || (at = strstr(out, key)) == NULL)
    return -1;
  return strtol(at + strlen(key), NULL, 10);
}

static void growing(void)
{
  char dir[] = "/tmp/capi_vms.XXXXXX";
  GrowJob jobs[2];
  pthread_t t[2];
  int i;
  if (mkdtemp(dir) == NULL) {
    tap_ok(0, "growing: a directory for the streams");
    return;
  }
  for (i = 0; i < 2; i++) {
    snprintf(jobs[i].path, sizeof(jobs[i].path), "%s/grow-%d.bin", dir, i);
    pthread_create(&t[i], NULL, grow_run, &jobs[i]);
  }
  for (i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  for (i = 0; i < 2; i++) {
    long distinct = report_number(jobs[i].path, "\"distinct\": ");
    long full = report_number(jobs[i].path, "\"table_full_events\": ");
    char msg[128];
    snprintf(msg, sizeof(msg), "growing, VM %d: ran with stacks on", i);
    tap_ok(jobs[i].ran, msg);
    snprintf(msg, sizeof(msg), "growing, VM %d: its %d distinct stacks all "
	     "kept (%ld), none lost to a full table (%ld)", i, GROW_STACKS,
	     distinct, full);
    tap_ok(distinct >= GROW_STACKS && full == 0, msg);
    unlink(jobs[i].path);
  }
  rmdir(dir);
}

/* LJPROF armed with a signal in two VMs on threads of their own: one
** delivery starts both VMs' profiles, the next stops them. */
static atomic_int armed_run, armed_ready;

static int armed_running(lua_State *L)
{
  lua_pushboolean(L, atomic_load(&armed_run));
  return 1;
}

static void *armed_job(void *arg)
{
  lua_State *L = luaL_newstate();  /* Armed: the signal is ours now. */
  (void)arg;
  atomic_fetch_add(&armed_ready, 1);
  luaL_openlibs(L);
  lua_register(L, "running", armed_running);
  if (luaL_dostring(L, "local s = {} while running() do "
		       "for i = 1, 100 do s[i] = tostring(i) .. 'x' end end") != 0)
    lua_pop(L, 1);
  lua_close(L);
  return NULL;
}

static void nap_ms(long ms)
{
  struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };
  nanosleep(&t, NULL);
}

/* Until the files of VMs 10 and 11 (after the 9 of environment()) exist,
** 10 s at most on a quick machine. */
static int armed_files(const char *dir, const char *suffix)
{
  char path[64];
  int n, tries;
  for (tries = 0; tries < 1000 * tap_time_scale(); tries++, nap_ms(10)) {
    for (n = 10; n <= 11; n++) {
      snprintf(path, sizeof(path), "%s/c-%d.bin%s", dir, n, suffix);
      if (access(path, F_OK) != 0)
	break;
    }
    if (n > 11)
      return 1;
  }
  return 0;
}

static void armed(void)
{
  char dir[] = "/tmp/capi_vms.XXXXXX", env[160], path[64];
  pthread_t t[2];
  struct sigaction sa;
  int i, n, complete = 0, more = 0;
  if (mkdtemp(dir) == NULL) {
    tap_ok(0, "armed: a directory for the test");
    return;
  }
  snprintf(env, sizeof(env), "cpu:signal=SIGUSR2,interval=1,path=%s/c-%%n.bin;"
	   "mem:signal=SIGUSR2,path=%s/m-%%n.bin", dir, dir);
  setenv("LJPROF", env, 1);
  atomic_store(&armed_run, 1);
  for (i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, armed_job, NULL);
  while (atomic_load(&armed_ready) < 2)
    nap_ms(10);
  kill(getpid(), SIGUSR2);  /* Both start, */
  tap_ok(armed_files(dir, ".1"), "armed, 2 VMs: a signal starts both");
  nap_ms(200);
  kill(getpid(), SIGUSR2);  /* both stop. */
  nap_ms(200);
  atomic_store(&armed_run, 0);
  for (i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  unsetenv("LJPROF");
  for (n = 10; n <= 11; n++) {
    const char *kind[] = { "c", "m" };
    for (i = 0; i < 2; i++) {
      snprintf(path, sizeof(path), "%s/%s-%d.bin.1", dir, kind[i], n);
      complete += file_last(path) == 0x80;
      unlink(path);
      snprintf(path, sizeof(path), "%s/%s-%d.bin.2", dir, kind[i], n);
      more += access(path, F_OK) == 0;
      unlink(path);
    }
  }
  rmdir(dir);
  tap_is(complete, 4, "the next stops them: 4 complete streams");
  tap_is(more, 0, "and no second window");
  tap_ok(sigaction(SIGUSR2, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL,
	 "the last VM closed gives SIGUSR2 its former disposition");
}

int main(void)
{
  luaM_sysprof_set_writer(sink_write);
  luaM_sysprof_set_on_stop(sink_stop);
  threads();
  one_thread();
  slots();
  environment();
  growing();
  armed();
  same_path();  /* After armed(), which counts on VMs 10 and 11. */
  return tap_done();
}
