/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Write buffer for profile streams.
*/

#define lj_wbuf_c
#define LUA_CORE

#include <errno.h>
#include <string.h>

#include "lj_wbuf.h"

void lj_wbuf_init(struct lj_wbuf *b, lj_wbuf_writer writer, void *ctx,
		  uint8_t *buf, size_t size)
{
  b->writer = writer;
  b->ctx = ctx;
  b->buf = b->pos = buf;
  b->size = size;
  b->flags = 0;
  b->saved_errno = 0;
}

/* Once stopped, the buffer only spins in place: writes land and are lost,
** so the hot paths need no check of their own. */
static void wbuf_stop(struct lj_wbuf *b, int err)
{
  b->flags |= LJ_WBUF_STOP;
  if (err) {
    b->flags |= LJ_WBUF_ERRIO;
    b->saved_errno = err;
  }
}

/* Hand the filled part to the writer and continue in the buffer it gives. */
void lj_wbuf_flush(struct lj_wbuf *b)
{
  size_t len = (size_t)(b->pos - b->buf);
  const void *data = b->buf;
  size_t written;
  if (lj_wbuf_failed(b) || len == 0) {
    b->pos = b->buf;
    return;
  }
  errno = 0;
  written = b->writer(&data, len, b->ctx);
  if (written < len) {
    wbuf_stop(b, errno ? errno : EIO);
  } else if (data == NULL) {
    wbuf_stop(b, 0);  /* The writer ended the stream. */
  } else {
    b->buf = (uint8_t *)data;
  }
  b->pos = b->buf;
}

void lj_wbuf_addn(struct lj_wbuf *b, const void *src, size_t n)
{
  const uint8_t *p = (const uint8_t *)src;
  while (n > 0) {
    size_t room = b->size - (size_t)(b->pos - b->buf);
    size_t chunk = n < room ? n : room;
    memcpy(b->pos, p, chunk);
    b->pos += chunk;
    p += chunk;
    n -= chunk;
    if (n > 0)
      lj_wbuf_flush(b);
  }
}

void lj_wbuf_addstring(struct lj_wbuf *b, const char *s, size_t len)
{
  lj_wbuf_adduleb(b, (uint64_t)len);
  lj_wbuf_addn(b, s, len);
}
