/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** A minimal TAP producer for the C tests run by prove.
*/

#ifndef TEST_TAP_H
#define TEST_TAP_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

/* How much slower than a quick idle one this machine is, from
** LJPROF_TIME_SCALE (test/lib/LJProf/Pace.pm sets it for what Perl tests
** run; a slow machine's user may set it for prove), 1 without it. */
static inline double tap_time_scale(void)
{
  const char *s = getenv("LJPROF_TIME_SCALE");
  double f = s != NULL ? atof(s) : 1.0;
  return f >= 1.0 ? f : 1.0;
}

static inline double tap_now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Tests wait for what they need, never for a time: tap_wait_until runs
** step(ctx) until have(ctx) reaches want, at any machine speed. A deadline
** of secs seconds (scaled by tap_time_scale) catches a count that never
** comes: it is said as a diagnostic naming what, and the return is what
** was had, for the test's own assertion to fail on. */
static inline long long tap_wait_until(const char *what, long long want,
				       long long (*have)(void *ctx),
				       void (*step)(void *ctx), void *ctx,
				       double secs)
{
  double end = tap_now() + secs * tap_time_scale();
  long long got;
  while ((got = have(ctx)) < want) {
    if (tap_now() > end) {
      printf("# waited %g s for %lld %s: %lld\n", secs * tap_time_scale(),
	     want, what, got);
      break;
    }
    step(ctx);
  }
  return got;
}

/* n tests not run, and why. */
static inline void tap_skip(int n, const char *why)
{
  while (n-- > 0)
    printf("ok %d # skip %s\n", ++tap_count, why);
}

/* Under qemu-user (LJPROF_CROSS set): it aborts a forked child of a
** threaded process that starts a thread, as a followed profile does. */
static inline int tap_emulated(void)
{
  const char *cross = getenv("LJPROF_CROSS");
  return cross != NULL && *cross != '\0';
}

static int tap_done(void)
{
  printf("1..%d\n", tap_count);
  return tap_failed != 0;
}

#endif
