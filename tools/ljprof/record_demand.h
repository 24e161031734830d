/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** ljprof record --pid on processes armed by LJPROF=ondemand, and their
** descendants, through the VMs' control pages: no signal sent.
*/
#ifndef LJPROF_RECORD_DEMAND_H
#define LJPROF_RECORD_DEMAND_H

#include <stddef.h>
#include <sys/types.h>

enum { DEMAND_CPU, DEMAND_MEM, DEMAND_HEAP, DEMAND_KINDS };

struct demand_request {
  /* Of each kind asked for, its LJPROF keys ("mode=C,interval=10"; "" for
  ** none); NULL: not asked. A heap snapshot with cpu or mem is taken at
  ** the end of their window, else at once. */
  const char *opts[DEMAND_KINDS];
  const char *dir; /* of the streams; NULL: a new one under /tmp */
};

/* Streams written, each with the process that wrote it. */
struct paths {
  char **v;
  pid_t *pid;
  size_t n, cap;
};

void paths_add(struct paths *p, const char *path, pid_t pid);
void paths_free(struct paths *p);

/*
** Record the armed VMs of pids and their descendants for seconds (or until
** SIGINT/SIGTERM), what each process says written on stderr. Returns -1
** when none is armed, else the exit status (EXIT_FAILED when a VM refused
** or could not be held); out[kind] gets the streams of each kind.
*/
int record_demand(const pid_t *pids, int npids, double seconds,
                  const struct demand_request *req,
                  struct paths out[DEMAND_KINDS]);

#endif
