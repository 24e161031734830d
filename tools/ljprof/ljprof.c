/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** ljprof: profiling tools for LuaJIT. This file dispatches subcommands,
** and the -t tools that `luajit -t` runs; each lives in its own cmd_*.c
** file.
*/
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
};

static const struct command commands[] = {
    {"record", cmd_record,
     "run a Lua script under the memory or CPU profiler, or profile a "
     "running process armed by LJPROF (--pid), then report"},
    {"report", cmd_report,
     "turn a memprof or sysprof stream into a report (text, JSON, "
     "collapsed, pprof, speedscope, HTML)"},
    {"diff", cmd_diff,
     "compare two memory or two CPU profiles: what grew and what shrank, "
     "by site or stack (text, HTML)"},
    {"heap", cmd_heap,
     "who holds the memory in a heap snapshot: retained sizes, the "
     "shortest path to each retainer (text, JSON)"},
};

#define NCOMMANDS (sizeof commands / sizeof *commands)

const char *program_name = "ljprof";

static void usage(FILE *out) {
  fprintf(out, "Usage: ljprof COMMAND [OPTIONS] [ARGS]\n"
               "       ljprof -t<tool> [OPTIONS] FILE\n\nCommands:\n");
  for (size_t i = 0; i < NCOMMANDS; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\nTools, what `luajit -t<tool>` runs (the reference's tools flag\n"
          "and its output):\n"
          "  -tm        a memprof stream: ALLOCATIONS, REALLOCATIONS,\n"
          "             DEALLOCATIONS, HEAP SUMMARY (--leak-only,\n"
          "             --human-readable)\n"
          "  -ts        a sysprof stream: collapsed stacks\n"
          "\n'ljprof COMMAND --help' and 'ljprof -t<tool> --help' tell more.\n\n"
          "Examples:\n"
          "  ljprof record --mem -- app.lua\n"
          "  ljprof record --cpu --interval=1 -- bench.lua\n"
          "  ljprof report memprof.bin\n"
          "  ljprof report --leak-only --human-readable memprof.bin\n"
          "  ljprof report --format=json -o report.json memprof.bin\n"
          "  ljprof report --format=collapsed sysprof.bin | flamegraph.pl "
          ">cpu.svg\n"
          "  ljprof report --by=route cpu.bin      (labels: a report per route)\n"
          "  ljprof diff before.bin after.bin\n"
          "  ljprof heap heapsnap.bin\n");
}

int usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s %s: ", program_name, cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see '%s %s --help')\n", program_name, cmd);
  return EXIT_USAGE;
}

int single_file(const char *cmd, int argc, char **argv, const char **file) {
  if (optind == argc) return usage_error(cmd, "no FILE given");
  if (argc - optind > 1)
    return usage_error(cmd, "one FILE at a time ('%s' is one too many)",
                       argv[optind + 1]);
  *file = argv[optind];
  return -1;
}

int sides_separator(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--")) return i;
  return argc;
}

int two_sides(const char *cmd, int argc, char **argv, int sep,
              struct file_list sides[2], const char *what) {
  const char *const *files = (const char *const *)argv;
  if (sep == argc) {
    if (argc - optind != 2) return usage_error(cmd, "wants %s", what);
    sides[0] = (struct file_list){files + optind, 1};
    sides[1] = (struct file_list){files + optind + 1, 1};
    return -1;
  }
  if (sep == optind || sep + 1 == argc)
    return usage_error(cmd, "wants files on both sides of '--'");
  sides[0] = (struct file_list){files + optind, (size_t)(sep - optind)};
  sides[1] = (struct file_list){files + sep + 1, (size_t)(argc - sep - 1)};
  size_t from_stdin = 0;
  for (int i = optind; i < argc; i++) from_stdin += !strcmp(argv[i], "-");
  if (from_stdin > 1)
    return usage_error(cmd, "'-' (stdin) can be read once");
  return -1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  const char *name = argv[1];
  if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
    usage(stdout);
    return EXIT_OK;
  }
  if (!strncmp(name, "-t", 2)) {
    const char *slash = strrchr(argv[0], '/');
    const char *base = slash ? slash + 1 : argv[0];
    if (*base) program_name = base;
    return cmd_tool(argc - 1, argv + 1);
  }
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (!strcmp(name, commands[i].name))
      return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "ljprof: unknown command '%s' (see 'ljprof --help')\n", name);
  return EXIT_USAGE;
}
