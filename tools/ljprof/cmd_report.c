/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** ljprof report: decode profile files and write a report of them, one
** profile when they are several.
*/
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "report_cli.h"

#define CMD "report"

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ljprof report [OPTIONS] FILE...\n"
          "\n"
          "Read a profile stream (a symbol table followed by a memprof or a\n"
          "sysprof stream) and report it. Memprof: where memory was\n"
          "allocated, reallocated and freed, and what is still allocated at\n"
          "the end. Sysprof: samples by VM state, functions and lines by\n"
          "self and total samples. Either, as a profile for other tools:\n"
          "collapsed stacks, pprof, speedscope, or an HTML flame graph.\n"
          "\n"
          "Several streams of one kind (a server's workers, the windows of\n"
          "rotate=, one service on several hosts) are merged into one\n"
          "profile, frames by what they name, each sample keeping the stream\n"
          "and process (pid, host) it came from: a table by process (text,\n"
          "json), labels stream, pid and host (pprof), a root frame\n"
          "(collapsed, --root=process). Streams of other kinds, intervals,\n"
          "clocks or memory modes are refused, naming the file. Streams (8\n"
          "MiB in all, or LJPROF_JOBS set) are read on LJPROF_JOBS threads at\n"
          "once (default: the processors online), the report the same. A\n"
          "stream of 4 MiB or more is decoded on one thread and counted on\n"
          "another. LJPROF_JOBS=1: one thread in all, one stream after the\n"
          "other.\n"
          "\n"
          "Streams with labels (sysprof v4, memprof v6: the set a coroutine\n"
          "had in force, route=/api) get a BY LABEL table; --label keeps,\n"
          "--by splits, --label-frames roots stacks by a label; pprof carries\n"
          "them as tags. Keys and values: %%, ;, =, control bytes and bytes\n"
          "not UTF-8 written %%XX, as the options take them.\n"
          "FILE '-' reads standard input.\n"
          "\n"
          "Options:\n" REPORT_OPTIONS_HELP REPORT_BY_HELP
          "  -o, --output=OUT    write the report to OUT (default: stdout)\n"
          "  -h, --help          show this help\n"
          "\n"
          "A damaged (truncated, corrupt) stream is reported up to the damage,\n"
          "the damage is described on stderr, and the exit status is 1.\n"
          "\n"
          "Examples:\n"
          "  ljprof report memprof.bin\n"
          "  ljprof report --leak-only --human-readable memprof.bin\n"
          "  ljprof report --sort=events --top 10 memprof.bin\n"
          "  ljprof report --format=json -o report.json memprof.bin\n"
          "  ljprof report --top 20 sysprof.bin\n"
          "  ljprof report --format=collapsed sysprof.bin | flamegraph.pl >cpu.svg\n"
          "  ljprof report --format=pprof -o cpu.pb.gz sysprof.bin\n"
          "  ljprof report ljprof-cpu-*.bin\n"
          "  ljprof report --format=collapsed --root=process cpu.bin.*\n"
          "  ljprof report --by=route --label=plugin=auth cpu.bin\n"
          "  ljprof report --format=collapsed --label-frames=route cpu.bin\n"
          "  ljprof report --format=html --leak-only -o leaks.html memprof.bin\n"
          "  cat memprof.bin | ljprof report -\n");
}

static const struct option long_options[] = {
    REPORT_LONG_OPTIONS,
    REPORT_BY_OPTION,
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

struct args {
  struct report_options report;
  const char *const *inputs;
  size_t ninputs;
  const char *output;
};

/* Returns -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, struct args *a) {
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":o:h", long_options, NULL)) != -1) {
    int status = report_parse_option(CMD, c, optarg, &a->report);
    if (status != REPORT_OPTION_NOT_MINE) {
      if (status >= 0) return status;
      continue;
    }
    switch (c) {
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
  if (optind == argc) return usage_error(CMD, "no FILE given");
  a->inputs = (const char *const *)argv + optind;
  a->ninputs = (size_t)(argc - optind);
  int from_stdin = 0;
  for (size_t i = 0; i < a->ninputs; i++)
    from_stdin += !strcmp(a->inputs[i], "-");
  if (from_stdin > 1) return usage_error(CMD, "'-' (stdin) can be read once");
  return -1;
}

int cmd_report(int argc, char **argv) {
  struct args a = {.report = REPORT_OPTIONS_DEFAULT};
  int status = parse_args(argc, argv, &a);
  if (status >= 0) return status;
  return report_files(a.inputs, a.ninputs, a.output, &a.report);
}
