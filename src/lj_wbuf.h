/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Write buffer for profile streams: bytes and ULEB128 numbers go into a
** caller-supplied buffer that a writer callback drains when it is full.
*/

#ifndef _LJ_WBUF_H
#define _LJ_WBUF_H

#include <stddef.h>
#include <stdint.h>

#include "lj_def.h"

/*
** Drains len bytes at *data. Returns the number of bytes consumed (less
** than len is an error) and leaves in *data the buffer to fill next, or
** NULL to end the stream. See lmisclib.h for the full contract.
*/
typedef size_t (*lj_wbuf_writer)(const void **data, size_t len, void *ctx);

/* Stream flags. */
#define LJ_WBUF_ERRIO	0x1	/* The writer failed: errno is saved. */
#define LJ_WBUF_STOP	0x2	/* Nothing more is written. */

/* Longest encoding of a 64 bit number. */
#define LJ_WBUF_ULEB_MAX	10

struct lj_wbuf {
  lj_wbuf_writer writer;
  void *ctx;
  uint8_t *buf;		/* Start of the buffer being filled. */
  uint8_t *pos;		/* Next byte to write. */
  size_t size;		/* Size of the buffer. */
  uint32_t flags;
  int saved_errno;	/* errno when the writer failed. */
};

void lj_wbuf_init(struct lj_wbuf *b, lj_wbuf_writer writer, void *ctx,
		  uint8_t *buf, size_t size);
void lj_wbuf_flush(struct lj_wbuf *b);
void lj_wbuf_addn(struct lj_wbuf *b, const void *src, size_t n);
void lj_wbuf_addstring(struct lj_wbuf *b, const char *s, size_t len);

static LJ_AINLINE int lj_wbuf_failed(const struct lj_wbuf *b)
{
  return (b->flags & LJ_WBUF_STOP) != 0;
}

/* Make room for n bytes (n <= size). Afterwards the raw writer may put up
** to n bytes at b->pos without further checks. */
static LJ_AINLINE void lj_wbuf_reserve(struct lj_wbuf *b, size_t n)
{
  if (LJ_UNLIKELY((size_t)(b->size - (size_t)(b->pos - b->buf)) < n))
    lj_wbuf_flush(b);
}

/* Raw ULEB128 writer: at p, which the caller made room for; returns the
** next byte. A local p lets the compiler keep it in a register (a store
** through a byte pointer may alias any field of the buffer). */
static LJ_AINLINE uint8_t *lj_wbuf_uleb(uint8_t *p, uint64_t v)
{
  if ((v >> 42) != 0 && (v >> 49) == 0) {  /* A user space address. */
    p[0] = (uint8_t)(v | 0x80); p[1] = (uint8_t)((v >> 7) | 0x80);
    p[2] = (uint8_t)((v >> 14) | 0x80); p[3] = (uint8_t)((v >> 21) | 0x80);
    p[4] = (uint8_t)((v >> 28) | 0x80); p[5] = (uint8_t)((v >> 35) | 0x80);
    p[6] = (uint8_t)(v >> 42);
    return p + 7;
  }
  for (; v >= 0x80; v >>= 7)
    *p++ = (uint8_t)(v | 0x80);
  *p++ = (uint8_t)v;
  return p;
}

/* Checked variants, for everything outside the hot paths. */
static LJ_AINLINE void lj_wbuf_addbyte(struct lj_wbuf *b, uint8_t v)
{
  lj_wbuf_reserve(b, 1);
  *b->pos++ = v;
}

static LJ_AINLINE void lj_wbuf_adduleb(struct lj_wbuf *b, uint64_t v)
{
  lj_wbuf_reserve(b, LJ_WBUF_ULEB_MAX);
  b->pos = lj_wbuf_uleb(b->pos, v);
}

#endif
