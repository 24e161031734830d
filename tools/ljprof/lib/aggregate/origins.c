/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "origins.h"

#include <inttypes.h>

int origin_process(const struct origin *o, struct sbuf *sb) {
  const struct stream_process *p = &o->process;
  if (!p->known) return 0;
  sbuf_printf(sb, "pid %" PRIu64, p->pid);
  if (p->host[0]) sbuf_printf(sb, " on %s", p->host);
  return 1;
}

void origin_name(const struct origin *o, struct sbuf *sb) {
  sbuf_printf(sb, "%s", o->name);
  if (!o->process.known) return;
  sbuf_add(sb, " (", 2);
  origin_process(o, sb);
  sbuf_add(sb, ")", 1);
}
