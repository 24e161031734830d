/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "report_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "stream_file.h"

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
  case OPT_TOP:
    if (!parse_top(arg, &opt->top))
      return usage_error(cmd, "--top wants a positive number, not '%s'", arg);
    return -1;
  default:
    return REPORT_OPTION_NOT_MINE;
  }
}

/* What the HTML page of a CPU profile says above its flame graph: the
** JIT's whole story with --jit, else its words when they matter (the
** text report's own, report_jit_*). malloc'd, or NULL. */
static char *jit_note(const char *name, const struct stream_file *f,
                      const struct report_options *opt) {
  struct sysprof_report_input in = {name, &f->sym, &f->sysagg, &f->reader};
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
static int render_profile(FILE *out, const char *name,
                          const struct stream_file *f,
                          const struct report_options *opt) {
  struct profile profile;
  char *note = NULL;
  if (f->kind == STREAM_SYSPROF) {
    profile_from_sysprof(&profile, name, &f->sysagg, &f->reader);
    if (opt->format == REPORT_HTML) profile.note = note = jit_note(name, f, opt);
  } else {
    profile_from_memprof(&profile, name, &f->memagg, &f->reader,
                         opt->leak_only, opt->count);
  }
  int written = report_profile(out, &profile, opt->format);
  profile_free(&profile);
  free(note);
  return written;
}

/* Render what was decoded; returns the exit status. */
static int render(FILE *out, const char *name, const char *output,
                  const struct stream_file *f,
                  const struct report_options *opt) {
  int written;
  if (f->kind != STREAM_MEMPROF && f->kind != STREAM_SYSPROF)
    return EXIT_OK; /* nothing to report */
  if (opt->jit && opt->format != REPORT_HTML) {
    struct sysprof_report_input in = {name, &f->sym, &f->sysagg, &f->reader};
    written = opt->format == REPORT_JSON ? report_jit_json(out, &in, opt)
                                         : report_jit_text(out, &in, opt);
  } else if (report_is_profile_format(opt->format)) {
    written = render_profile(out, name, f, opt);
  } else if (f->kind == STREAM_SYSPROF) {
    struct sysprof_report_input in = {name, &f->sym, &f->sysagg, &f->reader};
    written = report_sysprof(out, &in, opt);
  } else {
    struct report_input in = {name, &f->sym, &f->memagg, &f->reader};
    written = report_memprof(out, &in, opt);
  }
  if (written == 0) return EXIT_OK;
  fprintf(stderr, "ljprof: %s: write error: %s\n",
          output ? output : "<stdout>", strerror(errno));
  return EXIT_FAILED;
}

/* --jit reads a CPU profile, as text, JSON or HTML. */
static int check_jit(const char *name, const struct stream_file *f,
                     const struct report_options *opt) {
  if (!opt->jit) return EXIT_OK;
  if (opt->format != REPORT_TEXT && opt->format != REPORT_JSON &&
      opt->format != REPORT_HTML) {
    fprintf(stderr, "ljprof: --jit writes text, json or html, not another "
                    "format\n");
    return EXIT_USAGE;
  }
  if (f->kind == STREAM_MEMPROF) {
    fprintf(stderr, "ljprof: %s: --jit is for CPU profiles (sysprof), this "
                    "is a memory profile\n", name);
    return EXIT_USAGE;
  }
  return EXIT_OK;
}

int report_file(const char *input, const char *output,
                const struct report_options *opt) {
  int stdin_input = !strcmp(input, "-");
  const char *name = stdin_input ? "<stdin>" : input;
  int fd = stdin_input ? STDIN_FILENO : open(input, O_RDONLY);
  if (fd < 0) {
    fprintf(stderr, "ljprof: %s: %s\n", name, strerror(errno));
    return EXIT_FAILED;
  }
  FILE *out = output ? fopen(output, "w") : stdout;
  if (!out) {
    fprintf(stderr, "ljprof: %s: %s\n", output, strerror(errno));
    if (!stdin_input) close(fd);
    return EXIT_FAILED;
  }

  struct stream_file f;
  stream_file_read(&f, fd);
  int status = check_jit(name, &f, opt);
  if (status == EXIT_OK) status = render(out, name, output, &f, opt);
  if (f.reader.status != READER_OK) {
    fprintf(stderr, "ljprof: %s: %s\n", name, f.reader.err_msg);
    if (status == EXIT_OK) status = EXIT_FAILED;
  }
  if (output && fclose(out) != 0 && status == EXIT_OK) {
    fprintf(stderr, "ljprof: %s: %s\n", output, strerror(errno));
    status = EXIT_FAILED;
  }
  stream_file_free(&f);
  if (!stdin_input) close(fd);
  return status;
}
