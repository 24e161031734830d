/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Byte reader: a buffered stream of bytes with its offset, the primitives of
** every profile format (byte, ULEB128, length-prefixed string), and the
** first error met, worded for a user: where, and what was expected.
**
** A reader reads a file descriptor (a file, a pipe, stdin) through a fixed
** buffer, or a block of memory (fuzzing, tests). Every read returns 1 on
** success and 0 on failure; after a failure the reader stays failed and
** every later read fails too, so decoders may check only where they must.
*/
#ifndef LJPROF_READER_H
#define LJPROF_READER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util.h"

enum reader_status {
  READER_OK,
  READER_TRUNCATED, /* the stream ended inside an item */
  READER_CORRUPT,   /* an item has a value no writer produces */
  READER_UNSUPPORTED, /* a valid stream this reader cannot decode */
  READER_IO         /* the operating system failed a read */
};

/* A ULEB128 encodes at most 64 bits in at most this many bytes. */
#define ULEB128_MAX_BYTES 10

struct reader {
  const uint8_t *pos;   /* next unread byte */
  const uint8_t *end;   /* end of the buffered bytes */
  const uint8_t *start; /* first buffered byte; stream offset `base` */
  uint64_t base;
  uint8_t *buf; /* owned buffer when reading a descriptor */
  size_t bufsize;
  int fd; /* -1 when reading memory */
  int eof;
  enum reader_status status;
  uint64_t err_offset;
  char err_msg[320];
};

void reader_init_fd(struct reader *r, int fd, size_t bufsize);
void reader_init_mem(struct reader *r, const void *data, size_t size);
void reader_free(struct reader *r);

static inline uint64_t reader_offset(const struct reader *r) {
  return r->base + (uint64_t)(r->pos - r->start);
}

/* Record a failure (only the first one is kept). */
void reader_fail(struct reader *r, enum reader_status status, uint64_t offset,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A record's field out of bounds: "corrupt at offset AT: RECORD: PROBLEM
** (VALUE)". Returns 0. */
int reader_corrupt_value(struct reader *r, uint64_t at, const char *record,
                         const char *problem, uint64_t value);

/* Of several streams read one after the other: src's failure, if it has
** one and *dst none yet, kept in dst (status, offset, message; no bytes),
** to be reported once src is freed. */
void reader_keep_failure(struct reader *dst, const struct reader *src);

/* Is the stream over? (Reads ahead as needed; no error is recorded.) */
int reader_at_end(struct reader *r);

int reader_u8_slow(struct reader *r, uint8_t *out, const char *what);
int reader_bytes(struct reader *r, void *dst, size_t len, const char *what);
/* A string: ULEB128 length, then the bytes. Longer than max: corrupt. */
int reader_string(struct reader *r, struct sbuf *dst, uint64_t max,
                  const char *what);

int reader_uleb_slow(struct reader *r, uint64_t *out, const char *what);

/*
** Decode a ULEB128 from p[0..avail). Returns the bytes used, 0 if the
** value continues past avail, or -1 if it is too long or exceeds 64 bits.
*/
static inline int uleb128_decode(const uint8_t *p, size_t avail,
                                 uint64_t *out) {
  uint64_t value = 0;
  size_t n = avail < ULEB128_MAX_BYTES ? avail : ULEB128_MAX_BYTES;
  for (size_t i = 0; i < n; i++) {
    uint8_t b = p[i];
    value |= (uint64_t)(b & 0x7f) << (7 * i);
    if (b < 0x80) {
      if (i == ULEB128_MAX_BYTES - 1 && b > 1) return -1;
      *out = value;
      return (int)i + 1;
    }
  }
  return avail >= ULEB128_MAX_BYTES ? -1 : 0;
}

/*
** x86-64's BMI2 gathers the 7-bit groups in one instruction (PEXT). Not
** every CPU has it, and AMD's before Zen 3 take some 20 cycles for it:
** uleb128_pext_fast() says whether this one is worth it, and a decoder
** keeps a copy of its loop for each answer. (Assembler, not the
** intrinsic: the rest of the program is built for any x86-64.)
*/
#if defined(__x86_64__) && defined(__GNUC__)
#define ULEB128_PEXT 1
/* Operands of the PEXT path read from memory: a decoder's loop has no
** register to spare for them, and reloaded as immediates they cost two
** instructions a field (ANDN: BMI1, which every CPU with BMI2 has). */
static const uint64_t uleb128_high_bits = UINT64_C(0x8080808080808080);
static const uint64_t uleb128_low_bits = UINT64_C(0x7f7f7f7f7f7f7f7f);

/* The high bits of the bytes of word that are clear: the last bytes. */
static inline uint64_t uleb128_pext_last(uint64_t word) {
  uint64_t last;
  __asm__("andnq %2, %1, %0" : "=r"(last) : "r"(word), "m"(uleb128_high_bits));
  return last;
}

/* The 7-bit groups of word up to the last byte's (the lowest bit of
** last_bytes is its high bit). */
static inline uint64_t uleb128_pext(uint64_t word, uint64_t last_bytes) {
  uint64_t mask = last_bytes - 1, bits;
  __asm__("andq %2, %1\n\tpextq %1, %3, %0"
          : "=r"(bits), "+r"(mask)
          : "m"(uleb128_low_bits), "r"(word));
  return bits;
}
int uleb128_pext_fast(void);
#else
#define ULEB128_PEXT 0
static inline uint64_t uleb128_pext_last(uint64_t word) {
  (void)word;
  return 0; /* never called */
}
static inline uint64_t uleb128_pext(uint64_t word, uint64_t last_bytes) {
  (void)word, (void)last_bytes;
  return 0; /* never called */
}
static inline int uleb128_pext_fast(void) { return 0; }
#endif

/*
** Decode a ULEB128 from p, where at least ULEB128_MAX_BYTES bytes are
** readable: as uleb128_decode(), without a check per byte. One of up to
** eight bytes (an address takes seven) is gathered from one word without
** branches: with PEXT if `pext` (a constant in each copy of the caller,
** only where uleb128_pext_fast()); else the bytes past its last masked
** off, then its 7-bit groups pulled together in pairs, pairs of pairs
** and halves.
*/
ALWAYS_INLINE int uleb128_decode_wide(const uint8_t *p, uint64_t *out,
                                      int pext) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t word;
  memcpy(&word, p, sizeof word);
  uint64_t last_bytes =
      pext ? uleb128_pext_last(word) : ~word & UINT64_C(0x8080808080808080);
  if (last_bytes) {
    if (pext) {
      *out = uleb128_pext(word, last_bytes);
    } else {
      uint64_t v = word & (last_bytes - 1) & UINT64_C(0x7f7f7f7f7f7f7f7f);
      v -= v >> 1 & UINT64_C(0x3f803f803f803f80);
      v -= (v >> 2 & UINT64_C(0x0fffc0000fffc000)) * 3;
      *out = (uint32_t)v | (v >> 32) << 28;
    }
    return (int)((unsigned)__builtin_ctzll(last_bytes) / 8 + 1);
  }
#endif
  return uleb128_decode(p, ULEB128_MAX_BYTES, out);
}

/* The same for a field that is mostly one or two bytes (a size, a line). */
ALWAYS_INLINE int uleb128_decode_unchecked(const uint8_t *p, uint64_t *out) {
  if (p[0] < 0x80) {
    *out = p[0];
    return 1;
  }
  if (p[1] < 0x80) {
    *out = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
    return 2;
  }
  return uleb128_decode_wide(p, out, 0);
}

/*
** The bytes of a ULEB128 at p, where at least ULEB128_MAX_BYTES bytes are
** readable, without its value; 0 if it has more. Those of up to eight
** bytes from one word.
*/
static inline size_t uleb128_length(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t word;
  memcpy(&word, p, sizeof word);
  uint64_t last_bytes = ~word & UINT64_C(0x8080808080808080);
  if (last_bytes) return (size_t)__builtin_ctzll(last_bytes) / 8 + 1;
#endif
  for (size_t n = 0; n < ULEB128_MAX_BYTES; n++)
    if (p[n] < 0x80) return n + 1;
  return 0;
}

/*
** The next field of an item, at *p in a window that holds the longest
** item; *p moves past it. Returns the bytes it took, negative if it is
** malformed (then *p moves back a byte: it stays in the window); the
** results of an item's fields or'ed are negative if one is.
*/
ALWAYS_INLINE int uleb128_take(const uint8_t **p, uint64_t *out) {
  int used = uleb128_decode_unchecked(*p, out);
  *p += used;
  return used;
}

/* The same for a field that is mostly wide (an address); with PEXT if
** `pext`, as uleb128_decode_wide(). */
ALWAYS_INLINE int uleb128_take_wide(const uint8_t **p, uint64_t *out,
                                    int pext) {
  int used = uleb128_decode_wide(*p, out, pext);
  *p += used;
  return used;
}

/*
** For decoders that check bounds once per item: the unread bytes, if at
** least `need` (at most the buffer size) can be buffered, else NULL (near
** the end of the stream). Then reader_skip(used).
*/
const uint8_t *reader_window_slow(struct reader *r, size_t need);

static inline const uint8_t *reader_window(struct reader *r, size_t need) {
  if ((size_t)(r->end - r->pos) >= need) return r->pos;
  return reader_window_slow(r, need);
}

static inline void reader_skip(struct reader *r, size_t used) {
  r->pos += used;
}

/* For a decoder that reads several items from one window: where the last
** window of `need` bytes starts in the bytes buffered now (at or past
** the window reader_window() gave). */
static inline const uint8_t *reader_last_window(const struct reader *r,
                                                size_t need) {
  return r->end - need;
}

static inline int reader_u8(struct reader *r, uint8_t *out,
                            const char *what) {
  if (r->pos < r->end) {
    *out = *r->pos++;
    return 1;
  }
  return reader_u8_slow(r, out, what);
}

static inline int reader_uleb(struct reader *r, uint64_t *out,
                              const char *what) {
  const uint8_t *p = r->pos;
  if (p < r->end && *p < 0x80) { /* the common one-byte case */
    *out = *p;
    r->pos = p + 1;
    return 1;
  }
  if (r->end - p >= ULEB128_MAX_BYTES) {
    int n = uleb128_decode(p, ULEB128_MAX_BYTES, out);
    if (n > 0) {
      r->pos = p + n;
      return 1;
    }
  }
  return reader_uleb_slow(r, out, what);
}

#endif
