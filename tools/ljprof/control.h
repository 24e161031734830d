/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The recorder's side of a VM's control page (src/lj_profctl.h): find the
** pages of a process, hold one, send it a command, wait for the answer.
*/
#ifndef LJPROF_CONTROL_H
#define LJPROF_CONTROL_H

#include <stdint.h>
#include <sys/types.h>

#include "lj_profctl.h"

struct control {
  LJPControl *page;
  pid_t pid;
  int vmno;
  uint32_t sent; /* the request of the last command sent */
};

/*
** The VM numbers of pid's pages, at most max, into vmnos: those the
** process itself maps (a page left by a killed process is no VM's).
** Returns how many.
*/
int control_find(pid_t pid, int *vmnos, int max);

/* Map page vmno of pid and hold it for us. Returns 0; CONTROL_NOT_READY
** while the VM is still making it (ask again); else -1, why not written
** into why (the errno's words, or "being recorded by ljprof PID"). */
#define CONTROL_NOT_READY (-2)
int control_hold(struct control *c, pid_t pid, int vmno, char *why,
                 size_t size);

/* Let the page go (and unmap it). */
void control_release(struct control *c);

/* Send cmd with arg (LJPROF's syntax for LJP_CTL_START). */
void control_send(struct control *c, int cmd, const char *arg);

/* Whether the VM has answered the last command: then its status. */
int control_answered(const struct control *c, int *status);

/* The answer's text (lines: "cpu PATH", "mem PATH", "heap PATH NS", "say
** MESSAGE"). */
const char *control_reply(const struct control *c);

#endif
