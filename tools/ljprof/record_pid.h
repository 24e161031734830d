/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** ljprof record --pid: profile a running process armed through LJPROF's
** signal= for a while, then report its streams.
*/
#ifndef LJPROF_RECORD_PID_H
#define LJPROF_RECORD_PID_H

#include <sys/types.h>

#include "report_cli.h"

/* Profiles of which (bit 0 cpu, bit 1 mem; 0: every armed one). */
#define RECORD_PID_CPU 1
#define RECORD_PID_MEM 2

/*
** Toggle the profiles of process pid on, wait seconds, toggle them off,
** then report each stream as `report` does (to report_out, NULL: stdout).
** Returns the exit status: EXIT_OK, EXIT_FAILED (the process is gone, not
** ours, not armed, never reached a safe point; a damaged stream), or
** EXIT_USAGE.
*/
int record_pid(pid_t pid, double seconds, int which, const char *report_out,
               const struct report_options *opt);

#endif
