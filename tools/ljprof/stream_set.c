/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "stream_set.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "stream_file.h"
#include "stream_jobs.h"

static const char *kind_name(enum stream_kind kind) {
  return kind == STREAM_MEMPROF ? "a memory profile (memprof)"
                                : "a CPU profile (sysprof)";
}

static int is_profile(enum stream_kind kind) {
  return kind == STREAM_MEMPROF || kind == STREAM_SYSPROF;
}

/* The titles' source: the name, or the names joined by ", ". */
static void name_sources(struct stream_set *set) {
  if (set->origins.n == 1) {
    set->source = set->origins.items[0].name;
    return;
  }
  for (size_t i = 0; i < set->origins.n; i++)
    sbuf_printf(&set->joined, "%s%s", i ? ", " : "",
                set->origins.items[i].name);
  set->source = sbuf_cstr(&set->joined);
}

/* What the stream numbered i holds, for the tables by process. */
static void count_origin(struct stream_set *set, size_t i,
                         const struct sysprof_meta *meta,
                         uint64_t samples_before, const struct memagg *mem) {
  struct origin *o = &set->origins.items[i];
  o->process = set->sym.process;
  if (set->kind == STREAM_SYSPROF) {
    o->value = meta->has_stats ? meta->samples
                               : set->sysagg.samples - samples_before;
  } else {
    o->value = add_sat(mem->totals.alloc_bytes, mem->totals.realloc_new_bytes);
    o->inuse = mem->totals.live_bytes;
  }
}

/* Stream i, decoded: of the set's kind, and figures that add up? */
static int check_merge(struct stream_set *set, size_t i, enum stream_kind kind,
                       const struct sysprof_meta *meta, size_t *first) {
  const char *name = set->origins.items[i].name;
  if (!is_profile(kind)) return EXIT_OK; /* damaged before: said already */
  if (!is_profile(set->kind)) {
    set->kind = kind;
    *first = i;
  } else if (kind != set->kind) {
    fprintf(stderr,
            "ljprof: %s: %s, %s is %s: only streams of one kind merge\n",
            name, kind_name(kind), set->origins.items[*first].name,
            kind_name(set->kind));
    return EXIT_USAGE;
  }
  char why[160];
  int adds_up =
      kind == STREAM_SYSPROF
          ? sysagg_merge_meta(&set->sysagg.meta, meta, i == *first, why,
                              sizeof why)
          : memagg_merge_meta(&set->memprof, &set->sym.memprof, i == *first,
                              why, sizeof why);
  if (!adds_up) {
    fprintf(stderr, "ljprof: %s: %s: its %s do not add up with theirs\n",
            name, why, kind == STREAM_SYSPROF ? "samples" : "events");
    return EXIT_USAGE;
  }
  return EXIT_OK;
}

/* Keep the first damage for the reports' notes; say each. */
static int note_damage(struct stream_set *set, const char *name,
                       const struct reader *r) {
  if (r->status == READER_OK) return EXIT_OK;
  fprintf(stderr, "ljprof: %s: %s\n", name, r->err_msg);
  reader_keep_failure(&set->damage, r);
  return EXIT_FAILED;
}

static int say_unopened(const struct stream_set *set, size_t i, int err) {
  fprintf(stderr, "ljprof: %s: %s\n", set->origins.items[i].name,
          strerror(err));
  return EXIT_FAILED;
}

/* Stream i, decoded into mem (a later one: to merge into the set's),
** checked, counted and merged; its damage said. */
static int add_stream(struct stream_set *set, size_t i, enum stream_kind kind,
                      const struct sysprof_meta *meta, uint64_t samples_before,
                      const struct memagg *mem, int later,
                      const struct reader *r, size_t *first) {
  int status = check_merge(set, i, kind, meta, first);
  if (status == EXIT_OK && is_profile(kind))
    count_origin(set, i, meta, samples_before, mem);
  if (status == EXIT_OK && later && kind == STREAM_MEMPROF)
    memagg_merge(&set->memagg, mem, (uint32_t)i);
  if (status != EXIT_USAGE)
    status = note_damage(set, set->origins.items[i].name, r);
  return status;
}

/* Read the file numbered i into the set, with the table of live blocks
** the last stream left in *spare, where it leaves its own. */
static int read_stream(struct stream_set *set, size_t i, const char *file,
                       const struct decode_limits *limits,
                       struct memagg_spare *spare, size_t *first) {
  int stdin_input = !strcmp(file, "-");
  int fd = stdin_input ? STDIN_FILENO : open(file, O_RDONLY);
  if (fd < 0) return say_unopened(set, i, errno);
  set->opened++;
  if (i) symbols_forget_bindings(&set->sym);
  sysagg_next_stream(&set->sysagg, (uint32_t)i);
  struct sysprof_meta meta = {0};
  uint64_t samples_before = set->sysagg.samples;
  /* A memory profile after the first goes to an aggregation of its own,
  ** added to the first's when finished (memagg_merge()). */
  int later = set->kind == STREAM_MEMPROF;
  struct memagg own;
  struct memagg *mem = later ? &own : &set->memagg;
  if (later) {
    memagg_init(&own, &set->sym);
    memagg_take_spare(&own, spare);
  }
  struct reader r;
  enum stream_kind kind =
      stream_decode(fd, &r, &set->sym, mem, &set->sysagg, &meta,
                    set->filter.n ? &set->filter : NULL, limits);
  int status =
      add_stream(set, i, kind, &meta, samples_before, mem, later, &r, first);
  if (later) {
    memagg_leave_spare(&own, spare);
    memagg_free(&own);
  } else if (kind == STREAM_MEMPROF && set->origins.n > 1) {
    memagg_leave_spare(&set->memagg, spare);
  }
  reader_free(&r);
  if (!stdin_input) close(fd);
  return status;
}

/*
** Is stream i, read on a thread of its own as a job of that kind, added
** here as reading it in order would? A memory profile, once the set is
** one, or as the first stream (its resolver becomes the set's); any
** other (a CPU profile is merged, or refused as reading it would be).
*/
static int adds_as_read(const struct stream_set *set, size_t i,
                        enum stream_kind kind) {
  if (kind == STREAM_MEMPROF) return set->kind == STREAM_MEMPROF || i == 0;
  return 1;
}

/* The first stream's job: its resolver and aggregation become the set's
** (fresh, they would hold the same); the set's go to the job, to free. */
static void take_job(struct stream_set *set, struct stream_job *job) {
  struct symbols sym = set->sym;
  set->sym = job->sym;
  job->sym = sym;
  if (job->kind == STREAM_MEMPROF) {
    struct memagg mem = set->memagg;
    set->memagg = job->memagg;
    job->memagg = mem;
  } else {
    struct sysagg sys = set->sysagg;
    set->sysagg = job->sysagg;
    job->sysagg = sys;
  }
  set->memagg.sym = set->sysagg.sym = set->sysagg.jit.sym = &set->sym;
}

/* Stream i, read as a job: added to the set as read_stream() adds it. */
static int add_job(struct stream_set *set, size_t i, struct stream_job *job,
                   size_t *first) {
  if (job->open_errno) return say_unopened(set, i, job->open_errno);
  set->opened++;
  if (i) symbols_forget_bindings(&set->sym);
  sysagg_next_stream(&set->sysagg, (uint32_t)i);
  int later = set->kind == STREAM_MEMPROF;
  uint64_t samples_before = set->sysagg.samples;
  if (i == 0 && is_profile(job->kind)) {
    take_job(set, job);
  } else {
    struct symimport map;
    symimport_add(&set->sym, &job->sym, &map);
    if (job->kind == STREAM_MEMPROF) memagg_remap(&job->memagg, &map);
    if (job->kind == STREAM_SYSPROF)
      sysagg_merge(&set->sysagg, &job->sysagg, &map);
    symimport_free(&map);
  }
  return add_stream(set, i, job->kind, &job->meta, samples_before,
                    later ? &job->memagg : &set->memagg, later, &job->reader,
                    first);
}

/*
** Read the streams on several threads, added in their order while they
** add as read in order would (adds_as_read()); *from: the first stream
** not added, for read_stream() to read. Returns as stream_set_read().
*/
static int read_jobs(struct stream_set *set, const char *const *names,
                     size_t n, unsigned threads, size_t *first,
                     size_t *from) {
  int status = EXIT_OK;
  *from = 0;
  struct stream_jobs *js = stream_jobs_start(names, n, threads);
  if (!js) return status;
  for (; *from < n; ++*from) {
    struct stream_job *job = stream_jobs_wait(js, *from);
    if (!job->open_errno && !adds_as_read(set, *from, job->kind)) break;
    int s = add_job(set, *from, job, first);
    stream_jobs_release(js, *from);
    if (s == EXIT_USAGE) {
      status = s;
      break;
    }
    if (s != EXIT_OK) status = s;
  }
  stream_jobs_end(js);
  return status;
}

/* Several files, none from stdin, all kept, asked for or weighing enough:
** read on threads? */
static int reads_on_threads(const struct stream_set *set,
                            const char *const *names, size_t n,
                            unsigned threads, int asked) {
  if (n < 2 || threads < 2 || set->filter.n) return 0;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], "-")) return 0;
  return asked || stream_jobs_worth(names, n);
}

int stream_set_read(struct stream_set *set, const char *const *names,
                    size_t n, const struct labelterm *terms, size_t nterms) {
  memset(set, 0, sizeof *set);
  set->kind = STREAM_UNKNOWN;
  set->damage.status = READER_OK;
  symbols_init(&set->sym);
  labelfilter_init(&set->filter, &set->sym, terms, nterms);
  memagg_init(&set->memagg, &set->sym);
  sysagg_init(&set->sysagg, &set->sym);
  set->origins.items = xcalloc(n, sizeof *set->origins.items);
  set->origins.n = n;
  for (size_t i = 0; i < n; i++)
    set->origins.items[i].name = strcmp(names[i], "-") ? names[i] : "<stdin>";
  name_sources(set);
  int asked;
  unsigned threads = stream_jobs_threads(&asked);
  if (!threads) return EXIT_USAGE;
  int status = EXIT_OK;
  size_t first = 0, from = 0;
  if (reads_on_threads(set, names, n, threads, asked)) {
    status = read_jobs(set, names, n, threads, &first, &from);
    if (status == EXIT_USAGE) return status;
  }
  /* LJPROF_JOBS=1: one thread in all, not a second to aggregate on. */
  struct decode_limits limits = {.one_thread = asked && threads == 1};
  struct memagg_spare spare = {0};
  for (size_t i = from; i < n && status != EXIT_USAGE; i++) {
    int s = read_stream(set, i, names[i], &limits, &spare, &first);
    if (s != EXIT_OK) status = s;
  }
  memagg_spare_free(&spare);
  if (status == EXIT_USAGE) return status;
  if (set->kind == STREAM_MEMPROF) {
    set->sym.memprof = set->memprof;
    memagg_pack(&set->memagg);
  }
  set->sysagg.filtered = set->filter.n != 0;
  return status;
}

void stream_set_free(struct stream_set *set) {
  sysagg_free(&set->sysagg);
  memagg_free(&set->memagg);
  symbols_free(&set->sym);
  free(set->origins.items);
  sbuf_free(&set->joined);
  labelfilter_free(&set->filter);
  memset(set, 0, sizeof *set);
}

void stream_set_profile(struct profile *p, const struct stream_set *set,
                        int leak_only, enum memagg_order count) {
  if (set->kind == STREAM_SYSPROF)
    profile_from_sysprof(p, set->source, &set->sysagg, &set->damage);
  else
    profile_from_memprof(p, set->source, &set->memagg, &set->damage,
                         leak_only, count);
  p->origins = &set->origins;
}
