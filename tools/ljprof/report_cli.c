/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "report_cli.h"

#include <errno.h>
#include <inttypes.h>
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

/* The terms of --label, their bytes unescaped in place (in argv). */
#define REPORT_LABELS_MAX 16
static struct labelterm label_terms[REPORT_LABELS_MAX];

/* Unescape the text at s (of *len bytes) in place; 0 if malformed. */
static int unescape_in_place(char *s, size_t *len) {
  struct sbuf sb = {0};
  int ok = labels_unescape(&sb, s, *len);
  if (ok) {
    if (sb.len) memcpy(s, sb.data, sb.len);
    *len = sb.len;
  }
  sbuf_free(&sb);
  return ok;
}

static int parse_label(const char *cmd, char *arg, struct report_options *opt) {
  if (opt->nlabels == REPORT_LABELS_MAX)
    return usage_error(cmd, "at most %d --label options", REPORT_LABELS_MAX);
  struct labelterm *t = &label_terms[opt->nlabels];
  char *eq = strchr(arg, '=');
  *t = (struct labelterm){.key = arg, .key_len = eq ? (size_t)(eq - arg)
                                                    : strlen(arg)};
  if (eq) {
    t->value = eq + 1;
    t->value_len = strlen(eq + 1);
  }
  if (!unescape_in_place(arg, &t->key_len) ||
      (eq && !unescape_in_place(eq + 1, &t->value_len)))
    return usage_error(cmd, "--label '%s': '%%' wants two hexadecimal digits",
                       arg);
  if (!t->key_len) return usage_error(cmd, "--label wants KEY=VALUE or KEY");
  opt->labels = label_terms;
  opt->nlabels++;
  return -1;
}

/* --by or --label-frames: a key. */
static int parse_key(const char *cmd, const char *what, char *arg,
                     const char **key, size_t *len) {
  *key = arg;
  *len = strlen(arg);
  if (!unescape_in_place(arg, len))
    return usage_error(cmd, "%s '%s': '%%' wants two hexadecimal digits",
                       what, arg);
  if (!*len) return usage_error(cmd, "%s wants a label's key", what);
  return -1;
}

int report_parse_option(const char *cmd, int c, const char *arg,
                        struct report_options *opt) {
  switch (c) {
  case OPT_LABEL:
    return parse_label(cmd, (char *)arg, opt);
  case OPT_LABEL_BY:
    return parse_key(cmd, "--by", (char *)arg, &opt->by, &opt->by_len);
  case OPT_LABEL_FRAMES:
    return parse_key(cmd, "--label-frames", (char *)arg, &opt->label_frames,
                     &opt->label_frames_len);
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
static int render_profile(FILE *out, struct stream_set *set,
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
  /* Label sets: pprof's labels, the HTML page's selector; a root frame
  ** with --label-frames; the other formats tell none apart. */
  if (opt->label_frames)
    profile_label_frames(&profile, &set->sym,
                         symbols_intern(&set->sym, opt->label_frames,
                                        opt->label_frames_len));
  if (opt->format != REPORT_PPROF && opt->format != REPORT_HTML)
    profile_fold_labels(&profile);
  int written = report_profile(out, &profile, opt->format);
  profile_free(&profile);
  free(note);
  return written;
}

/* Render what was decoded; returns the exit status. */
static int render(FILE *out, const char *output, struct stream_set *set,
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

/* The terms of --label and one more: key's value in a row of --by. */
static struct labelterm *part_terms(const struct report_options *opt,
                                    const struct symbols *sym,
                                    const struct labelrow *row) {
  struct labelterm *terms = xmalloc((opt->nlabels + 1) * sizeof *terms);
  if (opt->nlabels) memcpy(terms, opt->labels, opt->nlabels * sizeof *terms);
  struct labelterm *t = &terms[opt->nlabels];
  *t = (struct labelterm){.key = opt->by, .key_len = opt->by_len,
                          .other = row->value == LABEL_VALUE_OTHER};
  if (row->value < LABEL_VALUE_OTHER) {
    t->value = sym->strings[row->value].data;
    t->value_len = sym->strings[row->value].len;
  }
  return terms;
}

/* --by: the rows of the key in what all carry, then a report of each. */
static int render_parts(FILE *out, const char *output, struct stream_set *set,
                        const char *const *inputs, size_t n,
                        const struct report_options *opt) {
  struct labeltable table;
  uint32_t key = symbols_intern(&set->sym, opt->by, opt->by_len);
  if (set->kind == STREAM_SYSPROF)
    labeltable_cpu(&table, &set->sysagg, key);
  else
    labeltable_memory(&table, &set->memagg, opt->leak_only, key);
  int status = EXIT_OK;
  struct sbuf head = {0};
  if (!table.n) {
    fprintf(out, "BY LABEL: no samples or events carry label ");
    sbuf_reset(&head);
    labels_escape(&head, opt->by, opt->by_len);
    fwrite(head.data, 1, head.len, out);
    fprintf(out, "\n");
  }
  for (size_t i = 0; i < table.n && status == EXIT_OK; i++) {
    const struct labelrow *row = &table.rows[i];
    struct labelterm *terms = part_terms(opt, &set->sym, row);
    sbuf_reset(&head);
    sbuf_printf(&head, "%sBY LABEL ", i ? "\n" : "");
    labels_escape(&head, opt->by, opt->by_len);
    sbuf_add(&head, "=", 1);
    labels_format_value(&set->sym, row->value, &head);
    sbuf_printf(&head, ": %" PRIu64 " %s of %" PRIu64 "\n", row->total,
                set->kind == STREAM_SYSPROF ? "samples" : "bytes",
                table.total);
    fwrite(head.data, 1, head.len, out);
    struct stream_set part;
    status = stream_set_read(&part, inputs, n, terms, opt->nlabels + 1);
    if (status != EXIT_USAGE) status = render(out, output, &part, opt);
    stream_set_free(&part);
    free(terms);
  }
  sbuf_free(&head);
  labeltable_free(&table);
  return status;
}

/* --by splits a text report, reading each file again for each part. */
static int check_by(const char *const *inputs, size_t n,
                    const struct report_options *opt) {
  if (!opt->by) return EXIT_OK;
  if (opt->format != REPORT_TEXT || opt->jit) {
    fprintf(stderr, "ljprof: --by splits a text report; other formats carry "
                    "labels themselves (json, pprof) or take --label and "
                    "--label-frames\n");
    return EXIT_USAGE;
  }
  for (size_t i = 0; i < n; i++)
    if (!strcmp(inputs[i], "-")) {
      fprintf(stderr, "ljprof: --by reads each FILE once per value: not "
                      "'-' (stdin)\n");
      return EXIT_USAGE;
    }
  return EXIT_OK;
}

int report_files(const char *const *inputs, size_t n, const char *output,
                 const struct report_options *opt) {
  struct stream_set set;
  int status = check_by(inputs, n, opt);
  if (status != EXIT_OK) return status;
  status = stream_set_read(&set, inputs, n, opt->labels, opt->nlabels);
  if (status != EXIT_USAGE && set.opened) {
    FILE *out = output ? fopen(output, "w") : stdout;
    if (!out) {
      fprintf(stderr, "ljprof: %s: %s\n", output, strerror(errno));
      stream_set_free(&set);
      return EXIT_FAILED;
    }
    int s = check_jit(&set, opt);
    if (s == EXIT_OK && opt->by &&
        (set.kind == STREAM_MEMPROF || set.kind == STREAM_SYSPROF))
      s = render_parts(out, output, &set, inputs, n, opt);
    else if (s == EXIT_OK)
      s = render(out, output, &set, opt);
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
