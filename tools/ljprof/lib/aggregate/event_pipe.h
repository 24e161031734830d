/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Event pipe: a memprof sink that hands the events to a second thread,
** which delivers them to a sink in the same order. Decoding and
** naming then overlap with aggregation: on two cores a long stream takes
** about the time of the slower thread. That sink sees exactly the
** events it would see without the pipe, so reports do not change.
**
** Events travel in chunks of a small ring: the decoder fills one while the
** aggregator works through the others, and waits when the ring is full, so
** the pipe's memory is fixed. The sink must not share mutable state
** with the decoder (memagg does not: it keeps location ids, not names).
*/
#ifndef LJPROF_EVENT_PIPE_H
#define LJPROF_EVENT_PIPE_H

#include "decode/memprof.h"

struct event_pipe;

/* Start the thread delivering to `to`; NULL if it cannot be started. */
struct event_pipe *event_pipe_start(const struct memprof_sink *to);

/* The sink to decode into (valid until event_pipe_finish()). */
struct memprof_sink event_pipe_sink(struct event_pipe *p);

/* Deliver every event sent, stop the thread and free the pipe. */
void event_pipe_finish(struct event_pipe *p);

#endif
