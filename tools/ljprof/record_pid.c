/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** ljprof record --pid: profile running processes for a while.
**
** Processes whose VMs are armed for it (LJPROF with ondemand, or with a
** profile's signal=), and their descendants, are told what to profile
** through their VMs' control pages (record_demand.c). No signal is sent:
** a host (nginx) takes the handlers of signals our library armed, and
** what a process's environment said may be rewritten since (its title).
** Then each kind's streams are reported as one profile, by process.
*/
#include "record_pid.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define CMD "record"

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "ljprof " CMD ": ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return EXIT_FAILED;
}

int record_pid(const pid_t *pids, int npids, double seconds,
               const struct demand_request *req, const char *report_out,
               const struct report_options *opt) {
  for (int i = 0; i < npids; i++)
    if (kill(pids[i], 0) != 0)
      return errno == ESRCH ? fail("no process %d", (int)pids[i])
                            : fail("process %d is not ours: %s", (int)pids[i],
                                   strerror(errno));
  struct paths streams[DEMAND_KINDS] = {{0}};
  int status = record_demand(pids, npids, seconds, req, streams);
  if (status < 0)
    return fail("%s %d%s: no VM armed for ljprof record there: start %s "
                "with LJPROF=ondemand (or a profile's signal=)",
                npids > 1 ? "processes" : "process", (int)pids[0],
                npids > 1 ? ", ..." : "", npids > 1 ? "them" : "it");
  for (int k = DEMAND_CPU; k <= DEMAND_MEM; k++) {
    if (!req->opts[k]) continue;
    /* Every process's streams of a kind: one profile, by process. */
    fflush(stdout);
    int s = streams[k].n
                ? report_files((const char *const *)streams[k].v,
                               streams[k].n, report_out, opt)
                : fail("no %s stream was written", k ? "memory" : "CPU");
    if (s != EXIT_OK) status = s;
  }
  for (int k = 0; k < DEMAND_KINDS; k++) paths_free(&streams[k]);
  return status;
}
