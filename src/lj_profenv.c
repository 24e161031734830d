/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Profiles asked for in the environment:
**
**   LJPROF='cpu[:key=value,...][;mem[:key=value,...]][;heap[:...]]'
**
** read when a VM is created. Each VM gets profiles of its own (the
** profilers take 8 VMs at once; a ninth is not profiled, said once on
** stderr), written to its own files when the paths hold %n. A bad setting
** never breaks the program: one line on stderr, and no profile.
**
** With signal=NAME a profile is armed instead of started: each delivery
** toggles it. With rotate=SECS a running profile ends and a new one
** starts every SECS. The signal handler and the rotation thread only
** count events and bring the next GC step forward; profiles start and
** stop at that step, a safe point on the VM's thread.
**
** heap is no profile that runs but heap snapshots: one at each signal,
** every SECS, or at the end (the VM closing or the process exiting; with
** end=script the script's main chunk returning), at safe points too.
**
** ondemand (implied by signal=) arms the VM for ljprof record --pid: a
** control page of shared memory (lj_profctl.c) takes its commands, what
** to start and where, and its watcher thread brings the next GC step
** forward, as a signal would. A recording takes any kind LJPROF does not
** run at that moment, with settings of its own.
*/

#define lj_profenv_c
#define LUA_CORE

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lj_profenv.h"
#include "lj_memprof.h"
#include "lj_sysprof.h"
#include "lj_proffile.h"
#include "lj_profhost.h"
#include "lj_profnap.h"
#include "lj_profctl.h"
#include "lj_prof.h"
#include "lj_perfmap.h"
#include "lj_heapsnap.h"
#include "lj_profframe.h"
#include "lmisclib.h"

/* -- Settings ------------------------------------------------------------ */

#define ENV_MAXLEN	4096	/* Of LJPROF and of a path. */

enum { PE_CPU, PE_MEM, PE_HEAP, PE__MAX };

/* The profiles that run between a start and a stop: all but heap's. */
#define PE_RUNS		((1 << PE_CPU) | (1 << PE_MEM))

static const char *const pe_names[PE__MAX] = { "cpu", "mem", "heap" };
static const char *const pe_paths[PE__MAX] = {
  "ljprof-cpu-%p.bin", "ljprof-mem-%p.bin", "ljprof-heap-%p.bin"
};

typedef struct EnvSettings {
  int on[PE__MAX];		/* Asked for. */
  int armed[PE__MAX];		/* Waits for the signal. */
  char path[PE__MAX][ENV_MAXLEN];  /* %p, %t and %n not expanded yet. */
  int signo;			/* 0: nothing is armed. */
  const char *signame;
  int rotate[PE__MAX];		/* A new stream every rotsecs. */
  int follow[PE__MAX];		/* A forked child starts its own. */
  unsigned rotsecs;
  SysprofConfig cpu;		/* The CPU profile's options; */
  MemprofConfig mem;		/* the memory profile's; */
  HeapSnapConfig heap;		/* the heap snapshots'. */
  int heapend;			/* A snapshot at the end: HEAPEND_*. */
  int ondemand;			/* Commands from ljprof record --pid. */
} EnvSettings;

static const struct { const char *name; int signo; } env_signals[] = {
  { "SIGUSR1", SIGUSR1 }, { "SIGUSR2", SIGUSR2 }, { "SIGHUP", SIGHUP },
  { "SIGWINCH", SIGWINCH }, { "SIGURG", SIGURG }, { NULL, 0 }
};
#define ENV_NSIGNALS	(sizeof(env_signals)/sizeof(env_signals[0]) - 1)

/* A path's escapes: %p, %t, %n and %%. */
static int env_checkpath(const char *path)
{
  for (; *path; path++)
    if (*path == '%' && (*++path == '\0' || !strchr("ptn%", *path)))
      return 0;
  return 1;
}

/* SIGUSR2 or USR2; -1 for none of ours. */
static int env_signal_byname(const char *name)
{
  int i;
  if (strncmp(name, "SIG", 3) == 0)
    name += 3;
  for (i = 0; env_signals[i].name != NULL; i++)
    if (strcmp(name, env_signals[i].name + 3) == 0)
      return i;
  return -1;
}

/* -- Keys ---------------------------------------------------------------- */

/* A key of a profile: how its value is read, and where it goes. The
** options of the profilers go to their configs as the Lua API's do, and
** their checks have the last word (env_key). */
typedef struct EnvKey {
  const char *name;
  const char *(*read)(EnvSettings *s, int k, const struct EnvKey *key,
		      const char *val);  /* NULL or what is wrong. */
  size_t at;			/* Where it goes: offset in EnvSettings. */
  const char *must;		/* What its value must be. */
  const char *const *names;	/* A choice's words, by value. */
} EnvKey;

#define ENV_AT(field)	offsetof(EnvSettings, field)
#define ENV_INT(s, key)	((int *)((char *)(s) + (key)->at))
#define ENV_U64(s, key)	((uint64_t *)((char *)(s) + (key)->at))

static const char *env_path(EnvSettings *s, int k, const EnvKey *key,
			    const char *val)
{
  if (*val == '\0' || strlen(val) >= ENV_MAXLEN)
    return key->must;
  if (!env_checkpath(val))
    return "path may hold %p, %t, %n and %% only";
  strcpy(s->path[k], val);
  return NULL;
}

static const char *env_followkey(EnvSettings *s, int k, const EnvKey *key,
				 const char *val)
{
  if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
    return key->must;
  s->follow[k] = *val == '1';
  return NULL;
}

static const char *env_signal_key(EnvSettings *s, int k, const EnvKey *key,
				  const char *val)
{
  int i = env_signal_byname(val);
  if (i < 0)
    return key->must;
  if (s->signame != NULL && s->signame != env_signals[i].name)
    return "profiles must name the same signal";
  s->signo = env_signals[i].signo;
  s->signame = env_signals[i].name;
  s->armed[k] = 1;
  return NULL;
}

/* A whole number without sign or leading zero: 1 or more. */
static int env_whole(const char *val, unsigned long long *n)
{
  char *end;
  *n = strtoull(val, &end, 10);
  return *val >= '1' && *val <= '9' && *end == '\0';
}

static const char *env_rotate(EnvSettings *s, int k, const EnvKey *key,
			      const char *val)
{
  unsigned long long secs;
  if (!env_whole(val, &secs) || secs > 31536000)
    return key->must;
  if (s->rotsecs != 0 && s->rotsecs != secs)
    return "profiles must rotate alike (rotate= and every= the same SECS)";
  s->rotsecs = (unsigned)secs;
  s->rotate[k] = 1;
  return NULL;
}

static const char *env_choice(EnvSettings *s, int k, const EnvKey *key,
			      const char *val)
{
  int i;
  UNUSED(k);
  for (i = 0; key->names[i] != NULL; i++)
    if (strcmp(val, key->names[i]) == 0) {
      *ENV_INT(s, key) = i;
      return NULL;
    }
  return key->must;
}

static const char *env_flag(EnvSettings *s, int k, const EnvKey *key,
			    const char *val)
{
  UNUSED(k);
  if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
    return key->must;
  *ENV_INT(s, key) = *val == '1';
  return NULL;
}

static const char *env_bytes(EnvSettings *s, int k, const EnvKey *key,
			     const char *val)
{
  unsigned long long n;
  UNUSED(k);
  if (!env_whole(val, &n))
    return key->must;
  *ENV_U64(s, key) = n;
  return NULL;
}

/* Milliseconds, as the interval's microseconds. */
static const char *env_ms(EnvSettings *s, int k, const EnvKey *key,
			  const char *val)
{
  char *end;
  double ms = strtod(val, &end);
  UNUSED(k);
  if (end == val || *end != '\0')
    return key->must;
  *ENV_U64(s, key) = lj_sysprof_interval(ms);
  return NULL;
}

/* A memory stream's version, as misc.memprof.start's format: v3 to v6. */
static const char *env_format(EnvSettings *s, int k, const EnvKey *key,
			      const char *val)
{
  UNUSED(k);
  if (val[0] != 'v' || val[1] < '3' || val[1] > '6' || val[2] != '\0')
    return key->must;
  s->mem.format = val[1] - '0';
  return NULL;
}

/* The words of a choice, by the value each stands for. */
static const char *const env_modes[] = { "D", "L", "C", NULL };
static const char *const env_clocks[] = { "cpu", "wall", NULL };
LJ_STATIC_ASSERT(LUAM_SYSPROF_DEFAULT == 0 && LUAM_SYSPROF_LEAF == 1 &&
		 LUAM_SYSPROF_CALLGRAPH == 2);
LJ_STATIC_ASSERT(SYSPROF_CLOCK_CPU == 0 && SYSPROF_CLOCK_WALL == 1);

static const EnvKey env_common[] = {
  { "path", env_path, 0, "path must be a file name", NULL },
  { "signal", env_signal_key, 0,
    "signal must be SIGUSR1, SIGUSR2, SIGHUP, SIGWINCH or SIGURG", NULL },
  { "rotate", env_rotate, 0,
    "rotate must be whole seconds, from 1 to 31536000", NULL },
  { NULL, NULL, 0, NULL, NULL }
};

static const EnvKey env_cpukeys[] = {
  { "mode", env_choice, ENV_AT(cpu.mode), "mode must be C, L or D",
    env_modes },
  { "interval", env_ms, ENV_AT(cpu.interval),
    "interval must be milliseconds, from 0.001 to 1000000", NULL },
  { "clock", env_choice, ENV_AT(cpu.clock), "clock must be cpu or wall",
    env_clocks },
  { "jit", env_flag, ENV_AT(cpu.jitev), "jit must be 1 or 0", NULL },
  { "follow", env_followkey, 0, "follow must be 1 or 0", NULL },
  { NULL, NULL, 0, NULL, NULL }
};

static const EnvKey env_memkeys[] = {
  { "stacks", env_flag, ENV_AT(mem.stacks), "stacks must be 1 or 0", NULL },
  { "native", env_flag, ENV_AT(mem.native), "native must be 1 or 0", NULL },
  { "sample", env_bytes, ENV_AT(mem.sample),
    "sample must be whole bytes, from 1 to 2^40", NULL },
  { "stack_budget", env_bytes, ENV_AT(mem.budget),
    "stack_budget must be whole bytes, from 2^20 to 2^40", NULL },
  { "format", env_format, 0, "format must be v3, v4, v5 or v6", NULL },
  { "follow", env_followkey, 0, "follow must be 1 or 0", NULL },
  { NULL, NULL, 0, NULL, NULL }
};

/* The end of a VM (lua_close, exit), and of a script: its main chunk
** returning, found by a return hook that every return the interpreter
** makes calls (bench/README.md: 1.0 to 6.5 times slower), so asked for. */
enum { HEAPEND_NONE, HEAPEND_VM, HEAPEND_SCRIPT };
static const char *const env_ends[] = { "0", "1", "script", NULL };

/* heap's every= is a rotation: a snapshot where a stream would end. */
static const EnvKey env_heapkeys[] = {
  { "every", env_rotate, 0,
    "every must be whole seconds, from 1 to 31536000", NULL },
  { "strings", env_bytes, ENV_AT(heap.strings),
    "strings must be whole bytes, 1 or more", NULL },
  { "end", env_choice, ENV_AT(heapend), "end must be 1, script or 0",
    env_ends },
  { NULL, NULL, 0, NULL, NULL }
};

static const EnvKey *const env_keys[PE__MAX] = {
  env_cpukeys, env_memkeys, env_heapkeys
};

/* Profile k's options as its profiler's check takes them (on a copy: the
** check settles what is implied, and a later key may change it). */
static int env_valid(const EnvSettings *s, int k)
{
  MemprofConfig mem = s->mem;
  return k == PE_CPU ? lj_sysprof_check(&s->cpu) == NULL :
	 k == PE_MEM ? lj_memprof_check(&mem) == NULL : 1;
}

static const EnvKey *env_lookup(const EnvKey *keys, const char *name)
{
  for (; keys->name != NULL; keys++)
    if (strcmp(keys->name, name) == 0)
      return keys;
  return NULL;
}

/* What env_key says of a key it does not know: the caller names it. */
static const char env_unknown[] = "unknown key";

/* One key of profile k; NULL or what is wrong. The value a profiler
** refuses is said in LJPROF's words for the key: no key of LJPROF has a
** rule with another (there is no format key), so the key just read is
** the one at fault. */
static const char *env_key(EnvSettings *s, int k, const char *name,
			   const char *val)
{
  const EnvKey *key = env_lookup(env_common, name);
  const char *why;
  if (key != NULL && k == PE_HEAP && key->read == env_rotate)
    key = NULL;  /* A snapshot is no stream: every=, not rotate=. */
  if (key == NULL && (key = env_lookup(env_keys[k], name)) == NULL)
    return env_unknown;
  if ((why = key->read(s, k, key, val)) == NULL && !env_valid(s, k))
    why = key->must;
  return why;
}

/* One section, "cpu:k=v,..." or "mem:k=v,...", cut in place. */
static int env_section(EnvSettings *s, char *sec, char *msg, size_t sz)
{
  char *opts = strchr(sec, ':'), *kv;
  int k;
  if (opts != NULL)
    *opts++ = '\0';
  if (strcmp(sec, "ondemand") == 0) {
    if (opts != NULL || s->ondemand) {
      snprintf(msg, sz, opts != NULL ? "ondemand takes no keys" :
					"ondemand is given twice");
      return 0;
    }
    return s->ondemand = 1;
  }
  for (k = 0; k < PE__MAX && strcmp(sec, pe_names[k]) != 0; k++) ;
  if (k == PE__MAX) {
    snprintf(msg, sz, "unknown profile '%s' (cpu, mem, heap or ondemand)",
	     sec);
    return 0;
  }
  if (s->on[k]) {
    snprintf(msg, sz, "%s is given twice", sec);
    return 0;
  }
  s->on[k] = 1;
  for (kv = opts; kv != NULL && *kv != '\0'; ) {
    char *next = strchr(kv, ','), *val = strchr(kv, '=');
    const char *why;
    if (next != NULL)
      *next++ = '\0';
    if (val == NULL) {
      snprintf(msg, sz, "%s: '%s' is not key=value", sec, kv);
      return 0;
    }
    *val++ = '\0';
    if ((why = env_key(s, k, kv, val)) == env_unknown) {
      snprintf(msg, sz, "%s: unknown key '%s'", sec, kv);
      return 0;
    } else if (why != NULL) {
      snprintf(msg, sz, "%s: %s, not '%s'", sec, why, val);
      return 0;
    }
    kv = next;
  }
  /* end= not given: with no time asked for, one at the end. */
  if (k == PE_HEAP && s->heapend < 0)
    s->heapend = s->armed[k] || s->rotate[k] ? HEAPEND_NONE : HEAPEND_VM;
  return 1;
}

static int env_parse(EnvSettings *s, const char *env, char *msg, size_t sz)
{
  char buf[ENV_MAXLEN], *sec, *next;
  int k;
  memset(s, 0, sizeof(*s));
  for (k = 0; k < PE__MAX; k++) {
    strcpy(s->path[k], pe_paths[k]);
    s->follow[k] = 1;
  }
  lj_sysprof_defaults(&s->cpu);
  /* A profile nobody asked for in the code is read afterwards, for its
  ** stacks (ljprof report, flame graphs), as `ljprof record --cpu`: mode
  ** C. The default D counts VM states only, for misc.sysprof.report(),
  ** which such a program never calls. */
  s->cpu.mode = LUAM_SYSPROF_CALLGRAPH;
  lj_memprof_defaults(&s->mem);
  s->mem.version = LJM_VERSION;  /* Ours (lj_memprof.h). */
  s->heapend = -1;  /* Not given: env_section settles it. */
  if (strlen(env) >= sizeof(buf)) {
    snprintf(msg, sz, "longer than %d bytes", ENV_MAXLEN-1);
    return 0;
  }
  strcpy(buf, env);
  for (sec = buf; sec != NULL; sec = next) {
    if ((next = strchr(sec, ';')) != NULL)
      *next++ = '\0';
    if (!env_section(s, sec, msg, sz))
      return 0;
  }
  if (s->heapend < 0)  /* No heap section. */
    s->heapend = HEAPEND_NONE;
  /* A VM armed with a signal is armed for ljprof record --pid too: record
  ** never sends a signal, whose handler the host may have taken since. */
  if (s->signo != 0)
    s->ondemand = 1;
  return 1;
}

/* s copied to p, up to end, its '%' kept as such (as "%%"); where it
** stopped. */
static char *env_escape(char *p, const char *end, const char *s)
{
  for (; *s && p < end - 1; s++)
    if ((*p++ = *s) == '%')
      *p++ = '%';
  return p;
}

/* Relative paths against the working directory of now: a server's
** workers, forked later, may have left it. A '%' of the directory's is
** kept as such. */
static int env_absolute(EnvSettings *s, char *msg, size_t sz)
{
  char cwd[ENV_MAXLEN], abs[ENV_MAXLEN];
  int k;
  for (k = 0; k < PE__MAX; k++) {
    char *p = abs, *end = abs + ENV_MAXLEN - 1;
    if (s->path[k][0] == '/')
      continue;
    if (getcwd(cwd, sizeof(cwd)) == NULL) {
      snprintf(msg, sz, "no working directory for %.100s: %s", s->path[k],
	       strerror(errno));
      return 0;
    }
    p = env_escape(p, end, cwd);
    *p++ = '/';
    if (p + strlen(s->path[k]) > end) {
      snprintf(msg, sz, "path longer than %d bytes in %.100s", ENV_MAXLEN-1,
	       cwd);
      return 0;
    }
    strcpy(p, s->path[k]);
    strcpy(s->path[k], abs);
  }
  return 1;
}

/* -- State --------------------------------------------------------------- */

/* The VMs created while LJPROF is set, each with its profiles, as many at
** once as the profilers take. */
#define ENV_VMS		8

enum { NUDGE_NONE, NUDGE_SAVING, NUDGE_SET };

typedef struct EnvVM {
  global_State *g;		/* NULL: a free slot. */
  EnvSettings set;
  int vmno;			/* Its number in the process. */
  int toggled;			/* The armed profiles run. */
  int ended;			/* The snapshot at the end is taken. */
  pthread_t opener;		/* The thread that created the VM. */
  int windows[PE__MAX];		/* Streams (snapshots) of each so far. */
  int follow;			/* Profiles ran at the fork: the child starts
				** them at its first safe point. */
  ProfFile *file[PE__MAX];	/* Writer contexts of the profiles started. */
  uint64_t pathhash[PE__MAX];	/* Their paths': env_taken. */
  int armed;			/* It holds its signal armed. */
  int rotating;			/* Its rotation thread runs. */
  pthread_t rotator;
  ProfNap nap;			/* The rotation thread's, until told to quit. */
  /* Shared with the handler and the rotation thread: events for the next
  ** GC step of polled. The GC threshold is saved (NUDGE_SAVING, then
  ** NUDGE_SET) and set to 0, so that the next allocation takes a step. */
  global_State *_Atomic polled;	/* g, once it takes events. */
  atomic_int toggles, rotations, forks, commands, nudge;
  GCSize threshold;
  ProfCtl ctl;			/* Armed for ljprof record --pid. */
  int demand;			/* The profiles a recording started. */
} EnvVM;

static EnvVM env_vms[ENV_VMS];
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;  /* VMs come
							  ** and go on any thread. */
static int env_nvms;		/* VMs created while LJPROF was set. */
int lj_profenv_npolled;		/* VMs with polled set. */

/* e's VM takes events at its GC steps, or (NULL) no longer: counted, so
** that the steps of every VM skip the search while none does. */
static void env_setpolled(EnvVM *e, global_State *g)
{
  if ((atomic_exchange(&e->polled, g) == NULL) != (g == NULL))
    __atomic_add_fetch(&lj_profenv_npolled, g != NULL ? 1 : -1,
		       __ATOMIC_RELAXED);
}

/* The signals armed, each by how many VMs, and what it did before. */
static struct {
  int vms;
  struct sigaction oldact;
} env_armed[ENV_NSIGNALS];

/* The profiles started in e that may run. */
static int env_running(const EnvVM *e)
{
  return (e->file[PE_CPU] != NULL) << PE_CPU |
	 (e->file[PE_MEM] != NULL) << PE_MEM;
}

/* Profiles as bits: those on whose flag is set. */
static int env_mask(const EnvVM *e, const int *flags)
{
  int k, m = 0;
  for (k = 0; k < PE__MAX; k++)
    if (e->set.on[k] && flags[k])
      m |= 1 << k;
  return m;
}

static int env_child;		/* A forked child of a process that read
				** LJPROF: its paths and messages name it. */

/* The answer to a recording's command, as the VM's thread acting on it
** writes it: what started, and what was said meanwhile. */
static __thread char *env_reply;
static __thread size_t env_replylen;

static void env_answer(const char *fmt, ...)
{
  va_list ap;
  int len;
  if (env_reply == NULL || env_replylen >= LJP_CTL_REPLYLEN - 1)
    return;
  va_start(ap, fmt);
  len = vsnprintf(env_reply + env_replylen,
		  LJP_CTL_REPLYLEN - 1 - env_replylen, fmt, ap);
  va_end(ap);
  if (len > 0)
    env_replylen += (size_t)len;
  if (env_replylen > LJP_CTL_REPLYLEN - 2)
    env_replylen = LJP_CTL_REPLYLEN - 2;  /* Cut short: the newline fits. */
  env_reply[env_replylen++] = '\n';
  env_reply[env_replylen] = '\0';
}

/* A line in one write(2): whole in a log that many processes share (a
** server's workers', each named by its pid), and no stdio lock held that
** a fork by another thread could leave held. */
static void env_say(const char *fmt, ...)
{
  char line[1024];
  size_t n;
  ssize_t w;
  int len;
  va_list ap;
  n = (size_t)(env_child ? sprintf(line, "LJPROF: pid %ld: ", (long)getpid())
			  : sprintf(line, "LJPROF: "));
  va_start(ap, fmt);
  len = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
  va_end(ap);
  if (len > 0)
    n += (size_t)len;
  if (n > sizeof(line)-2)
    n = sizeof(line)-2;  /* Cut short: the newline still fits. */
  env_answer("say %.*s", (int)(n - (sizeof("LJPROF: ")-1)),
	     line + sizeof("LJPROF: ")-1);
  line[n++] = '\n';
  w = write(2, line, n);
  UNUSED(w);  /* Nowhere else to say it. */
}

/* The path of a profile; 0 if too long. Paths stay apart where profiles
** would share one: without %n, the VM's number when asked (another VM of
** the process writes that path: a server reloading holds two), without %p
** a forked child's pid; armed and rotating profiles add their window's. */
static int env_expand(char *out, const char *tpl, int vmno, int window,
		      int apart)
{
  /* Room past end for one escape (20 digits) and three suffixes. */
  char *p = out, *end = out + ENV_MAXLEN - 64;
  int pid = 0, num = 0;
  for (; *tpl && p < end; tpl++) {
    if (*tpl != '%') {
      *p++ = *tpl;
      continue;
    }
    switch (*++tpl) {
    case 'p': p += sprintf(p, "%ld", (long)getpid()); pid = 1; break;
    case 't': p += sprintf(p, "%lld", (long long)time(NULL)); break;
    case 'n': p += sprintf(p, "%d", vmno); num = 1; break;
    default: *p++ = '%'; break;
    }
  }
  if (*tpl)
    return 0;
  if (apart && !num)
    p += sprintf(p, ".%d", vmno);
  if (env_child && !pid)
    p += sprintf(p, ".%ld", (long)getpid());
  if (window > 0)
    p += sprintf(p, ".%d", window);
  *p = '\0';
  return 1;
}

static uint64_t env_hash(const char *s)
{
  uint64_t h = 1469598103934665603ull;  /* FNV-1a. */
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

/* Another VM of the process writes to path now. */
static int env_taken(const EnvVM *e, const char *path)
{
  uint64_t h = env_hash(path);
  int i, k;
  for (i = 0; i < ENV_VMS; i++)
    for (k = 0; k < PE__MAX; k++)
      if (&env_vms[i] != e && env_vms[i].file[k] != NULL &&
	  env_vms[i].pathhash[k] == h)
	return 1;
  return 0;
}

/* Why a profiler refused to start. */
static const char *env_status(int status)
{
  switch (status) {
  case PROFILE_ERRUSE: return "the profiler is not in this build";
  case PROFILE_ERRRUN:
    return "a profile of this kind runs already (in this VM, or in 8 VMs)";
  case PROFILE_ERRMEM: return "not enough memory";
  default: return strerror(errno);
  }
}

/* -- Start and stop ------------------------------------------------------ */

static int env_startone(const EnvSettings *set, lua_State *L, int k,
			ProfFile *pf)
{
  if (k == PE_CPU) {
    SysprofConfig cfg = set->cpu;
    cfg.buf = lj_proffile_buf(pf);
    cfg.len = lj_proffile_bufsize(pf);
    cfg.ctx = pf;
    cfg.writer = lj_proffile_write;
    cfg.on_stop = lj_proffile_close;
    return lj_sysprof_start(L, &cfg);
  } else {
    struct luam_Memprof_Options opt;
    opt.ctx = pf;
    opt.buf = lj_proffile_buf(pf);
    opt.len = lj_proffile_bufsize(pf);
    opt.writer = lj_proffile_write;
    opt.on_stop = lj_proffile_close;
    return lj_memprof_start(L, &opt, &set->mem);
  }
}

/* Start the profiles of mask in e, as set says (LJPROF's, or a
** recording's): all files are opened first, so that an unwritable path
** starts nothing. Armed and rotating profiles number their streams. */
static void env_start(EnvVM *e, const EnvSettings *set, lua_State *L,
		      int mask)
{
  char path[PE__MAX][ENV_MAXLEN];
  ProfFile *pf[PE__MAX] = { NULL, NULL };
  int window[PE__MAX], k;
  for (k = 0; k < PE__MAX; k++) {
    if (!(mask & (1 << k)))
      continue;
    window[k] = set->armed[k] || set->rotate[k] ? e->windows[k]+1 : 0;
    if (!env_expand(path[k], set->path[k], e->vmno, window[k], 0) ||
	(env_taken(e, path[k]) &&
	 !env_expand(path[k], set->path[k], e->vmno, window[k], 1))) {
      env_say("%s path too long; not profiling", pe_names[k]);
      break;
    }
    pf[k] = lj_proffile_open(path[k], k == PE_CPU ? LJ_PROFFILE_SYSBUF :
							LJ_PROFFILE_MEMBUF);
    if (pf[k] == NULL) {
      env_say("cannot write %s: %s; not profiling", path[k], strerror(errno));
      break;
    }
  }
  if (k < PE__MAX) {  /* Nothing starts. */
    while (k-- > 0)
      if (pf[k] != NULL) {
	lj_proffile_close(pf[k], lj_proffile_buf(pf[k]));
	unlink(path[k]);
      }
    return;
  }
  for (k = 0; k < PE__MAX; k++) {
    int status;
    if (pf[k] == NULL)
      continue;
    status = env_startone(set, L, k, pf[k]);
    if (status == PROFILE_SUCCESS) {
      e->file[k] = pf[k];
      e->pathhash[k] = env_hash(path[k]);
      if (window[k] > 0)  /* A recording's leaves LJPROF's count alone. */
	e->windows[k] = window[k];
      lj_prof_exitguard();  /* The program may end without lua_close. */
      env_answer("%s %s", pe_names[k], path[k]);
      continue;
    }
    env_say("%s profile not started: %s", pe_names[k], env_status(status));
    if (status != PROFILE_ERRIO)  /* A refused start leaves the file to us. */
      lj_proffile_close(pf[k], lj_proffile_buf(pf[k]));
    unlink(path[k]);
  }
}

/* Stop the profiles of mask in e, if they still run: the program may have
** stopped them itself. */
static void env_stop(EnvVM *e, int mask)
{
  if ((mask & (1 << PE_CPU))) {
    lj_sysprof_exit(e->file[PE_CPU]);
    e->file[PE_CPU] = NULL;
  }
  if ((mask & (1 << PE_MEM))) {
    lj_memprof_exit(e->file[PE_MEM]);
    e->file[PE_MEM] = NULL;
  }
}

/* -- Heap snapshots ------------------------------------------------------ */

/* A snapshot of L's VM, now, as set says: numbered when signal= or every=
** ask for several, else to the path itself. A failure is said (0); the
** program goes on. */
static int env_snapshot(EnvVM *e, const EnvSettings *set, lua_State *L)
{
  char path[ENV_MAXLEN];
  int window = set->armed[PE_HEAP] || set->rotate[PE_HEAP] ?
	       e->windows[PE_HEAP]+1 : 0;
  int status;
  struct timespec t0, t1;
  if (!env_expand(path, set->path[PE_HEAP], e->vmno, window, 0)) {
    env_say("heap path too long; no snapshot");
    return 0;
  }
  clock_gettime(CLOCK_MONOTONIC, &t0);
  status = lj_heapsnap_file(L, path, &set->heap);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (status != PROFILE_SUCCESS) {
    env_say("heap snapshot %s not written: %s", path, env_status(status));
    return 0;
  }
  if (window > 0)
    e->windows[PE_HEAP] = window;
  /* The VM's pause: what the request under way waited. */
  env_answer("heap %s %lld", path,
	     (long long)(t1.tv_sec - t0.tv_sec) * 1000000000 +
	     (t1.tv_nsec - t0.tv_nsec));
  return 1;
}

/* The slot of g's VM (NULL: a free one). */
static EnvVM *env_of(global_State *g)
{
  int i;
  for (i = 0; i < ENV_VMS; i++)
    if (env_vms[i].g == g)
      return &env_vms[i];
  return NULL;
}

/* The end of `luajit SCRIPT` (end=script): a chunk loaded from a file
** returns to C with no Lua frame below, its locals still held. Each return
** takes the snapshot anew (luajit -l runs modules so before the script);
** lua_close takes it if none did (a host that runs no such chunk, or
** that set a hook of its own in place of this one). */
static void env_rethook(lua_State *L, lua_Debug *ar)
{
  cTValue *frame = L->base - 1, *f;
  GCfunc *fn;
  EnvVM *e;
  UNUSED(ar);
  if (frame_isvarg(frame))  /* A main chunk's frame: where it was called. */
    frame = frame_prevd(frame);
  fn = lj_prof_framefunc(L, frame);
  if (L != mainthread(G(L)) || fn == NULL || !isluafunc(fn) ||
      funcproto(fn)->firstline != 0 ||
      !(frame_isc(frame) || frame_typep(frame) == FRAME_CP) ||
      *strdata(proto_chunkname(funcproto(fn))) != '@')
    return;
  for (f = lj_prof_framebelow(L, frame, 0); f != NULL;
       f = lj_prof_framebelow(L, f, 0))
    if (isluafunc(frame_func(f)))
      return;
  pthread_mutex_lock(&env_lock);  /* Other VMs come and go meanwhile. */
  if ((e = env_of(G(L))) != NULL) {
    env_snapshot(e, &e->set, L);
    e->ended = 1;
  }
  pthread_mutex_unlock(&env_lock);
}

/* -- Signal and rotation ------------------------------------------------- */

/* Count an event for the next GC step of e's VM, and bring that step
** forward. Called in the signal handler: no allocation, no lock. */
static void env_poke(EnvVM *e, atomic_int *events)
{
  global_State *g = atomic_load(&e->polled);
  int none = NUDGE_NONE;
  atomic_fetch_add(events, 1);
  if (g != NULL && atomic_compare_exchange_strong(&e->nudge, &none,
						  NUDGE_SAVING)) {
    e->threshold = g->gc.threshold;
    atomic_store(&e->nudge, NUDGE_SET);
    g->gc.threshold = 0;
  }
}

/* Each VM armed with the signal toggles its profiles. */
static void env_signal(int sig)
{
  int i;
  for (i = 0; i < ENV_VMS; i++) {
    EnvVM *e = &env_vms[i];
    if (atomic_load(&e->polled) != NULL && e->set.signo == sig)
      env_poke(e, &e->toggles);
  }
}

/* The signal of e, armed: by the first VM that asks, unless the program
** handles it; the others share it. */
static int env_arm(EnvVM *e)
{
  int i = env_signal_byname(e->set.signame);
  struct sigaction sa;
  if (env_armed[i].vms == 0) {
    struct sigaction *old = &env_armed[i].oldact;
    if (sigaction(e->set.signo, NULL, old) != 0)
      return 0;
    if (old->sa_handler != SIG_DFL || (old->sa_flags & SA_SIGINFO))
      return 0;  /* The program handles that signal itself. */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = env_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(e->set.signo, &sa, NULL) != 0)
      return 0;
  }
  env_armed[i].vms++;
  e->armed = 1;
  return 1;
}

/* The last VM armed with it gives the signal its former disposition back
** (unless the program has taken the signal since). */
static void env_disarm(EnvVM *e)
{
  int i = env_signal_byname(e->set.signame);
  struct sigaction cur;
  e->armed = 0;
  if (--env_armed[i].vms == 0 && sigaction(e->set.signo, NULL, &cur) == 0 &&
      cur.sa_handler == env_signal)
    sigaction(e->set.signo, &env_armed[i].oldact, NULL);
}

static void *env_rotator(void *arg)
{
  EnvVM *e = (EnvVM *)arg;
  struct timespec at;
  clock_gettime(CLOCK_MONOTONIC, &at);
  for (;;) {
    lj_profnap_after(&at, (uint64_t)e->set.rotsecs * 1000000000u);
    if (!lj_profnap_until(&e->nap, &at))
      return NULL;
    env_poke(e, &e->rotations);
  }
}

static int env_rotate_start(EnvVM *e)
{
  int err;
  lj_profnap_init(&e->nap);
  if ((err = lj_profhost_thread(&e->rotator, env_rotator, e)) != 0) {
    lj_profnap_free(&e->nap);
    errno = err;
    return 0;
  }
  e->rotating = 1;
  return 1;
}

static void env_rotate_stop(EnvVM *e)
{
  lj_profnap_quit(&e->nap);
  pthread_join(e->rotator, NULL);
  lj_profnap_free(&e->nap);
  e->rotating = 0;
}

/* Nothing pokes e's VM any more: its rotation thread is gone, its signal
** disarmed, the GC threshold is the VM's own. */
static void env_quiet(EnvVM *e)
{
  lj_profctl_close(&e->ctl);
  if (e->rotating)
    env_rotate_stop(e);
  if (e->armed)
    env_disarm(e);
  env_setpolled(e, NULL);
  if (atomic_exchange(&e->nudge, NUDGE_NONE) == NUDGE_SET)
    e->g->gc.threshold = e->threshold;
}

/* -- On demand: ljprof record --pid -------------------------------------- */

/* The watcher saw a request: act at the next safe point. */
static void env_commanded(void *ud)
{
  EnvVM *e = (EnvVM *)ud;
  env_poke(e, &e->commands);
}

static int env_arm_demand(EnvVM *e)
{
  int err = lj_profctl_open(&e->ctl, e->vmno, env_commanded, e);
  if (err != 0) {
    env_say("cannot arm for ljprof record: %s/%s%ld-%d: %s", LJP_CTL_DIR,
	    LJP_CTL_PREFIX, (long)getpid(), e->vmno, strerror(err));
    return 0;
  }
  lj_prof_exitguard();  /* Its page goes at exit. */
  return 1;
}

/* A recording's settings, of kinds LJPROF does not name here (those are
** LJPROF's to start and stop). */
static int env_demand_parse(EnvVM *e, const char *arg, EnvSettings *ds)
{
  char msg[256];
  int k;
  if (!env_parse(ds, arg, msg, sizeof(msg)) ||
      !env_absolute(ds, msg, sizeof(msg))) {
    env_answer("say bad command '%.200s': %s", arg, msg);
    return 0;
  }
  if (ds->signo != 0 || ds->rotsecs != 0 || ds->ondemand) {
    env_answer("say a recording takes no signal=, rotate=, every= or ondemand");
    return 0;
  }
  for (k = 0; k < PE__MAX; k++)
    if (ds->on[k] && ((env_running(e) & ~e->demand) & (1 << k))) {
      env_answer("say the %s profile here is LJPROF's (it runs)", pe_names[k]);
      return 0;
    }
  return 1;
}

/* The snapshot ds asks for, if any: nonzero when taken. */
static int env_demand_snapshot(EnvVM *e, lua_State *L, const EnvSettings *ds)
{
  return ds->on[PE_HEAP] && env_snapshot(e, ds, L);
}

/* START: the profiles of arg, from its settings; its snapshot at once.
** Nonzero when anything started. */
static int env_demand_start(EnvVM *e, lua_State *L, const char *arg)
{
  EnvSettings ds;
  int k, m = 0, snap;
  if (!env_demand_parse(e, arg, &ds))
    return 0;
  if (e->demand) {
    env_answer("say a recording's profiles run already");
    return 0;
  }
  for (k = 0; k < PE__MAX; k++)
    if (ds.on[k] && (1 << k) & PE_RUNS)
      m |= 1 << k;
  snap = env_demand_snapshot(e, L, &ds);
  env_start(e, &ds, L, m);  /* LJPROF's settings stay as they are. */
  e->demand = m & env_running(e);
  return e->demand || snap;
}

/* STOP: the snapshot arg asks for first (a memory profile that runs marks
** it, for the join), then the profiles a START started. */
static int env_demand_stop(EnvVM *e, lua_State *L, const char *arg)
{
  EnvSettings ds;
  int ok = 1;
  if (*arg != '\0')
    ok = env_demand_parse(e, arg, &ds) && env_demand_snapshot(e, L, &ds);
  env_stop(e, e->demand & env_running(e));
  e->demand = 0;
  return ok;
}

static void env_command(EnvVM *e, lua_State *L)
{
  char arg[LJP_CTL_ARGLEN], reply[LJP_CTL_REPLYLEN];
  int cmd, ok = 0;
  if (!lj_profctl_take(&e->ctl, &cmd, arg))
    return;
  reply[0] = '\0';
  env_reply = reply;
  env_replylen = 0;
  if (cmd == LJP_CTL_START)
    ok = env_demand_start(e, L, arg);
  else if (cmd == LJP_CTL_STOP)
    ok = env_demand_stop(e, L, arg);
  else
    env_answer("say unknown command %d", cmd);
  env_reply = NULL;
  lj_profctl_answer(&e->ctl, ok ? LJP_CTL_OK : LJP_CTL_FAILED, reply);
}

/* -- fork(): profiles follow ---------------------------------------------- */

/* The child of a fork(): the profilers forgot the parent's profiles there
** (lj_prof.c) and it has no rotation thread. The profiles that ran, or were
** still to start, follow: the child starts its own at its VM's first safe
** point, into files of its own, and rotates again; a child that runs no
** Lua writes nothing. Armed profiles stay armed. */
static void env_forked(void)
{
  int i;
  pthread_mutex_init(&env_lock, NULL);  /* Another thread may have held it. */
  env_child = 1;
  for (i = 0; i < ENV_VMS; i++) {
    EnvVM *e = &env_vms[i];
    if (e->g == NULL)
      continue;
    /* A recording's profiles are its own; follow=0 keeps them here. */
    e->follow |= env_running(e) & ~e->demand & env_mask(e, e->set.follow);
    e->demand = 0;
    lj_profctl_forget(&e->ctl);  /* The child arms its own. */
    memset(e->file, 0, sizeof(e->file));
    memset(e->windows, 0, sizeof(e->windows));
    e->rotating = 0;
    atomic_store(&e->toggles, 0);
    atomic_store(&e->rotations, 0);
    atomic_store(&e->forks, 0);
    /* A poke the fork cut short left the threshold as it was. */
    if (atomic_load(&e->nudge) == NUDGE_SAVING)
      atomic_store(&e->nudge, NUDGE_NONE);
    if (e->follow || e->set.rotsecs || e->set.ondemand) {
      env_setpolled(e, e->g);
      env_poke(e, &e->forks);
    }
  }
}

/* -- fork(): profiles of Lua and C that follow ---------------------------- */

/* A profile started from Lua or C that follows forks (lj_prof.h), as the
** fork found it running. */
typedef struct EnvFollow {
  global_State *g;
  int k;
  SysprofConfig cpu;
  MemprofConfig mem;
  char path[LJ_PROF_FOLLOWMAX];
} EnvFollow;

static EnvFollow env_forking[2*ENV_VMS];  /* A profile of each kind per VM. */
static int env_nforking;

static void env_keep(global_State *g, int k, const SysprofConfig *cpu,
		     const MemprofConfig *mem)
{
  EnvFollow *f = &env_forking[env_nforking++];
  f->g = g;
  f->k = k;
  if (k == PE_CPU) {
    f->cpu = *cpu;
    strcpy(f->path, cpu->follow);
  } else {
    f->mem = *mem;
    strcpy(f->path, mem->follow);
  }
}

/* Before a fork(), in the thread that forks: the profiles to follow, copied
** while the profilers still hold them. */
void lj_profenv_forking(void)
{
  global_State *g;
  SysprofConfig cpu;
  MemprofConfig mem;
  int i, r;
  env_nforking = 0;
  for (i = 0; (r = lj_sysprof_follows(i, &g, &cpu)) >= 0; i++)
    if (r && env_nforking < 2*ENV_VMS)
      env_keep(g, PE_CPU, &cpu, NULL);
  for (i = 0; (r = lj_memprof_follows(i, &g, &mem)) >= 0; i++)
    if (r && env_nforking < 2*ENV_VMS)
      env_keep(g, PE_MEM, NULL, &mem);
}

/* The profile f, LJPROF's from now on in e: its path's '%' kept as such. */
static void env_takeover(EnvVM *e, const EnvFollow *f)
{
  *env_escape(e->set.path[f->k], e->set.path[f->k] + ENV_MAXLEN - 1,
	      f->path) = '\0';
  if (f->k == PE_CPU)
    e->set.cpu = f->cpu;
  else
    e->set.mem = f->mem;
  e->set.cpu.follow = e->set.mem.follow = NULL;  /* LJPROF's rule now. */
  e->set.on[f->k] = e->set.follow[f->k] = 1;
  e->set.armed[f->k] = e->set.rotate[f->k] = 0;
  e->follow |= 1 << f->k;
  env_setpolled(e, e->g);
  env_poke(e, &e->forks);
}

/* The child of a fork(), alone: the VM of each profile that followed takes
** it over, in the slot LJPROF gave it or in a free one, and starts it at
** its first safe point as LJPROF's (env_follow). */
void lj_profenv_follow(void)
{
  int i, k;
  if (env_nforking > 0)  /* Another thread may have held it. */
    pthread_mutex_init(&env_lock, NULL);
  for (i = 0; i < env_nforking; i++) {
    EnvFollow *f = &env_forking[i];
    EnvVM *e = env_of(f->g);
    if (e == NULL && (e = env_of(NULL)) != NULL) {
      memset(e, 0, sizeof(*e));
      e->g = f->g;
      e->vmno = ++env_nvms;
      e->opener = pthread_self();
      for (k = 0; k < PE__MAX; k++)
	strcpy(e->set.path[k], pe_paths[k]);
    }
    env_child = 1;
    if (e == NULL)
      env_say("a %s profile does not follow: the profilers take %d VMs",
	      pe_names[f->k], ENV_VMS);
    else
      env_takeover(e, f);
  }
  env_nforking = 0;
}

static void env_once(void)
{
  pthread_atfork(NULL, NULL, env_forked);
}

/* The child's first safe point. */
static void env_follow(EnvVM *e, lua_State *L)
{
  int m = e->follow & ~env_running(e);
  e->follow = 0;
  env_start(e, &e->set, L, m);
  if (e->set.rotsecs != 0 && !e->rotating && !env_rotate_start(e))
    env_say("cannot rotate: %s", strerror(errno));
  if (e->set.ondemand && e->ctl.page == NULL)
    env_arm_demand(e);
  if (e->set.signo == 0 && e->set.rotsecs == 0 && e->ctl.page == NULL)
    env_setpolled(e, NULL);  /* Nothing more to take. */
}

int lj_profenv_gcstep(lua_State *L)
{
  global_State *g = G(L);
  EnvVM *e = NULL;
  int skip = 0, n, i;
  for (i = 0; i < ENV_VMS && e == NULL; i++)
    if (atomic_load_explicit(&env_vms[i].polled, memory_order_relaxed) == g)
      e = &env_vms[i];
  if (LJ_LIKELY(e == NULL))
    return 0;
  if (atomic_load(&e->nudge) == NUDGE_SET) {
    g->gc.threshold = e->threshold;
    atomic_store(&e->nudge, NUDGE_NONE);
    skip = g->gc.total < g->gc.threshold;
  }
  if ((n = atomic_exchange(&e->toggles, 0)) != 0) {
    /* A recording's profile is the recording's to stop. */
    int armed = env_mask(e, e->set.armed) & PE_RUNS & ~e->demand;
    if ((n & 1) && armed) {  /* Pairs cancel out. */
      if (e->toggled)
	env_stop(e, armed);
      else
	env_start(e, &e->set, L, armed);
      e->toggled = !e->toggled;
    }
    if (e->set.armed[PE_HEAP])  /* Signals met at once: one snapshot. */
      env_snapshot(e, &e->set, L);
  }
  if (atomic_exchange(&e->forks, 0) != 0)
    env_follow(e, L);
  if (atomic_exchange(&e->commands, 0) != 0)
    env_command(e, L);
  if (atomic_exchange(&e->rotations, 0) != 0) {
    int m = env_mask(e, e->set.rotate) & env_running(e) & ~e->demand;
    env_stop(e, m);
    env_start(e, &e->set, L, m);
    if (e->set.rotate[PE_HEAP])
      env_snapshot(e, &e->set, L);
  }
  return skip;
}

/* -- VMs ----------------------------------------------------------------- */

/* The settings are read for every VM: one message per process is enough. */
static void env_open(lua_State *L, const char *s)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  static int said;
  char msg[256];
  EnvSettings set;
  EnvVM *e;
  int vmno = ++env_nvms;
  if (!env_parse(&set, s, msg, sizeof(msg)) ||
      !env_absolute(&set, msg, sizeof(msg))) {
    if (!said++)  /* A log line quotes no more than a screen's width. */
      env_say("bad setting '%.120s%s': %s; not profiling", s,
	      strlen(s) > 120 ? "..." : "", msg);
    return;
  }
  if ((e = env_of(NULL)) == NULL) {
    if (!said++)
      env_say("VM %d is not profiled: the profilers take %d VMs at once",
	      vmno, ENV_VMS);
    return;
  }
  e->g = G(L);
  e->set = set;
  e->vmno = vmno;
  e->toggled = e->ended = e->follow = e->demand = 0;
  atomic_store(&e->forks, 0);
  atomic_store(&e->commands, 0);
  e->opener = pthread_self();
  memset(e->windows, 0, sizeof(e->windows));
  memset(e->file, 0, sizeof(e->file));
  pthread_once(&once, env_once);
  if (set.signo != 0 || set.rotsecs != 0 || set.ondemand)
    env_setpolled(e, G(L));
  if (set.ondemand)
    env_arm_demand(e);
  if (set.signo != 0 && !env_arm(e)) {
    env_say("cannot arm %s: the program handles it; not profiling",
	    set.signame);
  } else {
    env_start(e, &e->set, L,
	      env_mask(e, set.on) & ~env_mask(e, set.armed) & PE_RUNS);
    /* The first period starts with the profiles it ends: their start
    ** may take a while (the symbols of every object; slower emulated). */
    if (set.rotsecs == 0 || env_rotate_start(e)) {
      if (set.heapend == HEAPEND_SCRIPT)
	lua_sethook(L, env_rethook, LUA_MASKRET, 0);
      if (set.heapend)
	lj_prof_exitguard();  /* os.exit(): no return, no lua_close. */
      return;
    }
    env_say("cannot rotate: %s; not profiling", strerror(errno));
    env_stop(e, env_running(e));
  }
  env_quiet(e);
  e->g = NULL;
}

void lj_profenv_open(lua_State *L)
{
  const char *s = getenv("LJPROF");
  if (s == NULL || *s == '\0')
    return;
  pthread_mutex_lock(&env_lock);
  env_open(L, s);
  pthread_mutex_unlock(&env_lock);
}

void lj_profenv_close(global_State *g)
{
  int i;
  pthread_mutex_lock(&env_lock);
  for (i = 0; i < ENV_VMS; i++)
    if (env_vms[i].g == g) {
      if (env_vms[i].set.heapend && !env_vms[i].ended)
	env_snapshot(&env_vms[i], &env_vms[i].set, mainthread(g));
      env_quiet(&env_vms[i]);
      env_vms[i].g = NULL;  /* lj_prof_close stops the profiles next. */
    }
  pthread_mutex_unlock(&env_lock);
}

/* The process exits without closing its VMs (os.exit()): the snapshots at
** the end of those exiting on the thread that created them. That thread
** runs no Lua code (a C function called exit), or none of that VM: a safe
** point. A VM of another thread may be running: it is left alone. */
void lj_profenv_exit(void)
{
  int i;
  pthread_mutex_lock(&env_lock);
  for (i = 0; i < ENV_VMS; i++) {
    EnvVM *e = &env_vms[i];
    if (e->g != NULL && e->set.heapend && !e->ended &&
	pthread_equal(e->opener, pthread_self())) {
      env_snapshot(e, &e->set, mainthread(e->g));
      e->ended = 1;
    }
    lj_profctl_close(&e->ctl);  /* No recorder waits for a VM gone. */
  }
  pthread_mutex_unlock(&env_lock);
}

/* -- LJPROF_PERFMAP ------------------------------------------------------ */

/* 1: the perf map from the start. Other values change nothing: a setting
** never breaks the host. */
void lj_profenv_perfmap(global_State *g)
{
  const char *s = getenv("LJPROF_PERFMAP");
  if (s != NULL && strcmp(s, "1") == 0)
    lj_perfmap_set(g, 1);
}
