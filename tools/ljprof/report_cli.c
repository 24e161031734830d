#include "report_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "lib/memagg.h"
#include "lib/stream.h"
#include "lib/sysagg.h"

#define READ_BUFFER_SIZE (1u << 20)

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

int report_parse_option(const char *cmd, int c, const char *arg,
                        struct report_options *opt) {
  switch (c) {
  case OPT_FORMAT:
    if (!strcmp(arg, "text"))
      opt->format = REPORT_TEXT;
    else if (!strcmp(arg, "json"))
      opt->format = REPORT_JSON;
    else if (!strcmp(arg, "collapsed"))
      opt->format = REPORT_COLLAPSED;
    else
      return usage_error(cmd, "unknown format '%s' (text, json or collapsed)",
                         arg);
    return -1;
  case OPT_LEAK_ONLY:
    opt->leak_only = 1;
    return -1;
  case OPT_HUMAN:
    opt->human = 1;
    return -1;
  case OPT_SORT:
    if (!strcmp(arg, "bytes"))
      opt->order = ORDER_BYTES;
    else if (!strcmp(arg, "events"))
      opt->order = ORDER_EVENTS;
    else
      return usage_error(cmd, "unknown sort key '%s' (bytes or events)", arg);
    return -1;
  case OPT_TOP:
    if (!parse_top(arg, &opt->top))
      return usage_error(cmd, "--top wants a positive number, not '%s'", arg);
    return -1;
  default:
    return REPORT_OPTION_NOT_MINE;
  }
}

/* Render what was decoded; returns the exit status. */
static int render(enum stream_kind kind, FILE *out, const char *name,
                  const char *output, const struct reader *r,
                  const struct symbols *sym, struct memagg *memagg,
                  const struct sysagg *sysagg,
                  const struct report_options *opt) {
  int written;
  if (kind == STREAM_SYSPROF) {
    struct sysprof_report_input in = {name, sym, sysagg, r};
    written = report_sysprof(out, &in, opt);
  } else if (kind == STREAM_MEMPROF && opt->format == REPORT_COLLAPSED) {
    fprintf(stderr,
            "ljprof: %s: --format=collapsed needs a sysprof stream (this is "
            "a memprof stream; use text or json)\n",
            name);
    return EXIT_USAGE;
  } else if (kind == STREAM_MEMPROF) {
    memagg_finish(memagg);
    struct report_input in = {name, sym, memagg, r};
    written = report_memprof(out, &in, opt);
  } else {
    return EXIT_OK; /* no profiler stream: nothing to report */
  }
  if (written == 0) return EXIT_OK;
  fprintf(stderr, "ljprof: %s: write error: %s\n",
          output ? output : "<stdout>", strerror(errno));
  return EXIT_FAILED;
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

  struct reader r;
  struct symbols sym;
  struct memagg memagg;
  struct sysagg sysagg;
  reader_init_fd(&r, fd, READ_BUFFER_SIZE);
  symbols_init(&sym);
  memagg_init(&memagg, &sym);
  sysagg_init(&sysagg, &sym);
  struct stream_sinks sinks = {
      .memprof = {memagg_events, &memagg},
      .sysprof = {sysagg_sample, &sysagg, &sysagg.meta}};
  enum stream_kind kind = stream_read(&r, &sym, &sinks);

  int status =
      render(kind, out, name, output, &r, &sym, &memagg, &sysagg, opt);
  if (r.status != READER_OK) {
    fprintf(stderr, "ljprof: %s: %s\n", name, r.err_msg);
    if (status == EXIT_OK) status = EXIT_FAILED;
  }
  if (output && fclose(out) != 0 && status == EXIT_OK) {
    fprintf(stderr, "ljprof: %s: %s\n", output, strerror(errno));
    status = EXIT_FAILED;
  }
  sysagg_free(&sysagg);
  memagg_free(&memagg);
  symbols_free(&sym);
  reader_free(&r);
  if (!stdin_input) close(fd);
  return status;
}
