/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** ljprof heap: who holds what in a heap snapshot (misc.heapsnapshot,
** LJPROF='heap', ljprof record --heap).
*/
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "lib/aggregate/heapdiff.h"
#include "lib/render/heapdiff_report.h"
#include "lib/render/heapreport.h"
#include "report_cli.h"

#define CMD "heap"
#define TOP_DEFAULT 20

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ljprof heap [OPTIONS] SNAPSHOT\n"
          "       ljprof heap --diff [OPTIONS] OLD NEW\n"
          "       ljprof heap --diff [OPTIONS] OLD... -- NEW...\n"
          "\n"
          "Read a heap snapshot and report who holds the memory: the live\n"
          "heap by type, the objects that retain the most (the bytes freed\n"
          "if nothing else referenced them: the dominator tree) with the\n"
          "shortest path from a root to each, in Lua's words, and the heap\n"
          "by path pattern (indexes as *), so that one structure is one\n"
          "line. Weak references retain nothing. SNAPSHOT '-' reads\n"
          "standard input.\n"
          "\n"
          "With --diff: what grew from OLD to NEW (two snapshots of one\n"
          "program), objects and bytes by type and by path pattern, most\n"
          "grown first; 'fresh' counts the objects of NEW at an address\n"
          "where OLD had none of their type. With --memprof too, and one\n"
          "memprof stream that ran through both snapshots (each joined at\n"
          "its own mark), by allocation site and call stack. Each side may\n"
          "be the snapshots of several processes (a server's workers), OLD's\n"
          "before a '--', NEW's after it, summed; the i-th OLD and the i-th\n"
          "NEW are one process's (fresh objects are counted in such pairs).\n"
          "With --memprof, each object gets the allocation that made it,\n"
          "from the memprof stream that ran while the snapshot was taken\n"
          "(version 5: ljprof record --mem --heap, misc.memprof.start with\n"
          "stacks = true or format = \"v5\"): the top retainers say where\n"
          "they were allocated, and a section gives what each allocation\n"
          "site (and call stack) still holds, and at which path.\n"
          "\n"
          "Options:\n"
          "  --format=FORMAT     text (default), json, html (the dominator\n"
          "                      tree as a flame graph sized by retained\n"
          "                      bytes) or heapsnapshot (Chrome DevTools'\n"
          "                      .heapsnapshot, for its Memory panel and\n"
          "                      memlab)\n"
          "  --diff              compare two snapshots, OLD and NEW (text or\n"
          "                      json)\n"
          "  --graph             json: every object (size, retained size,\n"
          "                      immediate dominator) and every reference\n"
          "  --top=N             at most N entries in each section (default "
          "20)\n"
          "  --memprof=STREAM    join the memprof stream that ran while the\n"
          "                      snapshot (with --diff: both) was taken\n"
          "  -o, --output=OUT    write the report to OUT (default: stdout)\n"
          "  -h, --help          show this help\n"
          "\n"
          "A damaged (truncated, corrupt) snapshot is reported up to the\n"
          "damage, the damage is described on stderr, and the exit status\n"
          "is 1.\n"
          "\n"
          "Examples:\n"
          "  ljprof heap heap.bin\n"
          "  ljprof heap --format=json --graph -o heap.json heap.bin\n"
          "  ljprof heap --format=html -o heap.html heap.bin\n"
          "  ljprof heap --format=heapsnapshot -o lua.heapsnapshot heap.bin\n"
          "  ljprof heap --diff before.bin after.bin\n"
          "  ljprof heap --diff --memprof=memprof.bin before.bin after.bin\n"
          "  ljprof heap --diff before/heap-*.bin -- after/heap-*.bin\n"
          "  ljprof heap --memprof=memprof.bin heap.bin\n");
}

/* --top is report's own (report_parse_option), --format is not: heap
** has formats of its own. */
enum { OPT_HEAP_FORMAT = OPT_REPORT_LAST, OPT_GRAPH, OPT_DIFF,
       OPT_MEMPROF };

static const char *const format_names[] = {
    [HEAP_TEXT] = "text", [HEAP_JSON] = "json", [HEAP_HTML] = "html",
    [HEAP_HEAPSNAPSHOT] = "heapsnapshot"};

static const struct option long_options[] = {
    {"format", required_argument, NULL, OPT_HEAP_FORMAT},
    {"graph", no_argument, NULL, OPT_GRAPH},
    {"diff", no_argument, NULL, OPT_DIFF},
    {"memprof", required_argument, NULL, OPT_MEMPROF},
    {"top", required_argument, NULL, OPT_TOP},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

struct args {
  struct heapreport_options report;
  int diff;
  const char *input[2], *output;
  struct file_list sides[2]; /* --diff: OLD's, NEW's */
  const char *memprof; /* --memprof */
};

static int parse_format(const char *name, struct heapreport_options *o) {
  for (size_t f = 0; f < sizeof format_names / sizeof *format_names; f++)
    if (!strcmp(name, format_names[f])) {
      o->format = (enum heapreport_format)f;
      return -1;
    }
  return usage_error(CMD, "unknown format '%s' (text, json, html or "
                          "heapsnapshot)", name);
}

static int parse_args(int argc, char **argv, struct args *a) {
  int sep = sides_separator(argc, argv);
  optind = 1;
  opterr = 0;
  for (int c; (c = getopt_long(sep, argv, ":o:h", long_options, NULL)) != -1;) {
    struct report_options top = REPORT_OPTIONS_DEFAULT;
    int status;
    switch (c) {
    case OPT_HEAP_FORMAT:
      if ((status = parse_format(optarg, &a->report)) >= 0) return status;
      break;
    case OPT_DIFF:
      a->diff = 1;
      break;
    case OPT_GRAPH:
      a->report.graph = 1;
      break;
    case OPT_MEMPROF:
      a->memprof = optarg;
      break;
    case OPT_TOP:
      if ((status = report_parse_option(CMD, c, optarg, &top)) >= 0)
        return status;
      a->report.top = top.top;
      break;
    case 'o':
      a->output = optarg;
      break;
    case 'h':
      usage(stdout);
      return EXIT_OK;
    default:
      return option_error(CMD, c, argv);
    }
  }
  if (!a->diff) return single_file(CMD, sep, argv, &a->input[0]);
  int status = two_sides(CMD, argc, argv, sep, a->sides,
                         "two snapshots, OLD and NEW, or OLD... -- NEW...");
  if (status >= 0) return status;
  if (a->report.format > HEAP_JSON || a->report.graph)
    return usage_error(CMD, "--diff writes text or json, without --graph");
  if (a->memprof && (a->sides[0].n > 1 || a->sides[1].n > 1))
    return usage_error(CMD, "--memprof joins one stream: not with several "
                            "snapshots a side");
  a->input[0] = a->sides[0].files[0];
  a->input[1] = a->sides[1].files[0];
  return -1;
}

/* A snapshot read to its end or its damage, and its graph. */
struct snapshot {
  const char *name;
  int fd;
  struct reader r;
  struct heapsnap snap;
  struct heapgraph graph;
};

/* 0, or -1 if the file cannot be opened (said on stderr). */
static int snapshot_load(struct snapshot *s, const char *path) {
  int stdin_input = !strcmp(path, "-");
  s->name = stdin_input ? "<stdin>" : path;
  s->fd = stdin_input ? STDIN_FILENO : open(path, O_RDONLY);
  if (s->fd < 0) {
    fprintf(stderr, "ljprof: %s: %s\n", s->name, strerror(errno));
    return -1;
  }
  reader_init_fd(&s->r, s->fd, 1 << 20);
  heapsnap_read(&s->r, &s->snap);
  heapgraph_build(&s->graph, &s->snap);
  return 0;
}

/* Says the damage on stderr; EXIT_FAILED if any. */
static int snapshot_close(struct snapshot *s) {
  int status = EXIT_OK;
  if (s->r.status != READER_OK) {
    fprintf(stderr, "ljprof: %s: %s\n", s->name, s->r.err_msg);
    status = EXIT_FAILED;
  }
  heapgraph_free(&s->graph);
  heapsnap_free(&s->snap);
  reader_free(&s->r);
  if (s->fd != STDIN_FILENO) close(s->fd);
  return status;
}

/* One snapshot (joined to the memprof stream at memprof, if join) or
** the diff of two (each joined, if join). */
static int write_report(FILE *out, const struct snapshot *s, int n,
                        const struct heapjoin *join, const char *memprof,
                        const struct heapreport_options *opt) {
  if (n == 1) {
    struct heapreport_input in = {s[0].name, &s[0].graph, &s[0].r, memprof,
                                  join};
    return heapreport_write(out, &in, opt);
  }
  struct heapdiff d;
  struct heapdiff_input in = {{s[0].name, s[1].name}, {&s[0].r, &s[1].r},
                              memprof};
  const struct heapjoin *const joins[2] = {join, join ? join + 1 : NULL};
  heapdiff_build(&d, &s[0].graph, &s[1].graph, joins);
  int rc = heapdiff_write(out, &d, &in, opt);
  heapdiff_free(&d);
  return rc;
}

/* The memprof stream at path joined to snapshot s; 0 (said on stderr)
** if it cannot be: the report goes on without it. */
static int join_memprof(const char *path, const struct snapshot *s,
                        struct heapjoin *join) {
  struct reader r;
  struct sbuf err = {0};
  int fd = open(path, O_RDONLY), ok = 0;
  memset(join, 0, sizeof *join);
  if (fd < 0) {
    fprintf(stderr, "ljprof: %s: %s\n", path, strerror(errno));
    return 0;
  }
  reader_init_fd(&r, fd, 1 << 20);
  ok = heapjoin_read(join, &r, &s->snap, &err);
  if (!ok) {
    fprintf(stderr, "ljprof: %s: cannot join %s: %s\n", path, s->name,
            sbuf_cstr(&err));
    heapjoin_free(join);
  }
  else if (r.status != READER_OK)
    fprintf(stderr, "ljprof: %s: damaged after the snapshot's mark "
                    "(the join holds): %s\n", path, r.err_msg);
  sbuf_free(&err);
  reader_free(&r);
  close(fd);
  return ok;
}

/* A side's snapshots, as one: their names, the first damage. */
struct side {
  struct sbuf names;
  struct reader damage; /* READER_OK if none */
  int status;
};

/* Snapshot i of the side, if it has one, into s: 0, or -1. */
static int side_load(struct side *side, const struct file_list *files,
                     size_t i, struct snapshot *s) {
  if (i >= files->n) return -1;
  sbuf_printf(&side->names, "%s%s", i ? ", " : "",
              strcmp(files->files[i], "-") ? files->files[i] : "<stdin>");
  if (snapshot_load(s, files->files[i]) == 0) return 0;
  side->status = EXIT_FAILED;
  return -1;
}

/* The snapshot done with: its damage kept for the report's warning. */
static void side_close(struct side *side, struct snapshot *s) {
  reader_keep_failure(&side->damage, &s->r);
  if (snapshot_close(s) != EXIT_OK) side->status = EXIT_FAILED;
}

/* --diff of several snapshots a side: pair by pair, the i-th OLD with
** the i-th NEW, one pair in memory at a time. */
static int diff_sides(const struct args *a) {
  struct side side[2] = {{.damage.status = READER_OK},
                         {.damage.status = READER_OK}};
  struct heapdiff d;
  heapdiff_init(&d, 0);
  size_t n = a->sides[0].n > a->sides[1].n ? a->sides[0].n : a->sides[1].n;
  for (size_t i = 0; i < n; i++) {
    struct snapshot s[2];
    int loaded[2];
    for (int k = 0; k < 2; k++)
      loaded[k] = side_load(&side[k], &a->sides[k], i, &s[k]) == 0;
    heapdiff_add(&d, loaded[0] ? &s[0].graph : NULL,
                 loaded[1] ? &s[1].graph : NULL, NULL);
    for (int k = 0; k < 2; k++)
      if (loaded[k]) side_close(&side[k], &s[k]);
  }
  int status = side[0].status != EXIT_OK ? side[0].status : side[1].status;
  FILE *out = a->output ? fopen(a->output, "w") : stdout;
  if (!out) {
    fprintf(stderr, "ljprof: %s: %s\n", a->output, strerror(errno));
    status = EXIT_FAILED;
  } else {
    struct heapdiff_input in = {
        {sbuf_cstr(&side[0].names), sbuf_cstr(&side[1].names)},
        {&side[0].damage, &side[1].damage},
        NULL};
    if (heapdiff_write(out, &d, &in, &a->report) != 0 ||
        (a->output && fclose(out) != 0)) {
      fprintf(stderr, "ljprof: %s: write error: %s\n",
              a->output ? a->output : "<stdout>", strerror(errno));
      status = EXIT_FAILED;
    }
  }
  heapdiff_free(&d);
  for (int k = 0; k < 2; k++) sbuf_free(&side[k].names);
  return status;
}

int cmd_heap(int argc, char **argv) {
  struct args a = {.report = {.top = TOP_DEFAULT}};
  int status = parse_args(argc, argv, &a);
  if (status >= 0) return status;
  if (a.diff && (a.sides[0].n > 1 || a.sides[1].n > 1)) return diff_sides(&a);
  int n = a.diff ? 2 : 1, loaded = 0;
  struct snapshot s[2];
  if (a.diff && !strcmp(a.input[0], "-") && !strcmp(a.input[1], "-"))
    return usage_error(CMD, "only one snapshot can be standard input");
  while (loaded < n && snapshot_load(&s[loaded], a.input[loaded]) == 0)
    loaded++;
  status = loaded < n ? EXIT_FAILED : EXIT_OK;
  /* Each snapshot joined at its own mark in the one stream. */
  struct heapjoin join[2];
  int joined = 0;
  while (status == EXIT_OK && a.memprof && joined < n &&
         join_memprof(a.memprof, &s[joined], &join[joined]))
    joined++;
  if (joined < n) {
    if (a.memprof && status == EXIT_OK) status = EXIT_FAILED;
    while (joined > 0) heapjoin_free(&join[--joined]);
  }
  FILE *out = loaded < n ? NULL : a.output ? fopen(a.output, "w") : stdout;
  if (loaded == n && !out) {
    fprintf(stderr, "ljprof: %s: %s\n", a.output, strerror(errno));
    status = EXIT_FAILED;
  } else if (out && (write_report(out, s, n, joined ? join : NULL, a.memprof,
                                  &a.report) != 0 ||
                     (a.output && fclose(out) != 0))) {
    fprintf(stderr, "ljprof: %s: write error: %s\n",
            a.output ? a.output : "<stdout>", strerror(errno));
    status = EXIT_FAILED;
  }
  while (joined > 0) heapjoin_free(&join[--joined]);
  for (int i = 0; i < loaded; i++)
    if (snapshot_close(&s[i]) != EXIT_OK) status = EXIT_FAILED;
  return status;
}
