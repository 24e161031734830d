/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "stream.h"

#include <inttypes.h>
#include <string.h>

#include "symtab.h"

#define MAGIC_SIZE 3

struct section {
  const char *magic;
  const char *name;
  unsigned oldest, newest; /* the versions read */
  const char *versions;    /* the same, for messages */
};

static const struct section SYMTAB = {"ljs", "symtab", LJS_VERSION,
                                      LJS_VERSION, "3"};
static const struct section MEMPROF = {"ljm", "memprof",
                                       LJM_VERSION_REFERENCE,
                                       LJM_VERSION_LABELS, "3 to 6"};
static const struct section SYSPROF = {"ljp", "sysprof",
                                       LJP_VERSION_REFERENCE,
                                       LJP_VERSION_LABELS, "2, 3 or 4"};

/*
** The prologue after the magic: a version byte, three reserved bytes.
** Returns the version, or 0 (in the reader: why).
*/
static unsigned read_version(struct reader *r, const struct section *sec) {
  uint64_t at = reader_offset(r);
  uint8_t version, reserved[3];
  if (!reader_u8(r, &version, "version byte") ||
      !reader_bytes(r, reserved, sizeof reserved, "reserved prologue bytes"))
    return 0;
  if (version < sec->oldest || version > sec->newest) {
    reader_fail(r, READER_UNSUPPORTED, at,
                "unsupported %s version %u (expected %s) at offset %" PRIu64,
                sec->name, version, sec->versions, at);
    return 0;
  }
  return version;
}

/* After a profiler stream's end byte, nothing may follow. */
static void check_nothing_after(struct reader *r, const struct section *sec) {
  if (reader_at_end(r)) return;
  uint64_t at = reader_offset(r);
  reader_fail(r, READER_CORRUPT, at,
              "corrupt at offset %" PRIu64 ": data after the end of the %s "
              "stream",
              at, sec->name);
}

static const struct section *read_magic(struct reader *r) {
  static const struct section *const known[] = {&SYMTAB, &MEMPROF, &SYSPROF};
  uint64_t at = reader_offset(r);
  char magic[MAGIC_SIZE];
  if (!reader_bytes(r, magic, sizeof magic, "magic 'ljs', 'ljm' or 'ljp'"))
    return NULL;
  for (size_t i = 0; i < sizeof known / sizeof *known; i++)
    if (memcmp(magic, known[i]->magic, MAGIC_SIZE) == 0) return known[i];
  reader_fail(r, READER_CORRUPT, at,
              "not a profile: no 'ljs', 'ljm' or 'ljp' magic at offset %" PRIu64,
              at);
  return NULL;
}

enum stream_kind stream_read(struct reader *r, struct symbols *sym,
                             const struct stream_sinks *sinks) {
  enum stream_kind so_far = STREAM_UNKNOWN; /* what damage from here leaves */
  const struct section *sec = read_magic(r);
  if (sec == &SYMTAB) {
    if (!read_version(r, sec) || !symtab_read(r, sym)) return so_far;
    so_far = STREAM_SYMTAB;
    sec = read_magic(r);
    if (sec == &SYMTAB) {
      reader_fail(r, READER_CORRUPT, reader_offset(r) - MAGIC_SIZE,
                  "corrupt at offset %" PRIu64
                  ": a second symtab where a profiler stream should start",
                  reader_offset(r) - MAGIC_SIZE);
      return so_far;
    }
  }
  unsigned version = sec ? read_version(r, sec) : 0;
  if (!version) return so_far;
  enum stream_kind kind = sec == &SYSPROF ? STREAM_SYSPROF : STREAM_MEMPROF;
  int complete = sec == &SYSPROF
                     ? sysprof_read_records(r, sym, version, &sinks->sysprof)
                     : memprof_read_events(r, sym, version, &sinks->memprof);
  if (complete) check_nothing_after(r, sec);
  return kind;
}
