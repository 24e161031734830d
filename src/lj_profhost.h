/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** A guest in the host's process: the profilers' threads take none of the
** host's signals, and none of them holds the dynamic loader's lock when
** the host forks; a stream says which process it profiles.
*/

#ifndef _LJ_PROFHOST_H
#define _LJ_PROFHOST_H

#include <pthread.h>
#include <stddef.h>

struct dl_phdr_info;  /* <link.h>, with _GNU_SOURCE. */
struct lj_wbuf;

/* pthread_create with every signal blocked in the new thread: a signal
** sent to the process (nginx's HUP, CHLD) is the host's threads' to take.
** Returns 0 or an error number. */
int lj_profhost_thread(pthread_t *t, void *(*fn)(void *), void *arg);

/* dl_iterate_phdr under a gate that the host's fork() waits for: the child
** never inherits the loader's lock held by a thread that did not come
** along. The callback holds that lock: it reads memory and may allocate,
** and never writes a stream, waits or takes another lock. */
int lj_profhost_objects(int (*f)(struct dl_phdr_info *, size_t, void *),
			void *data);

/* The process a stream profiles, its fields `process` (lj_profstream.h):
** its pid, its machine's name, the wall clock now. pids repeat across
** machines and in time: a reader tells the workers of several hosts, or
** of two runs, apart by the three. */
void lj_profhost_process(struct lj_wbuf *out);

#endif
