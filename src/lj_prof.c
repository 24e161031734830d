/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** What the VM tells its profilers, and the guards a profile sets at fork()
** and exit().
*/

#define lj_prof_c
#define LUA_CORE

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lj_prof.h"
#include "lj_dispatch.h"
#include "lj_memprof.h"
#include "lj_sysprof.h"
#include "lj_symtab.h"
#include "lj_profenv.h"
#include "lj_proffile.h"
#include "lj_perfmap.h"

void lj_prof_addproto(global_State *g, const GCproto *pt)
{
  lj_memprof_addproto(g, pt);
  lj_sysprof_addproto(g, pt);
}

#if LJ_HASJIT
void lj_prof_addtrace(global_State *g, const struct GCtrace *T)
{
  lj_memprof_addtrace(g, T);
  lj_sysprof_addtrace(g, T);
  lj_perfmap_addtrace(g, T);
}
#endif

void lj_prof_newstate(lua_State *L)
{
  lj_profenv_perfmap(G(L));
  lj_profenv_open(L);
}

void lj_prof_statewatch(global_State *g, int on)
{
  if (on) {
    /* The innermost frame known of the coroutine the samplers walk; the
    ** next call or return corrects it. */
    lua_State *L = gco2th(gcref(g->cur_L));
    if (g->prof.statewatch++ == 0 && L != NULL)
      setmref(g->prof.vmbase, L->base);
  } else {
    g->prof.statewatch--;
  }
  lj_dispatch_profupdate(g);
}

void lj_prof_close(global_State *g)
{
  lj_profenv_close(g);
  lj_memprof_close(g);
  lj_sysprof_close(g);
}

/* A profile belongs to the process that started it: its threads, timer
** and stream stayed with the parent. Those that follow forks start anew
** in the child, from what lj_profenv_forking kept before the fork. */
static void prof_forked(void)
{
  lj_profenv_follow();
  lj_memprof_forked();
  lj_sysprof_forked();
  lj_symtab_forked();
}

static void prof_atfork(void)
{
  pthread_atfork(lj_profenv_forking, NULL, prof_forked);
}

void lj_prof_forkguard(void)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, prof_atfork);
}

int lj_prof_followpath(char *out, const char *path)
{
  size_t n = 0;
  if (path[0] != '/') {
    if (getcwd(out, LJ_PROF_FOLLOWMAX - 1) == NULL)
      return 0;
    n = strlen(out);
    out[n++] = '/';
  }
  if (n + strlen(path) >= LJ_PROF_FOLLOWMAX)
    return 0;
  strcpy(out + n, path);
  return 1;
}

/* A program that ends without closing its VMs (os.exit(), exit() in a
** host): the profiles that write to our files complete their streams,
** after LJPROF's snapshots at the end. A host's own writer may be gone by
** then: its profiles are left alone. */
static void prof_fileexit(void *pf)
{
  lj_memprof_exit(pf);
  lj_sysprof_exit(pf);
}

static void prof_atexit(void)
{
  lj_profenv_exit();  /* Its snapshots first: a memory profile marks them. */
  lj_proffile_each(prof_fileexit);
}

static void prof_setexit(void)
{
  atexit(prof_atexit);
}

void lj_prof_exitguard(void)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, prof_setexit);
}
