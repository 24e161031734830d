/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** ljprof record --pid: profile running processes for a while (those armed
** by LJPROF=ondemand and their descendants, or one armed through LJPROF's
** signal=), then report their streams.
*/
#ifndef LJPROF_RECORD_PID_H
#define LJPROF_RECORD_PID_H

#include <sys/types.h>

#include "record_demand.h"
#include "report_cli.h"

/* Profiles of which (bit 0 cpu, bit 1 mem; 0: every armed one). */
#define RECORD_PID_CPU 1
#define RECORD_PID_MEM 2

/*
** Profile pids (and their descendants) for seconds: as req asks where
** they are armed for ljprof record; else, for one process armed through
** signal=, toggle its profiles (of which: bits, 0 every armed one) on and
** off. Then report each kind's streams as `report` does (to report_out,
** NULL: stdout). Returns the exit status: EXIT_OK, EXIT_FAILED (a process
** is gone, not ours, not armed, never reached a safe point; a damaged
** stream), or EXIT_USAGE.
*/
int record_pid(const pid_t *pids, int npids, double seconds,
               const struct demand_request *req, int which,
               const char *report_out, const struct report_options *opt);

#endif
