/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "report_cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "stream_set.h"

static const struct {
  const char *name;
  enum report_format format;
} formats[] = {{"text", REPORT_TEXT},
               {"json", REPORT_JSON},
               {"collapsed", REPORT_COLLAPSED},
               {"pprof", REPORT_PPROF},
               {"speedscope", REPORT_SPEEDSCOPE},
               {"html", REPORT_HTML}};

static int parse_format(const char *name, enum report_format *format) {
  for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
    if (!strcmp(name, formats[i].name)) {
      *format = formats[i].format;
      return 1;
    }
  return 0;
}

static int parse_bytes_or_events(const char *text, enum memagg_order *key) {
  if (!strcmp(text, "bytes"))
    *key = ORDER_BYTES;
  else if (!strcmp(text, "events"))
    *key = ORDER_EVENTS;
  else
    return 0;
  return 1;
}

static int parse_top(const char *text, size_t *top) {
  char *end;
  errno = 0;
  unsigned long long n = strtoull(text, &end, 10);
  if (errno || end == text || *end || n == 0 || text[0] == '-' ||
      n > SIZE_MAX)
    return 0;
  *top = (size_t)n;
  return 1;
}

int parse_options(const char *cmd, int argc, char **argv,
                  const char *shortopts, const struct option *longopts,
                  struct report_options *opt,
                  int (*own)(int c, char **argv, void *ud), void *ud) {
  optind = 1;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1;) {
    int status = report_parse_option(cmd, c, optarg, opt);
    if (status == REPORT_OPTION_NOT_MINE) status = own(c, argv, ud);
    if (status >= 0) return status;
  }
  return -1;
}

int option_error(const char *cmd, int c, char **argv) {
  if (c == ':')
    return usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
  return usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}

int report_parse_option(const char *cmd, int c, const char *arg,
                        struct report_options *opt) {
  switch (c) {
  case OPT_FORMAT:
    if (!parse_format(arg, &opt->format))
      return usage_error(cmd,
                         "unknown format '%s' (text, json, collapsed, pprof, "
                         "speedscope or html)",
                         arg);
    return -1;
  case OPT_LEAK_ONLY:
    opt->leak_only = 1;
    return -1;
  case OPT_HUMAN:
    opt->human = 1;
    return -1;
  case OPT_SORT:
    if (!parse_bytes_or_events(arg, &opt->order))
      return usage_error(cmd, "unknown sort key '%s' (bytes or events)", arg);
    return -1;
  case OPT_COUNT:
    if (!parse_bytes_or_events(arg, &opt->count))
      return usage_error(cmd, "unknown count '%s' (bytes or events)", arg);
    return -1;
  case OPT_JIT:
    opt->jit = 1;
    return -1;
  case OPT_ROOT:
    if (strcmp(arg, "process"))
      return usage_error(cmd, "unknown root '%s' (process)", arg);
    opt->root_origin = 1;
    return -1;
  case OPT_TOP:
    if (!parse_top(arg, &opt->top))
      return usage_error(cmd, "--top wants a positive number, not '%s'", arg);
    return -1;
  default:
    return REPORT_OPTION_NOT_MINE;
  }
}

/* The sysprof renderers' input: the set's CPU aggregation. */
static struct sysprof_report_input sysprof_input(const struct stream_set *set) {
  return (struct sysprof_report_input){set->source, &set->sym, &set->sysagg,
                                       &set->damage, &set->origins};
}

/* What the HTML page of a CPU profile says above its flame graph: the
** JIT's whole story with --jit, else its words when they matter (the
** text report's own, report_jit_*). malloc'd, or NULL. */
static char *jit_note(const struct stream_set *set,
                      const struct report_options *opt) {
  struct sysprof_report_input in = sysprof_input(set);
  char *note = NULL;
  size_t len;
  FILE *m = open_memstream(&note, &len);
  if (!m) return NULL;
  if (opt->jit)
    report_jit_text(m, &in, opt);
  else
    report_jit_says(m, &in);
  fclose(m);
  return note;
}

/* A profile for other tools, of either kind of stream. */
static int render_profile(FILE *out, const struct stream_set *set,
                          const struct report_options *opt) {
  struct profile profile;
  char *note = NULL;
  stream_set_profile(&profile, set, opt->leak_only, opt->count);
  if (set->kind == STREAM_SYSPROF && opt->format == REPORT_HTML)
    profile.note = note = jit_note(set, opt);
  profile.root_origin = opt->root_origin;
  if (origins_merged(&set->origins) && opt->format != REPORT_PPROF &&
      !opt->root_origin)
    profile_fold_streams(&profile);
  int written = report_profile(out, &profile, opt->format);
  profile_free(&profile);
  free(note);
  return written;
}

/* Render what was decoded; returns the exit status. */
static int render(FILE *out, const char *output, const struct stream_set *set,
                  const struct report_options *opt) {
  int written;
  if (set->kind != STREAM_MEMPROF && set->kind != STREAM_SYSPROF)
    return EXIT_OK; /* nothing to report */
  struct sysprof_report_input in = sysprof_input(set);
  if (opt->jit && opt->format != REPORT_HTML) {
    written = opt->format == REPORT_JSON ? report_jit_json(out, &in, opt)
                                         : report_jit_text(out, &in, opt);
  } else if (report_is_profile_format(opt->format)) {
    written = render_profile(out, set, opt);
  } else if (set->kind == STREAM_SYSPROF) {
    written = report_sysprof(out, &in, opt);
  } else {
    struct report_input mem = {set->source, &set->sym, &set->memagg,
                               &set->damage, &set->origins};
    written = report_memprof(out, &mem, opt);
  }
  if (written == 0) return EXIT_OK;
  fprintf(stderr, "ljprof: %s: write error: %s\n",
          output ? output : "<stdout>", strerror(errno));
  return EXIT_FAILED;
}

/* --jit reads a CPU profile, as text, JSON or HTML. */
static int check_jit(const struct stream_set *set,
                     const struct report_options *opt) {
  if (!opt->jit) return EXIT_OK;
  if (opt->format != REPORT_TEXT && opt->format != REPORT_JSON &&
      opt->format != REPORT_HTML) {
    fprintf(stderr, "ljprof: --jit writes text, json or html, not another "
                    "format\n");
    return EXIT_USAGE;
  }
  if (set->kind == STREAM_MEMPROF) {
    fprintf(stderr, "ljprof: %s: --jit is for CPU profiles (sysprof), this "
                    "is a memory profile\n", set->source);
    return EXIT_USAGE;
  }
  return EXIT_OK;
}

int report_files(const char *const *inputs, size_t n, const char *output,
                 const struct report_options *opt) {
  struct stream_set set;
  int status = stream_set_read(&set, inputs, n);
  if (status != EXIT_USAGE && set.opened) {
    FILE *out = output ? fopen(output, "w") : stdout;
    if (!out) {
      fprintf(stderr, "ljprof: %s: %s\n", output, strerror(errno));
      stream_set_free(&set);
      return EXIT_FAILED;
    }
    int s = check_jit(&set, opt);
    if (s == EXIT_OK) s = render(out, output, &set, opt);
    if (s != EXIT_OK) status = s;
    if (output && fclose(out) != 0 && status == EXIT_OK) {
      fprintf(stderr, "ljprof: %s: %s\n", output, strerror(errno));
      status = EXIT_FAILED;
    }
  }
  stream_set_free(&set);
  return status;
}

int report_file(const char *input, const char *output,
                const struct report_options *opt) {
  return report_files(&input, 1, output, opt);
}
