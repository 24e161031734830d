/*
** ljprof: profiling tools for LuaJIT. This file dispatches subcommands;
** each lives in its own cmd_*.c file.
*/
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
     "run a Lua script under the memory or CPU profiler, then report"},
    {"report", cmd_report,
     "turn a memprof or sysprof stream into a report (text, JSON, "
     "collapsed, pprof, speedscope, HTML)"},
};

#define NCOMMANDS (sizeof commands / sizeof *commands)

static void usage(FILE *out) {
  fprintf(out, "Usage: ljprof COMMAND [OPTIONS] [ARGS]\n\nCommands:\n");
  for (size_t i = 0; i < NCOMMANDS; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\n'ljprof COMMAND --help' tells more about a command.\n\n"
          "Examples:\n"
          "  ljprof record --mem -- app.lua\n"
          "  ljprof record --cpu --interval=1 -- bench.lua\n"
          "  ljprof report memprof.bin\n"
          "  ljprof report --leak-only --human-readable memprof.bin\n"
          "  ljprof report --format=json -o report.json memprof.bin\n"
          "  ljprof report --format=collapsed sysprof.bin | flamegraph.pl "
          ">cpu.svg\n");
}

int usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "ljprof %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see 'ljprof %s --help')\n", cmd);
  return EXIT_USAGE;
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
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (!strcmp(name, commands[i].name))
      return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "ljprof: unknown command '%s' (see 'ljprof --help')\n", name);
  return EXIT_USAGE;
}
