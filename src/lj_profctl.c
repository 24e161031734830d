/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The control page of a VM armed for ljprof record --pid: made, watched by
** a thread of ours, answered at the VM's safe points, removed.
*/

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#define lj_profctl_c
#define LUA_CORE

#include "lj_profctl.h"
#include "lj_profhost.h"

/* -- Shared words --------------------------------------------------------- */

/* The page is shared with another process: its words are read and written
** as atomics, and waited on with process-shared futexes (no _PRIVATE). */
#define CTL_WORD(p)	((_Atomic uint32_t *)(void *)(p))

static void ctl_wait(uint32_t *word, uint32_t seen)
{
  syscall(SYS_futex, word, FUTEX_WAIT, seen, NULL, NULL, 0);
}

static void ctl_wake(uint32_t *word)
{
  syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* -- The watcher ---------------------------------------------------------- */

/* Sleeps until the recorder bumps request, then brings the VM's safe point
** forward (as a signal would). Told to quit by a bump of the VM's own.
** What it has poked for starts at what the VM answered, not at request: a
** recorder may send its command before this thread first runs (the page
** is ready as soon as it exists), and that one must be poked for too. */
static void *ctl_watch(void *arg)
{
  ProfCtl *c = (ProfCtl *)arg;
  uint32_t poked = atomic_load(CTL_WORD(&c->page->done));
  for (;;) {
    uint32_t r = atomic_load(CTL_WORD(&c->page->request));
    if (atomic_load(&c->quit))
      return NULL;
    if (r != poked) {
      poked = r;
      c->poke(c->ud);
    }
    ctl_wait(&c->page->request, r);
  }
}

/* -- Page ----------------------------------------------------------------- */

/* A page left by a process of this pid that was killed is ours to replace:
** the pid is ours now. One of another user's stays, and we go unarmed. */
static int ctl_create(const char *path)
{
  int fd = open(path, O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST && unlink(path) == 0)
    fd = open(path, O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600);
  if (fd >= 0 && (fchmod(fd, 0600) != 0 ||
		  ftruncate(fd, (off_t)sizeof(LJPControl)) != 0)) {
    int err = errno;
    close(fd);
    unlink(path);
    errno = err;
    return -1;
  }
  return fd;
}

int lj_profctl_open(ProfCtl *c, int vmno, void (*poke)(void *), void *ud)
{
  LJPControl *page;
  int fd, err;
  snprintf(c->path, sizeof(c->path), LJP_CTL_DIR "/" LJP_CTL_PREFIX "%ld-%d",
	   (long)getpid(), vmno);
  if ((fd = ctl_create(c->path)) < 0)
    return errno;
  page = (LJPControl *)mmap(NULL, sizeof(LJPControl), PROT_READ|PROT_WRITE,
			    MAP_SHARED, fd, 0);
  err = errno;
  close(fd);
  if (page == MAP_FAILED) {
    unlink(c->path);
    return err;
  }
  page->version = LJP_CTL_VERSION;
  page->pid = (int32_t)getpid();
  page->vmno = vmno;
  atomic_store(CTL_WORD(&page->magic), LJP_CTL_MAGIC);  /* Ready. */
  c->page = page;
  c->poke = poke;
  c->ud = ud;
  atomic_store(&c->quit, 0);
  if ((err = lj_profhost_thread(&c->watcher, ctl_watch, c)) != 0) {
    lj_profctl_forget(c);
    unlink(c->path);
    return err;
  }
  return 0;
}

void lj_profctl_close(ProfCtl *c)
{
  if (c->page == NULL)
    return;
  atomic_store(&c->quit, 1);
  atomic_fetch_add(CTL_WORD(&c->page->request), 1);  /* Never slept through. */
  ctl_wake(&c->page->request);
  pthread_join(c->watcher, NULL);
  unlink(c->path);  /* A recorder that holds it sees it go. */
  lj_profctl_forget(c);
}

/* A forked child: the page and its watcher are the parent's. */
void lj_profctl_forget(ProfCtl *c)
{
  if (c->page != NULL)
    munmap(c->page, sizeof(LJPControl));
  c->page = NULL;
}

/* -- Commands ------------------------------------------------------------- */

int lj_profctl_take(ProfCtl *c, int *cmd, char *arg)
{
  LJPControl *page = c->page;
  uint32_t r;
  if (page == NULL)
    return 0;
  r = atomic_load(CTL_WORD(&page->request));
  if (r == atomic_load(CTL_WORD(&page->done)))
    return 0;
  c->taken = r;
  *cmd = page->cmd;
  memcpy(arg, page->arg, LJP_CTL_ARGLEN);
  arg[LJP_CTL_ARGLEN-1] = '\0';
  return 1;
}

void lj_profctl_answer(ProfCtl *c, int status, const char *reply)
{
  LJPControl *page = c->page;
  page->status = status;
  snprintf(page->reply, sizeof(page->reply), "%s", reply);
  atomic_store(CTL_WORD(&page->done), c->taken);
  ctl_wake(&page->done);
}
