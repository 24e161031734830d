/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "reader.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void reader_init_fd(struct reader *r, int fd, size_t bufsize) {
  memset(r, 0, sizeof *r);
  r->buf = xmalloc(bufsize);
  r->bufsize = bufsize;
  r->fd = fd;
  r->pos = r->end = r->start = r->buf;
}

void reader_init_mem(struct reader *r, const void *data, size_t size) {
  memset(r, 0, sizeof *r);
  r->fd = -1;
  r->eof = 1;
  r->pos = r->start = data;
  r->end = r->pos + size;
}

void reader_free(struct reader *r) {
  free(r->buf);
  r->buf = NULL;
}

void reader_keep_failure(struct reader *dst, const struct reader *src) {
  if (src->status == READER_OK || dst->status != READER_OK) return;
  *dst = *src;
  dst->buf = NULL;
  dst->pos = dst->start = dst->end = NULL;
}

void reader_fail(struct reader *r, enum reader_status status, uint64_t offset,
                 const char *fmt, ...) {
  if (r->status != READER_OK) return;
  r->status = status;
  r->err_offset = offset;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err_msg, sizeof r->err_msg, fmt, ap);
  va_end(ap);
}

int reader_corrupt_value(struct reader *r, uint64_t at, const char *record,
                         const char *problem, uint64_t value) {
  reader_fail(r, READER_CORRUPT, at,
              "corrupt at offset %" PRIu64 ": %s: %s (%" PRIu64 ")", at,
              record, problem, value);
  return 0;
}

/* Try to have at least `need` (<= bufsize) unread bytes buffered. */
static void fill(struct reader *r, size_t need) {
  size_t have = (size_t)(r->end - r->pos);
  if (have >= need || r->eof || r->status != READER_OK) return;
  r->base += (uint64_t)(r->pos - r->start);
  memmove(r->buf, r->pos, have);
  r->start = r->pos = r->buf;
  r->end = r->buf + have;
  while ((size_t)(r->end - r->pos) < need) {
    ssize_t n = read(r->fd, r->buf + have, r->bufsize - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      reader_fail(r, READER_IO, reader_offset(r) + have, "read error: %s",
                  strerror(errno));
      r->eof = 1;
      return;
    }
    if (n == 0) {
      r->eof = 1;
      return;
    }
    have += (size_t)n;
    r->end = r->buf + have;
  }
}

/* The stream ended inside an item that began at `offset`. */
static int truncated(struct reader *r, uint64_t offset, const char *item,
                     const char *what) {
  uint64_t end = r->base + (uint64_t)(r->end - r->start);
  reader_fail(r, READER_TRUNCATED, offset,
              "truncated at offset %" PRIu64 ": expected %s (%s); "
              "the stream ends at offset %" PRIu64,
              offset, item, what, end);
  return 0;
}

int reader_at_end(struct reader *r) {
  fill(r, 1);
  return r->pos == r->end;
}

const uint8_t *reader_window_slow(struct reader *r, size_t need) {
  fill(r, need);
  return (size_t)(r->end - r->pos) >= need ? r->pos : NULL;
}

int reader_u8_slow(struct reader *r, uint8_t *out, const char *what) {
  if (r->status != READER_OK) return 0;
  fill(r, 1);
  if (r->pos == r->end) return truncated(r, reader_offset(r), "a byte", what);
  *out = *r->pos++;
  return 1;
}

int reader_bytes(struct reader *r, void *dst, size_t len, const char *what) {
  uint64_t offset = reader_offset(r);
  uint8_t *out = dst;
  if (r->status != READER_OK) return 0;
  while (len > 0) {
    fill(r, 1);
    size_t have = (size_t)(r->end - r->pos);
    if (have == 0) return truncated(r, offset, "more bytes", what);
    size_t n = have < len ? have : len;
    memcpy(out, r->pos, n);
    r->pos += n;
    out += n;
    len -= n;
  }
  return 1;
}

int reader_string(struct reader *r, struct sbuf *dst, uint64_t max,
                  const char *what) {
  uint64_t len;
  if (!reader_uleb(r, &len, what)) return 0;
  if (len > max) {
    reader_fail(r, READER_CORRUPT, reader_offset(r),
                "corrupt at offset %" PRIu64 ": %s is %" PRIu64
                " bytes long (the limit is %" PRIu64 ")",
                reader_offset(r), what, len, max);
    return 0;
  }
  sbuf_reset(dst);
  grow_array((void **)&dst->data, &dst->cap, (size_t)len + 1, 1);
  if (!reader_bytes(r, dst->data, (size_t)len, what)) return 0;
  dst->len = (size_t)len;
  return 1;
}

int reader_uleb_slow(struct reader *r, uint64_t *out, const char *what) {
  if (r->status != READER_OK) return 0;
  uint64_t offset = reader_offset(r);
  fill(r, ULEB128_MAX_BYTES);
  int n = uleb128_decode(r->pos, (size_t)(r->end - r->pos), out);
  if (n == 0) return truncated(r, offset, "ULEB128", what);
  if (n < 0) {
    reader_fail(r, READER_CORRUPT, offset,
                "corrupt at offset %" PRIu64
                ": ULEB128 longer than 10 bytes or above 64 bits (%s)",
                offset, what);
    return 0;
  }
  r->pos += n;
  return 1;
}

#if ULEB128_PEXT
/* Asked once; threads may ask at once (they find the same). The
** environment's LJPROF_PEXT=0 takes the portable path (tests compare). */
int uleb128_pext_fast(void) {
  static int answer = -1;
  int fast = __atomic_load_n(&answer, __ATOMIC_RELAXED);
  if (fast < 0) {
    const char *env = getenv("LJPROF_PEXT");
    __builtin_cpu_init();
    fast = __builtin_cpu_supports("bmi2") && !__builtin_cpu_is("amdfam15h") &&
           !__builtin_cpu_is("amdfam17h") && !(env && strcmp(env, "0") == 0);
    __atomic_store_n(&answer, fast, __ATOMIC_RELAXED);
  }
  return fast;
}
#endif
