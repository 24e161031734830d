/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** ljprof diff: what grew and what shrank from one profile to another of
** the same kind (two memprof or two sysprof streams, or two sets of them
** each merged into one), by site or by stack.
*/
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lib/aggregate/profdiff.h"
#include "lib/render/report.h"
#include "report_cli.h"
#include "stream_set.h"

#define CMD "diff"

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ljprof diff [OPTIONS] BASE NEW\n"
          "       ljprof diff [OPTIONS] BASE... -- NEW...\n"
          "\n"
          "Compare two profiles of one kind, two memprof or two sysprof\n"
          "streams (as `pprof -diff_base` does): what grew and what shrank\n"
          "from BASE to NEW, by allocation site or CPU leaf (the default) or\n"
          "by whole stack. Memory: bytes allocated, or with --leak-only bytes\n"
          "in use at the end; CPU: samples (time when both state their\n"
          "interval). Either side may be several streams (a server's workers,\n"
          "the windows of rotate=), BASE's before a '--', NEW's after it,\n"
          "each side merged into one profile as `ljprof report` merges them.\n"
          "\n"
          "Options:\n"
          "  --by=site|stack     what to compare (default: site)\n"
          "  --by-label=KEY      text: a diff for each value of label KEY (in\n"
          "                      either profile), and (none): FILEs read\n"
          "                      once more for each\n"
          "  --label=KEY=VALUE   only what carries that label (as report's)\n"
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
          "  ljprof diff --by-label=route before.bin after.bin\n"
          "  ljprof diff --format=html -o growth.html cpu-1.bin cpu-2.bin\n"
          "  ljprof diff before/ljprof-cpu-*.bin -- after/ljprof-cpu-*.bin\n");
}

enum { OPT_BY = OPT_REPORT_LAST };

static const struct option long_options[] = {
    REPORT_LONG_OPTIONS,
    {"by", required_argument, NULL, OPT_BY},
    {"by-label", required_argument, NULL, OPT_LABEL_BY},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

struct args {
  struct report_options report;
  enum profdiff_key key;
  struct file_list sides[2]; /* BASE, NEW */
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
  int sep = sides_separator(argc, argv);
  int status = parse_options(CMD, sep, argv, ":o:h", long_options,
                             &a->report, parse_own_option, a);
  if (status >= 0) return status;
  if (a->report.format != REPORT_TEXT && a->report.format != REPORT_HTML)
    return usage_error(CMD, "--format wants text or html");
  if (a->report.by && a->report.format != REPORT_TEXT)
    return usage_error(CMD, "--by-label writes text");
  status = two_sides(CMD, argc, argv, sep, a->sides,
                     "two files, BASE and NEW, or BASE... -- NEW...");
  for (int i = 0; status < 0 && a->report.by && i < 2; i++)
    for (size_t f = 0; f < a->sides[i].n; f++)
      if (!strcmp(a->sides[i].files[f], "-"))
        return usage_error(CMD, "--by-label reads each FILE once per value: "
                                "not '-' (stdin)");
  return status;
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
                     const struct profile *p, const char *base_source) {
  fprintf(out, "DIFF: %s -> %s (%s, %s, by %s)\n", base_source,
          p->source,
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

/* Both sides read; the diff written. Returns the exit status. */
static int write_diff(FILE *out, const struct args *a,
                      const struct stream_set *set) {
  struct profile p[2];
  struct profdiff d;
  int status = EXIT_OK;
  for (int i = 0; i < 2; i++)
    stream_set_profile(&p[i], &set[i], a->report.leak_only, ORDER_BYTES);
  profdiff_build(&d, &p[0], &p[1], a->key);
  if (a->report.format == REPORT_HTML) {
    struct profile growth;
    struct sbuf title = {0};
    sbuf_printf(&title, "%s -> %s", set[0].source, set[1].source);
    profdiff_growth(&growth, &d, sbuf_cstr(&title), &p[1], &set[1].damage);
    if (report_html(out, &growth) != 0) status = EXIT_FAILED;
    profile_free(&growth);
    sbuf_free(&title);
  } else {
    put_text(out, a, &d, &p[1], set[0].source);
  }
  profdiff_free(&d);
  profile_free(&p[0]);
  profile_free(&p[1]);
  return status;
}

/* Both sides read, keeping what carries terms[0 .. n); the status. */
static int read_sides(const struct args *a, struct stream_set set[2],
                      const struct labelterm *terms, size_t n) {
  int read[2];
  for (int i = 0; i < 2; i++)
    read[i] = stream_set_read(&set[i], a->sides[i].files, a->sides[i].n,
                              terms, n);
  return read[0] == EXIT_USAGE || read[1] == EXIT_USAGE ? EXIT_USAGE
         : read[0] != EXIT_OK || read[1] != EXIT_OK     ? EXIT_FAILED
                                                        : EXIT_OK;
}

/* A value of --by-label's key in either side: its bytes, or none or the
** folded sets (LABEL_VALUE_NONE, LABEL_VALUE_OTHER as kind). */
struct part {
  uint32_t kind; /* 0: bytes */
  char *bytes;
  size_t len;
};

/* The values of the key on each side, those of BASE first, each once. */
static struct part *side_values(struct stream_set set[2],
                                const struct args *a, size_t *n) {
  struct part *parts = NULL;
  size_t cap = 0;
  *n = 0;
  for (int i = 0; i < 2; i++) {
    struct labeltable t;
    uint32_t key =
        symbols_intern(&set[i].sym, a->report.by, a->report.by_len);
    if (set[i].kind == STREAM_SYSPROF)
      labeltable_cpu(&t, &set[i].sysagg, key);
    else
      labeltable_memory(&t, &set[i].memagg, a->report.leak_only, key);
    for (size_t r = 0; r < t.n; r++) {
      uint32_t v = t.rows[r].value;
      struct part p = {v >= LABEL_VALUE_OTHER ? v : 0, NULL, 0};
      if (!p.kind) {
        p.bytes = set[i].sym.strings[v].data;
        p.len = set[i].sym.strings[v].len;
      }
      size_t k = 0;
      while (k < *n && !(parts[k].kind == p.kind && parts[k].len == p.len &&
                         (!p.len || !memcmp(parts[k].bytes, p.bytes, p.len))))
        k++;
      if (k < *n) continue;
      grow_array((void **)&parts, &cap, *n + 1, sizeof *parts);
      p.bytes = p.len ? memcpy(xmalloc(p.len), p.bytes, p.len) : NULL;
      parts[(*n)++] = p;
    }
    labeltable_free(&t);
  }
  return parts;
}

/* --by-label: a diff of each value's samples or events, both sides read
** again with it. */
static int diff_parts(FILE *out, const struct args *a,
                      struct stream_set all[2]) {
  size_t n;
  struct part *parts = side_values(all, a, &n);
  struct labelterm *terms =
      xmalloc((a->report.nlabels + 1) * sizeof *terms);
  if (a->report.nlabels)
    memcpy(terms, a->report.labels, a->report.nlabels * sizeof *terms);
  struct sbuf head = {0};
  int status = EXIT_OK;
  if (!n) {
    labels_escape(&head, a->report.by, a->report.by_len);
    fprintf(out, "BY LABEL: neither profile carries label %s\n",
            sbuf_cstr(&head));
  }
  for (size_t i = 0; i < n && status == EXIT_OK; i++) {
    struct labelterm *t = &terms[a->report.nlabels];
    *t = (struct labelterm){.key = a->report.by, .key_len = a->report.by_len,
                            .value = parts[i].kind ? NULL : parts[i].bytes,
                            .value_len = parts[i].len,
                            .other = parts[i].kind == LABEL_VALUE_OTHER};
    if (!parts[i].kind && !t->value) t->value = ""; /* an empty value */
    sbuf_reset(&head);
    sbuf_printf(&head, "%sBY LABEL ", i ? "\n" : "");
    labels_escape(&head, a->report.by, a->report.by_len);
    sbuf_add(&head, "=", 1);
    if (parts[i].kind == LABEL_VALUE_NONE) sbuf_printf(&head, "(none)");
    else if (parts[i].kind) sbuf_printf(&head, "(other: folded sets)");
    else labels_escape(&head, parts[i].bytes, parts[i].len);
    fprintf(out, "%s\n", sbuf_cstr(&head));
    struct stream_set set[2];
    status = read_sides(a, set, terms, a->report.nlabels + 1);
    if (status != EXIT_USAGE) status = write_diff(out, a, set);
    for (int s = 0; s < 2; s++) stream_set_free(&set[s]);
  }
  for (size_t i = 0; i < n; i++) free(parts[i].bytes);
  free(parts);
  free(terms);
  sbuf_free(&head);
  return status;
}

int cmd_diff(int argc, char **argv) {
  struct args a = {.report = REPORT_OPTIONS_DEFAULT};
  int status = parse_args(argc, argv, &a);
  if (status >= 0) return status;
  struct stream_set set[2];
  status = read_sides(&a, set, a.report.labels, a.report.nlabels);
  int kinds_ok =
      (set[0].kind == STREAM_MEMPROF || set[0].kind == STREAM_SYSPROF) &&
      set[0].kind == set[1].kind;
  FILE *out = NULL;
  if (status == EXIT_USAGE || !set[0].opened || !set[1].opened) {
    /* said */
  } else if (!kinds_ok) {
    fprintf(stderr, "ljprof diff: %s and %s are not two memprof or two "
            "sysprof profiles\n", set[0].source, set[1].source);
    status = EXIT_FAILED;
  } else if (!(out = a.output ? fopen(a.output, "w") : stdout)) {
    fprintf(stderr, "ljprof: %s: %s\n", a.output, strerror(errno));
    status = EXIT_FAILED;
  } else {
    int s = a.report.by ? diff_parts(out, &a, set) : write_diff(out, &a, set);
    if (s != EXIT_OK) status = s == EXIT_USAGE ? s : EXIT_FAILED;
    if (fflush(out) != 0 || (a.output && fclose(out) != 0)) {
      fprintf(stderr, "ljprof: %s: write error\n", a.output ? a.output : "<stdout>");
      status = EXIT_FAILED;
    }
  }
  for (int i = 0; i < 2; i++) stream_set_free(&set[i]);
  return status;
}
