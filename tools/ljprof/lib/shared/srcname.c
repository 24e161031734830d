/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Lua functions by the names their source gives them (srcname.h).
*/
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "srcname.h"

struct srcfile {
  char *path;
  char *text;    /* NULL: not read (gone, not a file, too large) */
  size_t size;
  size_t *lines; /* offset of line i + 1 in text */
  size_t nlines;
};

void srcnames_free(struct srcnames *names) {
  for (size_t i = 0; i < names->count; i++) {
    free(names->files[i].path);
    free(names->files[i].text);
    free(names->files[i].lines);
  }
  free(names->files);
  *names = (struct srcnames){0};
}

/* The whole of a regular file, never blocking on a FIFO or a device. */
static char *read_regular(const char *path, size_t *size) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  char *text = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      (uint64_t)st.st_size <= SRCNAME_MAX_FILE) {
    text = xmalloc((size_t)st.st_size + 1);
    size_t got = 0;
    ssize_t n;
    while (got < (size_t)st.st_size &&
           (n = read(fd, text + got, (size_t)st.st_size - got)) > 0)
      got += (size_t)n;
    *size = got;
  }
  close(fd);
  return text;
}

static void index_lines(struct srcfile *f) {
  size_t cap = 0;
  for (size_t at = 0; at < f->size;) {
    grow_array((void **)&f->lines, &cap, f->nlines + 1, sizeof *f->lines);
    f->lines[f->nlines++] = at;
    const char *nl = memchr(f->text + at, '\n', f->size - at);
    at = nl ? (size_t)(nl - f->text) + 1 : f->size;
  }
}

static struct srcfile *file_of(struct srcnames *names, const char *path,
                               size_t len) {
  for (size_t i = 0; i < names->count; i++)
    if (strlen(names->files[i].path) == len &&
        !memcmp(names->files[i].path, path, len))
      return &names->files[i];
  grow_array((void **)&names->files, &names->cap, names->count + 1,
             sizeof *names->files);
  struct srcfile *f = &names->files[names->count++];
  *f = (struct srcfile){0};
  f->path = xmalloc(len + 1);
  memcpy(f->path, path, len);
  f->path[len] = '\0';
  if (strlen(f->path) == len && (f->text = read_regular(f->path, &f->size)))
    index_lines(f);
  return f;
}

/* -- One line of Lua --------------------------------------------------- */

static int is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

/* Where the keyword `function` is in s[0..len), the only one; -1 if none,
** more than one, or after the start of a comment. */
static long function_keyword(const char *s, size_t len) {
  static const char kw[] = "function";
  const size_t n = sizeof kw - 1;
  long found = -1;
  for (size_t i = 0; i + n <= len; i++) {
    if (s[i] == '-' && i + 1 < len && s[i + 1] == '-') break;
    if (memcmp(s + i, kw, n) || (i && is_word(s[i - 1])) ||
        (i + n < len && is_word(s[i + n])))
      continue;
    if (found >= 0) return -1;
    found = (long)i;
  }
  return found;
}

/* `function a.b:c(`: the name after the keyword; its length, 0 if none. */
static size_t declared_name(const char *s, size_t len) {
  size_t i = 0;
  while (i < len && (s[i] == ' ' || s[i] == '\t')) i++;
  size_t start = i, end = i;
  while (i < len && is_word(s[i])) {
    while (i < len && is_word(s[i])) i++;
    end = i;
    if (i < len && (s[i] == '.' || s[i] == ':')) i++;
    else break;
  }
  return end > start && !(s[start] >= '0' && s[start] <= '9') ? end : 0;
}

/* `x.y["k"] = function(`: s[0..len) is what comes before the keyword; the
** start of the name assigned to, and its end in *end; -1 if none. */
static long assigned_name(const char *s, size_t len, size_t *end) {
  size_t i = len;
  while (i && (s[i - 1] == ' ' || s[i - 1] == '\t')) i--;
  if (!i || s[i - 1] != '=') return -1;
  i--;
  if (i && strchr("=~<>", s[i - 1])) return -1; /* a comparison */
  while (i && (s[i - 1] == ' ' || s[i - 1] == '\t')) i--;
  *end = i;
  while (i && (is_word(s[i - 1]) || strchr(".:[]\"'", s[i - 1]))) i--;
  return i < *end && is_word(s[i]) && !(s[i] >= '0' && s[i] <= '9')
             ? (long)i : -1;
}

int srcnames_find(struct srcnames *names, const char *chunk, size_t len,
                  uint64_t line, struct sbuf *sb) {
  if (len < 2 || chunk[0] != '@' || line == 0) return 0;
  struct srcfile *f = file_of(names, chunk + 1, len - 1);
  if (!f->text || line > f->nlines) return 0;
  const char *s = f->text + f->lines[line - 1];
  const char *nl = memchr(s, '\n', f->size - f->lines[line - 1]);
  size_t n = nl ? (size_t)(nl - s) : f->size - f->lines[line - 1];
  long kw = function_keyword(s, n);
  if (kw < 0) return 0;
  size_t after = (size_t)kw + 8, end;
  size_t named = declared_name(s + after, n - after);
  if (named) {
    const char *name = s + after;
    while (*name == ' ' || *name == '\t') name++, named--;
    sbuf_add(sb, name, named);
    return 1;
  }
  long start = assigned_name(s, (size_t)kw, &end);
  if (start < 0) return 0;
  sbuf_add(sb, s + start, end - (size_t)start);
  return 1;
}

void srcnames_format_function(struct srcnames *names,
                              const struct symbols *s, uint32_t loc,
                              struct aliases *a, struct sbuf *sb) {
  const struct location *l = &s->locations[loc];
  symbols_format_function(s, loc, a, sb);
  if (l->kind != LOC_LUA || l->line == 0 || l->name == SYMBOLS_NONE) return;
  const struct symstring *chunk = &s->strings[l->name];
  size_t before = sb->len;
  sbuf_printf(sb, " (function ");
  if (srcnames_find(names, chunk->data, chunk->len, l->line, sb))
    sbuf_add(sb, ")", 1);
  else
    sb->len = before;
}
