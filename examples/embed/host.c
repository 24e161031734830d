/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** A host program that embeds LuaJIT with two VMs: one builds an order
** book (allocates), the other prices it (computes). It knows nothing of
** profiling: LJPROF in its environment is all it takes.
**
**   host             the VMs one after the other
**   host --together  both VMs alive at once, run by one thread in turn
**   host --threads   each VM run by a thread of its own, at the same time
**
** Each way, each VM has its own profile: a file of its own under %n.
*/
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "lua.h"
#include "lualib.h"
#include "lauxlib.h"

static const char orders_lua[] =
  "local book = {}\n"
  "for i = 1, 200000 do\n"
  "  book[#book + 1] = { id = i, side = i % 2 == 0 and 'buy' or 'sell' }\n"
  "end\n"
  "return #book\n";

static const char pricing_lua[] =
  "local sum = 0\n"
  "for i = 1, 3e7 do\n"
  "  sum = sum + math.sqrt(i) * 1.0001\n"
  "end\n"
  "return sum > 0 and 1 or 0\n";

static lua_State *newvm(void)
{
  lua_State *L = luaL_newstate();
  if (L != NULL)
    luaL_openlibs(L);
  return L;
}

/* Run a chunk named @name; its one result, or -1 on an error. */
static long run(lua_State *L, const char *code, const char *name)
{
  long n;
  if (luaL_loadbuffer(L, code, strlen(code), name) != 0 ||
      lua_pcall(L, 0, 1, 0) != 0) {
    fprintf(stderr, "host: %s\n", lua_tostring(L, -1));
    return -1;
  }
  n = (long)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return n;
}

/* A VM of its own runs one chunk on a thread. The VMs are created in
** turn, so that each has the same number (%n) at every run. */
typedef struct Job {
  const char *code, *name;
  long result;
  int created;
} Job;

static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_created = PTHREAD_COND_INITIALIZER;

static void *job_run(void *arg)
{
  Job *job = (Job *)arg;
  lua_State *L = newvm();
  pthread_mutex_lock(&job_lock);
  job->created = 1;
  pthread_cond_signal(&job_created);
  pthread_mutex_unlock(&job_lock);
  job->result = L != NULL ? run(L, job->code, job->name) : -1;
  if (L != NULL)
    lua_close(L);
  return NULL;
}

static int report(long n, long ok)
{
  printf("orders: %ld, priced: %s\n", n, ok == 1 ? "yes" : "no");
  return n > 0 && ok == 1 ? 0 : 1;
}

static int threads(void)
{
  Job jobs[2] = {
    { orders_lua, "@orders.lua", -1, 0 },
    { pricing_lua, "@pricing.lua", -1, 0 }
  };
  pthread_t t[2];
  int i;
  for (i = 0; i < 2; i++) {
    if (pthread_create(&t[i], NULL, job_run, &jobs[i]) != 0)
      return 1;
    pthread_mutex_lock(&job_lock);
    while (!jobs[i].created)
      pthread_cond_wait(&job_created, &job_lock);
    pthread_mutex_unlock(&job_lock);
  }
  for (i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  return report(jobs[0].result, jobs[1].result);
}

int main(int argc, char **argv)
{
  int together = argc > 1 && strcmp(argv[1], "--together") == 0;
  lua_State *orders, *pricing = NULL;
  long n, ok;
  if (argc > 1 && strcmp(argv[1], "--threads") == 0)
    return threads();
  if ((orders = newvm()) == NULL)
    return 1;
  if (together && (pricing = newvm()) == NULL)
    return 1;
  n = run(orders, orders_lua, "@orders.lua");
  if (!together) {
    lua_close(orders);
    if ((pricing = newvm()) == NULL)
      return 1;
  }
  ok = run(pricing, pricing_lua, "@pricing.lua");
  if (together)
    lua_close(orders);
  lua_close(pricing);
  return report(n, ok);
}
