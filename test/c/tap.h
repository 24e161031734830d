/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** A minimal TAP producer for the C tests run by prove.
*/

#ifndef TEST_TAP_H
#define TEST_TAP_H

#include <stdio.h>

static int tap_count, tap_failed;

static int tap_ok(int pass, const char *name)
{
  tap_count++;
  if (!pass)
    tap_failed++;
  printf("%s %d - %s\n", pass ? "ok" : "not ok", tap_count, name);
  return pass;
}

#define tap_is(got, want, name) do {					\
  long long g_ = (long long)(got), w_ = (long long)(want);		\
  if (!tap_ok(g_ == w_, name))						\
    printf("#   got:  %lld\n#   want: %lld\n", g_, w_);		\
} while (0)

static int tap_done(void)
{
  printf("1..%d\n", tap_count);
  return tap_failed != 0;
}

#endif
