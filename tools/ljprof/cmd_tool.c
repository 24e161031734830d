/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** ljprof -t<tool> [OPTIONS] FILE, which `luajit -t<tool>` runs: the
** reference's tools flag. -tm reports a memprof stream, -ts a sysprof
** stream, in the shape of the reference's parsers, with their options and
** their error lines: "Failed to open FILE.", "Failed to parse symtab from
** FILE." (not a profile, or damaged in its symbol table) and "Failed to
** parse profile data from FILE." (no profiler stream after the symbol
** table, the other tool's kind, damage), each followed by a tab and why.
** Damage past the start of the events still gets the report of what came
** before it, as `ljprof report` does.
**
** Exit status: 0, 1 (a file that cannot be read, a damaged stream, a
** failed write), 2 (a bad command line, no tool or an unknown one).
*/
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "lib/render/report.h"
#include "stream_file.h"

enum { OPT_LEAK_ONLY = 256, OPT_HUMAN };

static const struct option memprof_options[] = {
    {"leak-only", no_argument, NULL, OPT_LEAK_ONLY},
    {"human-readable", no_argument, NULL, OPT_HUMAN},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const struct option sysprof_options[] = {
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

struct tool {
  const char *flag; /* as typed: "-tm" */
  enum stream_kind kind;
  const char *stream; /* the kind's name */
  const char *synopsis; /* its options and FILE */
  const char *what;
  const char *options_help;
  const struct option *options;
};

static const struct tool tools[] = {
    {"-tm", STREAM_MEMPROF, "memprof", "[--leak-only] [--human-readable] FILE",
     "a memory profile (memprof): allocations, reallocations and\n"
     "frees by location, most events first, the owners of what reallocations\n"
     "and frees touched (Overrides), and what each location still holds at\n"
     "the end (HEAP SUMMARY)",
     "  --leak-only         only the HEAP SUMMARY\n"
     "  --human-readable    sizes in B, KiB, MiB, GiB (default: bytes, NB)\n",
     memprof_options},
    {"-ts", STREAM_SYSPROF, "sysprof", "FILE",
     "a platform profile (sysprof): collapsed stacks, one line per\n"
     "distinct stack, frames outermost first joined by ';', then its samples\n"
     "(the input of flamegraph.pl)",
     "", sysprof_options},
};

#define NTOOLS (sizeof tools / sizeof *tools)

/* The tool of a profiler stream's kind (memprof or sysprof). */
static const struct tool *tool_reading(enum stream_kind kind) {
  size_t i = 0;
  while (tools[i].kind != kind) i++;
  return &tools[i];
}

/* The tools, for a command line that names none of them. */
static int list_tools(const char *flag) {
  if (flag[2])
    fprintf(stderr, "%s %s: unknown tool '%s'\n", program_name, flag,
            flag + 2);
  else
    fprintf(stderr, "%s -t: which tool?\n", program_name);
  fputs("Available tools:\n", stderr);
  for (size_t i = 0; i < NTOOLS; i++)
    fprintf(stderr, "  %s %s %s\n", program_name, tools[i].flag,
            tools[i].synopsis);
  fprintf(stderr, "'%s -t<tool> --help' tells more about a tool.\n",
          program_name);
  return EXIT_USAGE;
}

static void usage(const struct tool *tool) {
  printf("Usage: %s %s %s\n\nReport %s.\n\nOptions:\n%s"
         "  -h, --help          show this help\n\n"
         "Errors: 'Failed to open FILE.', 'Failed to parse symtab from FILE.'\n"
         "or 'Failed to parse profile data from FILE.', then why; exit 1.\n"
         "'ljprof report FILE' gives a fuller report.\n",
         program_name, tool->flag, tool->synopsis, tool->what,
         tool->options_help);
}

/* "Failed to ... FILE." and why, on stderr; EXIT_FAILED. */
static int failed(const char *what, const char *path, const char *why) {
  fprintf(stderr, "Failed to %s %s.\n\t%s\n", what, path, why);
  return EXIT_FAILED;
}

static int render(FILE *out, const char *path, const struct tool *tool,
                  const struct stream_file *f,
                  const struct report_options *opt) {
  if (tool->kind == STREAM_MEMPROF) {
    struct report_input in = {path, &f->sym, &f->memagg, &f->reader, NULL};
    return report_memprof_reference(out, &in, opt);
  }
  struct profile profile;
  profile_from_sysprof(&profile, path, &f->sysagg, &f->reader);
  profile_fold_labels(&profile); /* one line per stack, as the reference's */
  int written = report_collapsed(out, &profile);
  profile_free(&profile);
  return written;
}

static int report(const char *path, const struct tool *tool,
                  const struct report_options *opt) {
  FILE *in = fopen(path, "rb");
  if (!in) {
    char why[128];
    snprintf(why, sizeof why, "fopen, errno: %d (%s)", errno, strerror(errno));
    return failed("open", path, why);
  }
  struct stream_file f;
  stream_file_read(&f, fileno(in));
  int status = EXIT_OK;
  if (f.kind == STREAM_UNKNOWN) {
    status = failed("parse symtab from", path, f.reader.err_msg);
  } else if (f.kind == STREAM_SYMTAB) {
    status = failed("parse profile data from", path, f.reader.err_msg);
  } else if (f.kind != tool->kind) {
    const struct tool *other = tool_reading(f.kind);
    char why[96];
    snprintf(why, sizeof why, "a %s stream, not a %s one: read it with %s",
             other->stream, tool->stream, other->flag);
    status = failed("parse profile data from", path, why);
  } else {
    if (render(stdout, path, tool, &f, opt) != 0) {
      fprintf(stderr, "%s %s: write error: %s\n", program_name, tool->flag,
              strerror(errno));
      status = EXIT_FAILED;
    }
    if (f.reader.status != READER_OK)
      status = failed("parse profile data from", path, f.reader.err_msg);
  }
  stream_file_free(&f);
  fclose(in);
  return status;
}

int cmd_tool(int argc, char **argv) {
  const char *flag = argv[0];
  const struct tool *tool = NULL;
  for (size_t i = 0; i < NTOOLS; i++)
    if (!strcmp(flag, tools[i].flag)) tool = &tools[i];
  if (!tool)
    return list_tools(flag);

  struct report_options opt = {.format = REPORT_TEXT};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", tool->options, NULL)) != -1) {
    switch (c) {
    case OPT_LEAK_ONLY:
      opt.leak_only = 1;
      break;
    case OPT_HUMAN:
      opt.human = 1;
      break;
    case 'h':
      usage(tool);
      return EXIT_OK;
    default:
      return usage_error(flag, "unrecognized option '%s'", argv[optind - 1]);
    }
  }
  const char *path;
  int status = single_file(flag, argc, argv, &path);
  return status >= 0 ? status : report(path, tool, &opt);
}
