/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Profile streams written to a file by a thread of their own.
**
** A file belongs to the process that opened it: a child made by fork()
** has no writer thread, so it forgets the parent's files (closes its copy
** of the descriptor, frees the buffers) and never writes into them.
*/

#define lj_proffile_c
#define LUA_CORE

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "lj_proffile.h"
#include "lj_profhost.h"

struct ProfFile {
  int fd;
  int slot;			/* Index in open_files. */
  int err;			/* First write error; 0 while all is well. */
  int quit;			/* The thread ends once nothing is pending. */
  uint8_t *buf[2];		/* Off the Lua heap: not in any profile. */
  size_t bufsize;
  const uint8_t *pending;	/* Handed to the thread, not yet written. */
  size_t pendlen;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t work;		/* Something is pending, or quit. */
  pthread_cond_t done;		/* Nothing is pending any more. */
};

static void proffile_free(ProfFile *pf)
{
  free(pf->buf[0]);
  free(pf->buf[1]);
  free(pf);
}

/* Files open in this process: a forked child forgets them. A profile of
** each kind per VM (8 of each at most), with room to spare. */
#define MAX_FILES	32
static ProfFile *_Atomic open_files[MAX_FILES];

/* In the child: only plain memory and close(); the locks and conditions
** may be held by threads that did not come along. */
static void proffile_forked(void)
{
  int i;
  for (i = 0; i < MAX_FILES; i++) {
    ProfFile *pf = atomic_exchange(&open_files[i], NULL);
    if (pf != NULL) {
      close(pf->fd);
      proffile_free(pf);
    }
  }
}

static void proffile_atfork(void)
{
  pthread_atfork(NULL, NULL, proffile_forked);
}

/* Take a slot for pf; 0 when all are taken. */
static int proffile_register(ProfFile *pf)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  int i;
  pthread_once(&once, proffile_atfork);
  for (i = 0; i < MAX_FILES; i++) {
    ProfFile *none = NULL;
    if (atomic_compare_exchange_strong(&open_files[i], &none, pf)) {
      pf->slot = i;
      return 1;
    }
  }
  return 0;
}

static int proffile_writeall(int fd, const uint8_t *p, size_t n)
{
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR)
	continue;
      return errno;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static void *proffile_thread(void *arg)
{
  ProfFile *pf = (ProfFile *)arg;
  pthread_mutex_lock(&pf->lock);
  for (;;) {
    const uint8_t *p;
    size_t n;
    int err;
    while (pf->pending == NULL && !pf->quit)
      pthread_cond_wait(&pf->work, &pf->lock);
    if (pf->pending == NULL)
      break;
    p = pf->pending;
    n = pf->pendlen;
    pthread_mutex_unlock(&pf->lock);
    err = pf->err ? 0 : proffile_writeall(pf->fd, p, n);
    pthread_mutex_lock(&pf->lock);
    if (err && !pf->err)
      pf->err = err;
    pf->pending = NULL;
    pthread_cond_signal(&pf->done);
  }
  pthread_mutex_unlock(&pf->lock);
  return NULL;
}

ProfFile *lj_proffile_open(const char *path, size_t bufsize)
{
  ProfFile *pf = calloc(1, sizeof(ProfFile));
  int err;
  if (pf == NULL)
    return NULL;
  pf->bufsize = bufsize;
  pf->buf[0] = malloc(bufsize);
  pf->buf[1] = malloc(bufsize);
  if (pf->buf[0] == NULL || pf->buf[1] == NULL) {
    proffile_free(pf);
    errno = ENOMEM;
    return NULL;
  }
  /* The owner's only: a stream or snapshot may hold a secret. */
  pf->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (pf->fd < 0) {
    err = errno;
    proffile_free(pf);
    errno = err;
    return NULL;
  }
  if (!proffile_register(pf)) {
    close(pf->fd);
    proffile_free(pf);
    errno = EMFILE;
    return NULL;
  }
  pthread_mutex_init(&pf->lock, NULL);
  pthread_cond_init(&pf->work, NULL);
  pthread_cond_init(&pf->done, NULL);
  if ((err = lj_profhost_thread(&pf->thread, proffile_thread, pf)) != 0) {
    atomic_store(&open_files[pf->slot], NULL);
    close(pf->fd);
    proffile_free(pf);
    errno = err;
    return NULL;
  }
  return pf;
}

void lj_proffile_each(void (*f)(void *ctx))
{
  int i;
  for (i = 0; i < MAX_FILES; i++) {
    ProfFile *pf = atomic_load(&open_files[i]);
    if (pf != NULL)
      f(pf);
  }
}

uint8_t *lj_proffile_buf(ProfFile *pf)
{
  return pf->buf[0];
}

size_t lj_proffile_bufsize(ProfFile *pf)
{
  return pf->bufsize;
}

/* Wait until the thread has written what it was handed. */
static int proffile_drain(ProfFile *pf)
{
  while (pf->pending != NULL)
    pthread_cond_wait(&pf->done, &pf->lock);
  return pf->err;
}

size_t lj_proffile_write(const void **data, size_t len, void *ctx)
{
  ProfFile *pf = (ProfFile *)ctx;
  const uint8_t *full = (const uint8_t *)*data;
  int err;
  pthread_mutex_lock(&pf->lock);
  err = proffile_drain(pf);  /* The other buffer is free again. */
  if (err == 0) {
    pf->pending = full;
    pf->pendlen = len;
    pthread_cond_signal(&pf->work);
  }
  pthread_mutex_unlock(&pf->lock);
  if (err != 0) {
    errno = err;
    return 0;
  }
  *data = full == pf->buf[0] ? pf->buf[1] : pf->buf[0];
  return len;
}

int lj_proffile_close(void *ctx, uint8_t *buf)
{
  ProfFile *pf = (ProfFile *)ctx;
  int err;
  (void)buf;  /* Both buffers are ours. */
  pthread_mutex_lock(&pf->lock);
  err = proffile_drain(pf);
  pf->quit = 1;
  pthread_cond_signal(&pf->work);
  pthread_mutex_unlock(&pf->lock);
  pthread_join(pf->thread, NULL);
  atomic_store(&open_files[pf->slot], NULL);
  if (close(pf->fd) != 0 && err == 0)
    err = errno;
  pthread_mutex_destroy(&pf->lock);
  pthread_cond_destroy(&pf->work);
  pthread_cond_destroy(&pf->done);
  proffile_free(pf);
  if (err != 0) {
    errno = err;
    return -1;
  }
  return 0;
}
