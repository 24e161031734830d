/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The control page of a VM armed for `ljprof record --pid` (LJPROF=ondemand):
** a small file of shared memory that the VM maps and the recorder writes a
** command into. No signal is needed, so a host that owns every signal
** (nginx) is left alone; the file's mode (0600, the process's user's)
** decides who may command the process. Plain C: the reader includes it.
*/

#ifndef _LJ_PROFCTL_H
#define _LJ_PROFCTL_H

#include <stdint.h>

/* /dev/shm/ljprof-PID-N: N is the VM's number in the process. */
#define LJP_CTL_DIR	"/dev/shm"
#define LJP_CTL_PREFIX	"ljprof-"

#define LJP_CTL_MAGIC	0x4350504cu	/* "LPPC" read as bytes. */
#define LJP_CTL_VERSION	1

#define LJP_CTL_ARGLEN	2048
#define LJP_CTL_REPLYLEN	4096

/* Commands. */
enum {
  LJP_CTL_START = 1,	/* Start the profiles of arg (LJPROF's syntax). */
  LJP_CTL_STOP		/* Take the snapshot of arg, if any; stop what the
			** last start started. */
};

/* Outcomes. */
enum {
  LJP_CTL_OK,		/* reply: a stream's path a line. */
  LJP_CTL_FAILED	/* reply: why, one line. */
};

/* Words written by one side and read by the other are 32-bit and aligned:
** the recorder waits on done, the VM's thread on request (futexes). */
typedef struct LJPControl {
  uint32_t magic, version;
  int32_t pid, vmno;	/* Whose page this is. */
  int32_t holder;	/* The recorder's pid while one holds it; else 0. */
  uint32_t request;	/* Bumped by the recorder once cmd and arg are set. */
  uint32_t done;	/* Set to request by the VM once it has acted. */
  int32_t cmd;
  int32_t status;
  char arg[LJP_CTL_ARGLEN];
  char reply[LJP_CTL_REPLYLEN];
} LJPControl;

#ifdef LUA_CORE
/* -- The VM's side (lj_profctl.c) ------------------------------------------ */

#include <pthread.h>
#include <stdatomic.h>

typedef struct ProfCtl {
  LJPControl *page;	/* NULL: not armed. */
  char path[64];
  pthread_t watcher;	/* Waits for requests, and pokes the VM. */
  atomic_int quit;
  void (*poke)(void *ud);
  void *ud;
  uint32_t taken;	/* The request being answered. */
} ProfCtl;

/* Make the page of VM number vmno and its watcher: 0, or an errno. */
int lj_profctl_open(ProfCtl *c, int vmno, void (*poke)(void *), void *ud);
/* Stop the watcher, remove the page. */
void lj_profctl_close(ProfCtl *c);
/* In a forked child: drop the parent's page, remove nothing. */
void lj_profctl_forget(ProfCtl *c);
/* A command not answered yet: 1, with its arg (LJP_CTL_ARGLEN bytes). */
int lj_profctl_take(ProfCtl *c, int *cmd, char *arg);
void lj_profctl_answer(ProfCtl *c, int status, const char *reply);
#endif

#endif
