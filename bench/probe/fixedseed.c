/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Preloaded by bench/idle.lua: the seed of LuaJIT's PRNG (getrandom,
** through syscall()) the same every run. It drives the string hashes, the
** allocator's mmap hints and the JIT's penalties: from run to run of one
** binary they moved callgrind's counts by up to 2.5% (alloc_tree) and
** more (cpu_fib's traces). With it, the counts repeat exactly.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>

long syscall(long n, ...)
{
  static long (*next)(long, ...);
  long a[6];
  va_list ap;
  int i;
  va_start(ap, n);
  for (i = 0; i < 6; i++)
    a[i] = va_arg(ap, long);
  va_end(ap);
  if (n == SYS_getrandom) {
    unsigned char *p = (unsigned char *)a[0];
    size_t len = (size_t)a[1];
    for (i = 0; (size_t)i < len; i++)
      p[i] = (unsigned char)(0x5b + 37*i);
    return (long)len;
  }
  if (next == NULL)
    next = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  return next(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
