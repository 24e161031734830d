/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Linux perf map: names of the VM's code for profilers outside the process.
**
** perf, and the profilers that follow its convention, name code that no
** file backs by /tmp/perf-PID.map: a line `START SIZE name` per piece of
** code, START and SIZE in hex without 0x. One map per process, shared by
** its VMs; lines are added as traces are saved, from the thread of the
** VM that compiled them: a lock serializes VMs of different threads.
*/

#define lj_perfmap_c
#define LUA_CORE

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "lj_obj.h"
#include "lj_debug.h"
#if LJ_HASJIT
#include "lj_jit.h"
#endif
#include "lj_proftrace.h"
#include "lj_profunwind.h"
#include "lj_perfmap.h"
#include "lmisclib.h"

static struct {
  pthread_mutex_t lock;
  int fd;	/* -1: off. */
  pid_t pid;	/* The process the open map is named for. */
} perfmap = { PTHREAD_MUTEX_INITIALIZER, -1, 0 };

/* -- Lines --------------------------------------------------------------- */

static void perfmap_line(uintptr_t start, size_t size, const char *name)
{
  char line[64 + 256];  /* Names are shorter than 256 bytes. */
  int n = snprintf(line, sizeof(line), "%lx %lx %s\n",
		   (unsigned long)start, (unsigned long)size, name);
  ssize_t w = write(perfmap.fd, line, (size_t)n);  /* Lines never mix. */
  UNUSED(w);  /* A map that cannot be written names nothing: no remedy. */
}

#if LJ_HASJIT
/* `TRACE n @file:line`, where the trace starts; a chunk name's control
** characters (load(string) has newlines) become spaces. */
static void perfmap_trace(void *ud, const GCtrace *T)
{
  GCproto *pt = &gcref(T->startpt)->pt;
  BCLine line = lj_debug_line(pt, proto_bcpos(pt, mref(T->startpc,
							  const BCIns)));
  char name[256], *p;
  UNUSED(ud);
  snprintf(name, sizeof(name), "TRACE %u %.200s:%d", (unsigned)T->traceno,
	   strdata(proto_chunkname(pt)), (int)line);
  for (p = name; *p; p++)
    if ((unsigned char)*p < ' ')
      *p = ' ';
  perfmap_line((uintptr_t)T->mcode, T->szmcode, name);
}
#endif

/* The map of this process, anew, with the code that exists now. */
static int perfmap_open(global_State *g)
{
  char path[64];
  uintptr_t lo, hi;
  if (perfmap.fd >= 0)
    close(perfmap.fd);  /* The parent's map, in a fork's child. */
  perfmap.pid = getpid();
  snprintf(path, sizeof(path), "/tmp/perf-%ld.map", (long)perfmap.pid);
  perfmap.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND |
			  O_CLOEXEC, 0644);
  if (perfmap.fd < 0)
    return PROFILE_ERRIO;
  if (lj_profunwind_vmcode(&lo, &hi))
    perfmap_line(lo, hi - lo, "luajit interpreter");
#if LJ_HASJIT
  lj_proftrace_each(g, perfmap_trace, NULL);
#else
  UNUSED(g);
#endif
  return PROFILE_SUCCESS;
}

/* -- On and off ---------------------------------------------------------- */

/* In a fork's child, a thread of the parent may have held the lock. */
static void perfmap_forked(void)
{
  pthread_mutex_init(&perfmap.lock, NULL);
}

static void perfmap_atfork(void)
{
  pthread_atfork(NULL, NULL, perfmap_forked);
}

int lj_perfmap_set(global_State *g, int on)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  int status = PROFILE_SUCCESS;
  pthread_once(&once, perfmap_atfork);
  pthread_mutex_lock(&perfmap.lock);
  if (on && (perfmap.fd < 0 || perfmap.pid != getpid())) {
    status = perfmap_open(g);
  } else if (!on && perfmap.fd >= 0) {
    close(perfmap.fd);
    perfmap.fd = -1;
  }
  pthread_mutex_unlock(&perfmap.lock);
  return status;
}

#if LJ_HASJIT
void lj_perfmap_addtrace(global_State *g, const GCtrace *T)
{
  pthread_mutex_lock(&perfmap.lock);
  if (perfmap.fd >= 0) {
    if (perfmap.pid != getpid())
      perfmap_open(g);  /* A fork's child: a map of its own, T in it. */
    else
      perfmap_trace(NULL, T);
  }
  pthread_mutex_unlock(&perfmap.lock);
}
#endif

/* -- Public API ---------------------------------------------------------- */

LUA_API int luaM_perfmap(lua_State *L, int on)
{
  return lj_perfmap_set(G(L), on);
}
