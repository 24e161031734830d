#include "report_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "lib/event_pipe.h"
#include "lib/memagg.h"
#include "lib/stream.h"
#include "lib/sysagg.h"

#define READ_BUFFER_SIZE (1u << 20)

/* Inputs from this size on are aggregated on a second thread. */
#define PIPE_MIN_INPUT (4u << 20)

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
  case OPT_TOP:
    if (!parse_top(arg, &opt->top))
      return usage_error(cmd, "--top wants a positive number, not '%s'", arg);
    return -1;
  default:
    return REPORT_OPTION_NOT_MINE;
  }
}

/* A profile for other tools, of either kind of stream. */
static int render_profile(enum stream_kind kind, FILE *out, const char *name,
                          const struct reader *r, const struct memagg *memagg,
                          const struct sysagg *sysagg,
                          const struct report_options *opt) {
  struct profile profile;
  if (kind == STREAM_SYSPROF)
    profile_from_sysprof(&profile, name, sysagg, r);
  else
    profile_from_memprof(&profile, name, memagg, r, opt->leak_only,
                         opt->count);
  int written = report_profile(out, &profile, opt->format);
  profile_free(&profile);
  return written;
}

/* Render what was decoded; returns the exit status. */
static int render(enum stream_kind kind, FILE *out, const char *name,
                  const char *output, const struct reader *r,
                  struct memagg *memagg, const struct sysagg *sysagg,
                  const struct report_options *opt) {
  int written;
  if (kind == STREAM_UNKNOWN) return EXIT_OK; /* nothing to report */
  if (kind == STREAM_MEMPROF) memagg_finish(memagg);
  if (report_is_profile_format(opt->format)) {
    written = render_profile(kind, out, name, r, memagg, sysagg, opt);
  } else if (kind == STREAM_SYSPROF) {
    struct sysprof_report_input in = {name, sysagg->sym, sysagg, r};
    written = report_sysprof(out, &in, opt);
  } else {
    struct report_input in = {name, memagg->sym, memagg, r};
    written = report_memprof(out, &in, opt);
  }
  if (written == 0) return EXIT_OK;
  fprintf(stderr, "ljprof: %s: write error: %s\n",
          output ? output : "<stdout>", strerror(errno));
  return EXIT_FAILED;
}

/*
** Is the input long enough for a second thread to pay (or of unknown
** length: a pipe)? Short ones are read on one thread, without the cost of
** starting another.
*/
static int worth_a_thread(int fd) {
  struct stat st;
  return fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
         st.st_size >= PIPE_MIN_INPUT;
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
  /* On two threads, the counters by site are kept on the decoder's: the
  ** other thread's share, the live blocks, is the larger. */
  struct memprof_sink sites = {memagg_count_sites, &memagg};
  struct memprof_sink owners = {memagg_count_owners, &memagg};
  struct event_pipe *pipe =
      worth_a_thread(fd) ? event_pipe_start(&sites, &owners) : NULL;
  struct stream_sinks sinks = {
      .memprof = pipe ? event_pipe_sink(pipe)
                      : (struct memprof_sink){memagg_events, &memagg},
      .sysprof = {sysagg_sample, &sysagg, &sysagg.meta}};
  enum stream_kind kind = stream_read(&r, &sym, &sinks);
  if (pipe) event_pipe_finish(pipe);

  int status = render(kind, out, name, output, &r, &memagg, &sysagg, opt);
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
