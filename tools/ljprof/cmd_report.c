/*
** ljprof report: decode a profile file and write a report of it.
*/
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "lib/memagg.h"
#include "lib/report.h"
#include "lib/stream.h"

#define CMD "report"
#define READ_BUFFER_SIZE (1u << 20)

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ljprof report [OPTIONS] FILE\n"
          "\n"
          "Read a profile stream (a symbol table followed by a memprof stream,\n"
          "as the memory profiler writes it) and report where memory was\n"
          "allocated, reallocated and freed, and what is still allocated at\n"
          "the end. FILE '-' reads standard input.\n"
          "\n"
          "Options:\n"
          "  --format=text|json  report format (default: text)\n"
          "  -o, --output=OUT    write the report to OUT (default: stdout)\n"
          "  --leak-only         only what each site still holds at the end\n"
          "  --human-readable    sizes in B, KiB, MiB, GiB\n"
          "  --sort=bytes|events order of locations (default: bytes)\n"
          "  --top=N             at most N locations in each section\n"
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
          "  cat memprof.bin | ljprof report -\n");
}

enum { OPT_FORMAT = 256, OPT_LEAK_ONLY, OPT_HUMAN, OPT_SORT, OPT_TOP };

static const struct option long_options[] = {
    {"format", required_argument, NULL, OPT_FORMAT},
    {"output", required_argument, NULL, 'o'},
    {"leak-only", no_argument, NULL, OPT_LEAK_ONLY},
    {"human-readable", no_argument, NULL, OPT_HUMAN},
    {"sort", required_argument, NULL, OPT_SORT},
    {"top", required_argument, NULL, OPT_TOP},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

struct args {
  struct report_options report;
  const char *input;
  const char *output;
};

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

/* Returns -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, struct args *a) {
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":o:h", long_options, NULL)) != -1) {
    switch (c) {
    case OPT_FORMAT:
      if (!strcmp(optarg, "text"))
        a->report.format = REPORT_TEXT;
      else if (!strcmp(optarg, "json"))
        a->report.format = REPORT_JSON;
      else
        return usage_error(CMD, "unknown format '%s' (text or json)", optarg);
      break;
    case 'o':
      a->output = optarg;
      break;
    case OPT_LEAK_ONLY:
      a->report.leak_only = 1;
      break;
    case OPT_HUMAN:
      a->report.human = 1;
      break;
    case OPT_SORT:
      if (!strcmp(optarg, "bytes"))
        a->report.order = ORDER_BYTES;
      else if (!strcmp(optarg, "events"))
        a->report.order = ORDER_EVENTS;
      else
        return usage_error(CMD, "unknown sort key '%s' (bytes or events)",
                           optarg);
      break;
    case OPT_TOP:
      if (!parse_top(optarg, &a->report.top))
        return usage_error(CMD, "--top wants a positive number, not '%s'",
                           optarg);
      break;
    case 'h':
      usage(stdout);
      return EXIT_OK;
    case ':':
      return usage_error(CMD, "option '%s' needs a value", argv[optind - 1]);
    default:
      return usage_error(CMD, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind == argc) return usage_error(CMD, "no FILE given");
  if (argc - optind > 1)
    return usage_error(CMD, "one FILE at a time ('%s' is one too many)",
                       argv[optind + 1]);
  a->input = argv[optind];
  return -1;
}

int cmd_report(int argc, char **argv) {
  struct args a = {.report = {REPORT_TEXT, ORDER_BYTES, 0, 0, 0}};
  int status = parse_args(argc, argv, &a);
  if (status >= 0) return status;

  int stdin_input = !strcmp(a.input, "-");
  const char *name = stdin_input ? "<stdin>" : a.input;
  int fd = stdin_input ? STDIN_FILENO : open(a.input, O_RDONLY);
  if (fd < 0) {
    fprintf(stderr, "ljprof: %s: %s\n", name, strerror(errno));
    return EXIT_FAILED;
  }
  FILE *out = a.output ? fopen(a.output, "w") : stdout;
  if (!out) {
    fprintf(stderr, "ljprof: %s: %s\n", a.output, strerror(errno));
    if (!stdin_input) close(fd);
    return EXIT_FAILED;
  }

  struct reader r;
  struct symbols sym;
  struct memagg agg;
  reader_init_fd(&r, fd, READ_BUFFER_SIZE);
  symbols_init(&sym);
  memagg_init(&agg, &sym);
  struct stream_sinks sinks = {.memprof = {memagg_events, &agg}};
  enum stream_kind kind = stream_read(&r, &sym, &sinks);

  status = EXIT_OK;
  if (kind == STREAM_MEMPROF) {
    memagg_finish(&agg);
    struct report_input in = {name, &sym, &agg, &r};
    if (report_memprof(out, &in, &a.report) != 0) {
      fprintf(stderr, "ljprof: %s: write error: %s\n",
              a.output ? a.output : "<stdout>", strerror(errno));
      status = EXIT_FAILED;
    }
  }
  if (r.status != READER_OK) {
    fprintf(stderr, "ljprof: %s: %s\n", name, r.err_msg);
    status = EXIT_FAILED;
  }

  if (a.output && fclose(out) != 0 && status == EXIT_OK) {
    fprintf(stderr, "ljprof: %s: %s\n", a.output, strerror(errno));
    status = EXIT_FAILED;
  }
  memagg_free(&agg);
  symbols_free(&sym);
  reader_free(&r);
  if (!stdin_input) close(fd);
  return status;
}
