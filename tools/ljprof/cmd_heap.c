/*
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
#include "lib/heapreport.h"
#include "report_cli.h"

#define CMD "heap"
#define TOP_DEFAULT 20

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ljprof heap [OPTIONS] SNAPSHOT\n"
          "\n"
          "Read a heap snapshot and report who holds the memory: the live\n"
          "heap by type, the objects that retain the most (the bytes freed\n"
          "if nothing else referenced them: the dominator tree) with the\n"
          "shortest path from a root to each, in Lua's words, and the heap\n"
          "by path pattern (indexes as *), so that one structure is one\n"
          "line. Weak references retain nothing. SNAPSHOT '-' reads\n"
          "standard input.\n"
          "\n"
          "With --memprof, each object gets the allocation that made it,\n"
          "from the memprof stream that ran while the snapshot was taken\n"
          "(version 5: ljprof record --mem --heap, misc.memprof.start with\n"
          "stacks = true or format = \"v5\"): the top retainers say where\n"
          "they were allocated, and a section gives what each allocation\n"
          "site (and call stack) still holds, and at which path.\n"
          "\n"
          "Options:\n"
          "  --format=FORMAT     text (default) or json\n"
          "  --graph             json: every object (size, retained size,\n"
          "                      immediate dominator) and every reference\n"
          "  --top=N             at most N entries in each section (default "
          "20)\n"
          "  --memprof=STREAM    join the memprof stream that ran while the\n"
          "                      snapshot was taken\n"
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
          "  ljprof heap --memprof=memprof.bin heap.bin\n");
}

/* --top is report's own (report_parse_option), --format is not: heap
** has formats of its own. */
enum { OPT_HEAP_FORMAT = OPT_REPORT_LAST, OPT_GRAPH, OPT_MEMPROF };

static const struct option long_options[] = {
    {"format", required_argument, NULL, OPT_HEAP_FORMAT},
    {"graph", no_argument, NULL, OPT_GRAPH},
    {"memprof", required_argument, NULL, OPT_MEMPROF},
    {"top", required_argument, NULL, OPT_TOP},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

struct args {
  struct heapreport_options report;
  const char *input, *output;
  const char *memprof; /* --memprof */
};

static int parse_args(int argc, char **argv, struct args *a) {
  optind = 1;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, ":o:h", long_options, NULL)) != -1;) {
    struct report_options top = REPORT_OPTIONS_DEFAULT;
    int status;
    switch (c) {
    case OPT_HEAP_FORMAT:
      if (!strcmp(optarg, "text"))
        a->report.json = 0;
      else if (!strcmp(optarg, "json"))
        a->report.json = 1;
      else
        return usage_error(CMD, "unknown format '%s' (text or json)", optarg);
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
  return single_file(CMD, argc, argv, &a->input);
}

/* The memprof stream at path joined to snap; 0 (said on stderr) if it
** cannot be: the report goes on without it. */
static int join_memprof(const char *path, const struct heapsnap *snap,
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
  ok = heapjoin_read(join, &r, snap, &err);
  if (!ok)
    fprintf(stderr, "ljprof: %s: cannot join: %s\n", path, sbuf_cstr(&err));
  else if (r.status != READER_OK)
    fprintf(stderr, "ljprof: %s: damaged after the snapshot's mark "
                    "(the join holds): %s\n", path, r.err_msg);
  sbuf_free(&err);
  reader_free(&r);
  close(fd);
  return ok;
}

int cmd_heap(int argc, char **argv) {
  struct args a = {.report = {.top = TOP_DEFAULT}};
  int status = parse_args(argc, argv, &a);
  if (status >= 0) return status;
  int stdin_input = !strcmp(a.input, "-");
  const char *name = stdin_input ? "<stdin>" : a.input;
  int fd = stdin_input ? STDIN_FILENO : open(a.input, O_RDONLY);
  if (fd < 0) {
    fprintf(stderr, "ljprof: %s: %s\n", name, strerror(errno));
    return EXIT_FAILED;
  }
  struct reader r;
  struct heapsnap snap;
  struct heapgraph graph;
  reader_init_fd(&r, fd, 1 << 20);
  heapsnap_read(&r, &snap);
  heapgraph_build(&graph, &snap);
  status = EXIT_OK;
  struct heapjoin join;
  int joined = a.memprof && join_memprof(a.memprof, &snap, &join);
  if (a.memprof && !joined) status = EXIT_FAILED;
  FILE *out = a.output ? fopen(a.output, "w") : stdout;
  if (!out) {
    fprintf(stderr, "ljprof: %s: %s\n", a.output, strerror(errno));
    status = EXIT_FAILED;
  } else {
    struct heapreport_input in = {name, &graph, &r, a.memprof,
                                  joined ? &join : NULL};
    if (heapreport_write(out, &in, &a.report) != 0 ||
        (a.output && fclose(out) != 0)) {
      fprintf(stderr, "ljprof: %s: write error: %s\n",
              a.output ? a.output : "<stdout>", strerror(errno));
      status = EXIT_FAILED;
    }
  }
  if (r.status != READER_OK) {
    fprintf(stderr, "ljprof: %s: %s\n", name, r.err_msg);
    status = EXIT_FAILED;
  }
  if (a.memprof) heapjoin_free(&join);
  heapgraph_free(&graph);
  heapsnap_free(&snap);
  reader_free(&r);
  if (!stdin_input) close(fd);
  return status;
}
