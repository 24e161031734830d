/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** ljprof record --pid: profile running processes for a while (those armed
** by LJPROF's ondemand or signal=, and their descendants), then report
** their streams.
*/
#ifndef LJPROF_RECORD_PID_H
#define LJPROF_RECORD_PID_H

#include <sys/types.h>

#include "record_demand.h"
#include "report_cli.h"

/*
** Profile pids (and their descendants) for seconds, as req asks, where
** they are armed for ljprof record. Then report each kind's streams as
** `report` does (to report_out, NULL: stdout). Returns the exit status:
** EXIT_OK, EXIT_FAILED (a process is gone, not ours, not armed, never
** reached a safe point; a damaged stream), or EXIT_USAGE.
*/
int record_pid(const pid_t *pids, int npids, double seconds,
               const struct demand_request *req, const char *report_out,
               const struct report_options *opt);

#endif
