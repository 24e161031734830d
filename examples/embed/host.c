/*
** A host program that embeds LuaJIT with two VMs: one builds an order
** book (allocates), the other prices it (computes). It knows nothing of
** profiling: LJPROF in its environment is all it takes.
**
**   host             the VMs one after the other: each has its profile
**   host --together  both VMs alive at once: the first one is profiled
*/
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

int main(int argc, char **argv)
{
  int together = argc > 1 && strcmp(argv[1], "--together") == 0;
  lua_State *orders = newvm(), *pricing = NULL;
  long n, ok;
  if (orders == NULL)
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
  printf("orders: %ld, priced: %s\n", n, ok == 1 ? "yes" : "no");
  return n > 0 && ok == 1 ? 0 : 1;
}
