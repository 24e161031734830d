/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** ljprof diff: what grew and what shrank from one profile to another of
** the same kind (two memprof or two sysprof streams), by site or by stack.
*/
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include "cli.h"
#include "lib/aggregate/profdiff.h"
#include "lib/render/report.h"
#include "report_cli.h"
#include "stream_file.h"

#define CMD "diff"

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ljprof diff [OPTIONS] BASE NEW\n"
          "\n"
          "Compare two profiles of one kind, two memprof or two sysprof\n"
          "streams (as `pprof -diff_base` does): what grew and what shrank\n"
          "from BASE to NEW, by allocation site or CPU leaf (the default) or\n"
          "by whole stack. Memory: bytes allocated, or with --leak-only bytes\n"
          "in use at the end; CPU: samples (time when both state their\n"
          "interval).\n"
          "\n"
          "Options:\n"
          "  --by=site|stack     what to compare (default: site)\n"
          "  --format=text|html  a text table (default) or a flame graph of\n"
          "                      what grew, by stack\n"
          "  --leak-only         memprof: bytes in use at the end\n"
          "  --top=N             at most N rows in each section\n"
          "  -o, --output=OUT    write to OUT (default: stdout)\n"
          "  -h, --help          show this help\n"
          "\n"
          "Examples:\n"
          "  ljprof diff before.bin after.bin\n"
          "  ljprof diff --leak-only --by=stack before.bin after.bin\n"
          "  ljprof diff --format=html -o growth.html cpu-1.bin cpu-2.bin\n");
}

enum { OPT_BY = OPT_REPORT_LAST };

static const struct option long_options[] = {
    REPORT_LONG_OPTIONS,
    {"by", required_argument, NULL, OPT_BY},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

struct args {
  struct report_options report;
  enum profdiff_key key;
  const char *files[2];
  const char *output;
};

/* An option of diff's own; returns -1 to go on, or the exit status. */
static int parse_own_option(int c, char **argv, void *ud) {
  struct args *a = ud;
  switch (c) {
  case OPT_BY:
    if (!strcmp(optarg, "site")) a->key = DIFF_BY_SITE;
    else if (!strcmp(optarg, "stack")) a->key = DIFF_BY_STACK;
    else return usage_error(CMD, "--by wants site or stack, not '%s'", optarg);
    return -1;
  case 'o':
    a->output = optarg;
    return -1;
  case 'h':
    usage(stdout);
    return EXIT_OK;
  default:
    return option_error(CMD, c, argv);
  }
}

static int parse_args(int argc, char **argv, struct args *a) {
  int status = parse_options(CMD, argc, argv, ":o:h", long_options,
                             &a->report, parse_own_option, a);
  if (status >= 0) return status;
  if (a->report.format != REPORT_TEXT && a->report.format != REPORT_HTML)
    return usage_error(CMD, "--format wants text or html");
  if (argc - optind != 2) return usage_error(CMD, "wants two files, BASE and NEW");
  a->files[0] = argv[optind];
  a->files[1] = argv[optind + 1];
  return -1;
}

static void put_value(FILE *out, const struct profile *p, uint64_t v) {
  fprintf(out, "%" PRIu64 " %s", v, p->types[profile_weight(p)].unit);
}

static void put_section(FILE *out, const struct profdiff *d,
                        const struct profile *p, int grew, size_t top) {
  size_t n;
  size_t *ids = profdiff_rank(d, grew, &n);
  struct sbuf name = {0};
  fprintf(out, "%s\n", grew ? "GREW" : "SHRANK");
  size_t shown = top && top < n ? top : n;
  for (size_t i = 0; i < shown; i++) {
    const struct profdiff_row *r = &d->rows[ids[i]];
    sbuf_reset(&name);
    symbols_format(&d->sym, r->name, NULL, &name);
    fprintf(out, "%+" PRId64 " (", profdiff_delta(r));
    put_value(out, p, r->base);
    fputs(" -> ", out);
    put_value(out, p, r->new);
    fprintf(out, ")  %.*s\n", (int)name.len, name.data);
  }
  if (n == 0) fputs("(none)\n", out);
  else if (shown < n) fprintf(out, "... %zu more\n", n - shown);
  fputs("\n", out);
  sbuf_free(&name);
  free(ids);
}

static void put_text(FILE *out, const struct args *a, const struct profdiff *d,
                     const struct profile *p) {
  fprintf(out, "DIFF: %s -> %s (%s, %s, by %s)\n", a->files[0], a->files[1],
          p->kind == PROFILE_CPU ? "CPU" : "memory",
          p->kind == PROFILE_CPU         ? p->types[profile_weight(p)].type
          : a->report.leak_only          ? "in use at the end"
                                         : "allocated",
          a->key == DIFF_BY_STACK ? "stack" : "site");
  fprintf(out, "Total: %" PRIu64 " -> %" PRIu64 " (%+" PRId64 ")\n\n",
          d->base_total, d->new_total,
          (int64_t)(d->new_total - d->base_total));
  put_section(out, d, p, 1, a->report.top);
  put_section(out, d, p, 0, a->report.top);
}

static void build_profile(struct profile *p, const char *name,
                          const struct stream_file *f, const struct args *a) {
  if (f->kind == STREAM_SYSPROF)
    profile_from_sysprof(p, name, &f->sysagg, &f->reader);
  else
    profile_from_memprof(p, name, &f->memagg, &f->reader, a->report.leak_only,
                         ORDER_BYTES);
}

int cmd_diff(int argc, char **argv) {
  struct args a = {.report = REPORT_OPTIONS_DEFAULT};
  int status = parse_args(argc, argv, &a);
  if (status >= 0) return status;
  struct stream_file f[2];
  int fd[2], ok = 1;
  for (int i = 0; i < 2; i++) {
    fd[i] = open(a.files[i], O_RDONLY);
    if (fd[i] < 0) {
      fprintf(stderr, "ljprof: %s: %s\n", a.files[i], strerror(errno));
      if (i) close(fd[0]), stream_file_free(&f[0]);
      return EXIT_FAILED;
    }
    stream_file_read(&f[i], fd[i]);
    if (f[i].reader.status != READER_OK) {
      fprintf(stderr, "ljprof: %s: %s\n", a.files[i], f[i].reader.err_msg);
      ok = 0;
    }
  }
  status = ok ? EXIT_OK : EXIT_FAILED;
  int kinds_ok = (f[0].kind == STREAM_MEMPROF || f[0].kind == STREAM_SYSPROF) &&
                 f[0].kind == f[1].kind;
  FILE *out = NULL;
  if (!kinds_ok) {
    fprintf(stderr, "ljprof diff: %s and %s are not two memprof or two "
            "sysprof profiles\n", a.files[0], a.files[1]);
    status = EXIT_FAILED;
  } else if (!(out = a.output ? fopen(a.output, "w") : stdout)) {
    fprintf(stderr, "ljprof: %s: %s\n", a.output, strerror(errno));
    status = EXIT_FAILED;
  } else {
    struct profile p[2];
    struct profdiff d;
    build_profile(&p[0], a.files[0], &f[0], &a);
    build_profile(&p[1], a.files[1], &f[1], &a);
    profdiff_build(&d, &p[0], &p[1], a.key);
    if (a.report.format == REPORT_HTML) {
      struct profile growth;
      char title[512];
      snprintf(title, sizeof title, "%s -> %s", a.files[0], a.files[1]);
      profdiff_growth(&growth, &d, title, &p[1], &f[1].reader);
      if (report_html(out, &growth) != 0) status = EXIT_FAILED;
      profile_free(&growth);
    } else {
      put_text(out, &a, &d, &p[1]);
    }
    profdiff_free(&d);
    profile_free(&p[0]);
    profile_free(&p[1]);
    if (fflush(out) != 0 || (a.output && fclose(out) != 0)) {
      fprintf(stderr, "ljprof: %s: write error\n", a.output ? a.output : "<stdout>");
      status = EXIT_FAILED;
    }
  }
  for (int i = 0; i < 2; i++) {
    stream_file_free(&f[i]);
    close(fd[i]);
  }
  return status;
}
