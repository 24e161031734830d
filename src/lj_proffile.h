/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Profile streams written to a file by a thread of their own: the VM fills
** one buffer while the thread writes the other, so it never waits on the
** disk unless the disk is slower than the profile.
*/

#ifndef _LJ_PROFFILE_H
#define _LJ_PROFFILE_H

#include <stddef.h>
#include <stdint.h>

typedef struct ProfFile ProfFile;

/* Buffer sizes of the profiles written to files. */
#define LJ_PROFFILE_MEMBUF	(1024*1024)	/* Memprof: events are dense. */
#define LJ_PROFFILE_SYSBUF	(256*1024)

/* Open path for writing; NULL with errno set on failure. */
ProfFile *lj_proffile_open(const char *path, size_t bufsize);
/* The first buffer for the profiler to fill. */
uint8_t *lj_proffile_buf(ProfFile *pf);
size_t lj_proffile_bufsize(ProfFile *pf);
/* f(pf) for each file open in this process; pf may be closed meanwhile by
** another thread: f compares it, never follows it. */
void lj_proffile_each(void (*f)(void *ctx));

/* The writer and on_stop callbacks of lmisclib.h; ctx is the ProfFile.
** on_stop waits for the last write, closes the file and frees pf. */
size_t lj_proffile_write(const void **data, size_t len, void *ctx);
int lj_proffile_close(void *ctx, uint8_t *buf);

#endif
