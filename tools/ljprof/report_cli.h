/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** What `report` and `record` share: the report options on the command
** line, and reporting a profile file (decode, aggregate, render).
*/
#ifndef LJPROF_REPORT_CLI_H
#define LJPROF_REPORT_CLI_H

#include <getopt.h>

#include "lib/render/report.h"

/* getopt_long values of the report options. */
enum {
  OPT_FORMAT = 256,
  OPT_LEAK_ONLY,
  OPT_HUMAN,
  OPT_SORT,
  OPT_TOP,
  OPT_COUNT,
  OPT_JIT,
  OPT_ROOT,
  OPT_LABEL,
  OPT_LABEL_BY,
  OPT_LABEL_FRAMES,
  OPT_REPORT_LAST /* a command's own options start here */
};

/* The report options' entries of a getopt_long table. */
#define REPORT_LONG_OPTIONS                                   \
  {"format", required_argument, NULL, OPT_FORMAT},            \
      {"leak-only", no_argument, NULL, OPT_LEAK_ONLY},        \
      {"human-readable", no_argument, NULL, OPT_HUMAN},       \
      {"sort", required_argument, NULL, OPT_SORT},            \
      {"top", required_argument, NULL, OPT_TOP},              \
      {"count", required_argument, NULL, OPT_COUNT},          \
      {"jit", no_argument, NULL, OPT_JIT},                    \
      {"root", required_argument, NULL, OPT_ROOT},            \
      {"label", required_argument, NULL, OPT_LABEL},          \
      {"label-frames", required_argument, NULL, OPT_LABEL_FRAMES}

/* report's and record's --by=KEY (diff's --by is its own: site or stack,
** its split by label --by-label=KEY). */
#define REPORT_BY_OPTION {"by", required_argument, NULL, OPT_LABEL_BY}

/* Their help lines. */
#define REPORT_OPTIONS_HELP                                                   \
  "  --format=FORMAT     text (default), json, or a profile for other tools:\n" \
  "                      collapsed (flamegraph.pl), pprof (go tool pprof),\n"  \
  "                      speedscope, html (a self-contained flame graph)\n"   \
  "  --top=N             at most N entries in each section\n"                 \
  "  --leak-only         memprof: only what each site still holds at the end\n" \
  "  --human-readable    memprof: sizes in B, KiB, MiB, GiB\n"                \
  "  --sort=bytes|events memprof: order of locations (default: bytes); a\n"  \
  "                      sysprof text report ranks by self and by total\n"   \
  "  --count=bytes|events memprof profiles: what collapsed, speedscope and\n" \
  "                      html weigh sites by (default: bytes); allocated, or\n" \
  "                      in use at the end with --leak-only\n"            \
  "  --jit               sysprof: the JIT's story (text, json, html): time by\n" \
  "                      what ran, compiler time by trace start and outcome,\n" \
  "                      interpreted lines and why, hot exits, flushes\n" \
  "  --root=process      collapsed, several streams: each stack under a\n"  \
  "                      root frame naming its process (pid, host) or file\n" \
  "  --label=KEY=VALUE   only the samples or events carrying that label;\n" \
  "                      repeated, all must hold; KEY= an empty value,\n"   \
  "                      KEY alone: the key absent; %%XX stands for a byte\n" \
  "  --label-frames=KEY  collapsed, speedscope, html, pprof: each stack\n"  \
  "                      under a root frame, its value of label KEY\n"

#define REPORT_OPTIONS_DEFAULT \
  {REPORT_TEXT, ORDER_BYTES, 0, 0, 0, ORDER_BYTES, 0, 0, NULL, 0, NULL, NULL, 0, 0}

/* report's and record's help line of --by. */
#define REPORT_BY_HELP                                                       \
  "  --by=KEY            text: a report for each value of label KEY, and\n" \
  "                      (none) for what lacks it (FILEs read once each)\n"

#define REPORT_OPTION_NOT_MINE (-2)

/*
** Apply option c (a getopt_long value) to opt. Returns -1 if it was a good
** report option, REPORT_OPTION_NOT_MINE if it is not a report option, or
** EXIT_USAGE (the error written, for the command cmd).
*/
/*
** getopt_long over argv with the command's short and long options: the
** report options go to report_parse_option(), the others to own(c, argv,
** ud), which returns -1 to go on or the exit status. Returns -1 when all
** were taken, or the exit status.
*/
int parse_options(const char *cmd, int argc, char **argv,
                  const char *shortopts, const struct option *longopts,
                  struct report_options *opt,
                  int (*own)(int c, char **argv, void *ud), void *ud);

/* An option no table of the command took: ':' (its value missing) or an
** unknown one, said on stderr; EXIT_USAGE. */
int option_error(const char *cmd, int c, char **argv);

int report_parse_option(const char *cmd, int c, const char *arg,
                        struct report_options *opt);

/*
** Report the profile file input ("-": stdin) to output (NULL: stdout).
** Returns the exit status: EXIT_OK, or EXIT_FAILED (damage, I/O; the
** report of what came before damage is written).
*/
int report_file(const char *input, const char *output,
                const struct report_options *opt);

/* The same for the files inputs[0 .. n) merged into one profile
** (stream_set.h); EXIT_USAGE, and no report, when they do not merge. */
int report_files(const char *const *inputs, size_t n, const char *output,
                 const struct report_options *opt);

#endif
