/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "stream_jobs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define THREADS_MAX 256

struct stream_jobs {
  const char *const *files;
  struct stream_job *jobs;
  size_t n;
  pthread_mutex_t lock;
  pthread_cond_t done;     /* a job was read */
  pthread_cond_t released; /* a job was released, or the pool stopped */
  /* Under lock: the next job a thread takes, the jobs released so far;
  ** no thread takes one `ahead` (twice the threads asked for) or more past
  ** those. */
  size_t next, nreleased, ahead;
  int stopped; /* under lock: take no more */
  pthread_t *threads;
  size_t nthreads;
};

unsigned stream_jobs_threads(int *asked) {
  const char *env = getenv("LJPROF_JOBS");
  *asked = env && *env;
  if (*asked) {
    char *end;
    errno = 0;
    unsigned long n = strtoul(env, &end, 10);
    if (errno || *end || n < 1 || n > THREADS_MAX || *env == '-') {
      fprintf(stderr,
              "ljprof: LJPROF_JOBS=%s: not a number of threads from 1 to %d\n",
              env, THREADS_MAX);
      return 0;
    }
    return (unsigned)n;
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online < 1 ? 1 : online > THREADS_MAX ? THREADS_MAX : (unsigned)online;
}

/* The files' total size from which threads pay: a stream of 4 MiB is
** some tens of milliseconds of reading. */
#define WORTH_THREADS_FROM (8u << 20)

int stream_jobs_worth(const char *const *files, size_t n) {
  uint64_t total = 0;
  struct stat st;
  for (size_t i = 0; i < n; i++)
    if (stat(files[i], &st) == 0 && S_ISREG(st.st_mode))
      total += (uint64_t)st.st_size;
  return total >= WORTH_THREADS_FROM;
}

/* What a thread's last stream leaves to its next. */
struct spares {
  struct symbols_cache cache;
  struct memagg_spare memagg;
};

/* The stream numbered i of the merge, read on this thread alone, with
** the resolver cache and the table of live blocks the thread's last
** stream left, to which it leaves its own: the first stream's resolver
** may become the merge's (take_job()) and keeps it. */
static void read_job(struct stream_job *job, const char *file, size_t i,
                     struct spares *spare) {
  static const struct decode_limits limits = {1};
  int fd = open(file, O_RDONLY);
  if (fd < 0) {
    job->open_errno = errno;
    return;
  }
  job->started = 1;
  symbols_init_threaded(&job->sym, &spare->cache);
  memagg_init(&job->memagg, &job->sym);
  memagg_take_spare(&job->memagg, &spare->memagg);
  sysagg_init(&job->sysagg, &job->sym);
  sysagg_next_stream(&job->sysagg, (uint32_t)i);
  job->kind = stream_decode(fd, &job->reader, &job->sym, &job->memagg,
                            &job->sysagg, &job->meta, NULL, &limits);
  close(fd);
  memagg_leave_spare(&job->memagg, &spare->memagg);
  if (i > 0) symbols_pass_cache(&job->sym, &spare->cache);
}

static void *run(void *arg) {
  struct stream_jobs *js = arg;
  struct spares spare = {0};
  pthread_mutex_lock(&js->lock);
  for (;;) {
    while (!js->stopped && js->next >= js->nreleased + js->ahead)
      pthread_cond_wait(&js->released, &js->lock);
    if (js->stopped || js->next == js->n) break;
    size_t i = js->next++;
    pthread_mutex_unlock(&js->lock);
    read_job(&js->jobs[i], js->files[i], i, &spare);
    pthread_mutex_lock(&js->lock);
    js->jobs[i].done = 1;
    pthread_cond_broadcast(&js->done);
  }
  pthread_mutex_unlock(&js->lock);
  symbols_cache_free(&spare.cache);
  memagg_spare_free(&spare.memagg);
  return NULL;
}

struct stream_jobs *stream_jobs_start(const char *const *files, size_t n,
                                      unsigned threads) {
  struct stream_jobs *js = xcalloc(1, sizeof *js);
  js->files = files;
  js->n = n;
  /* Twice: with only as many, a thread done with a stream waited while
  ** the one before it was merged (8 sysprof streams: 13 % of the time). */
  js->ahead = 2 * (size_t)threads;
  js->jobs = xcalloc(n, sizeof *js->jobs);
  js->threads = xcalloc(threads, sizeof *js->threads);
  pthread_mutex_init(&js->lock, NULL);
  pthread_cond_init(&js->done, NULL);
  pthread_cond_init(&js->released, NULL);
  while (js->nthreads < threads && js->nthreads < n &&
         pthread_create(&js->threads[js->nthreads], NULL, run, js) == 0)
    js->nthreads++;
  if (js->nthreads) return js;
  stream_jobs_end(js);
  return NULL;
}

struct stream_job *stream_jobs_wait(struct stream_jobs *js, size_t i) {
  pthread_mutex_lock(&js->lock);
  while (!js->jobs[i].done) pthread_cond_wait(&js->done, &js->lock);
  pthread_mutex_unlock(&js->lock);
  return &js->jobs[i];
}

static void free_job(struct stream_job *job) {
  if (!job->started) return;
  sysagg_free(&job->sysagg);
  memagg_free(&job->memagg);
  symbols_free(&job->sym);
  reader_free(&job->reader);
  job->started = 0;
}

void stream_jobs_release(struct stream_jobs *js, size_t i) {
  free_job(&js->jobs[i]);
  pthread_mutex_lock(&js->lock);
  js->nreleased++;
  pthread_cond_broadcast(&js->released);
  pthread_mutex_unlock(&js->lock);
}

void stream_jobs_end(struct stream_jobs *js) {
  pthread_mutex_lock(&js->lock);
  js->stopped = 1;
  pthread_cond_broadcast(&js->released);
  pthread_mutex_unlock(&js->lock);
  for (size_t i = 0; i < js->nthreads; i++) pthread_join(js->threads[i], NULL);
  for (size_t i = 0; i < js->n; i++) free_job(&js->jobs[i]);
  pthread_cond_destroy(&js->released);
  pthread_cond_destroy(&js->done);
  pthread_mutex_destroy(&js->lock);
  free(js->threads);
  free(js->jobs);
  free(js);
}
