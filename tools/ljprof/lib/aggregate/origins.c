/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "origins.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int origin_process(const struct origin *o, struct sbuf *sb) {
  const struct stream_process *p = &o->process;
  if (!p->known) return 0;
  sbuf_printf(sb, "pid %" PRIu64, p->pid);
  if (p->host[0]) sbuf_printf(sb, " on %s", p->host);
  return 1;
}

static int same_process(const struct origin *a, const struct origin *b) {
  return a->process.known && b->process.known &&
         a->process.pid == b->process.pid &&
         !strcmp(a->process.host, b->process.host);
}

struct origin_group *origins_by_process(const struct origins *o,
                                        size_t *count,
                                        struct origin_group *total) {
  struct origin_group *rows = xmalloc((o->n ? o->n : 1) * sizeof *rows);
  size_t n = 0;
  *total = (struct origin_group){0};
  for (size_t i = 0; i < o->n; i++) {
    const struct origin *it = &o->items[i];
    size_t r = 0;
    while (r < n && !same_process(&o->items[rows[r].first], it)) r++;
    if (r == n) rows[n++] = (struct origin_group){i, i, 0, 0, 0};
    rows[r].last = i;
    rows[r].nstreams++;
    rows[r].value = add_sat(rows[r].value, it->value);
    rows[r].inuse = add_sat(rows[r].inuse, it->inuse);
    total->value = add_sat(total->value, it->value);
    total->inuse = add_sat(total->inuse, it->inuse);
  }
  *count = n;
  return rows;
}

void origin_group_name(const struct origins *o, const struct origin_group *g,
                       struct sbuf *sb) {
  const struct origin *first = &o->items[g->first];
  if (g->nstreams > 1) {
    origin_process(first, sb);
    sbuf_printf(sb, " (%s ... %s, %zu streams)", first->name,
                o->items[g->last].name, g->nstreams);
    return;
  }
  sbuf_printf(sb, "%s", first->name);
  if (!first->process.known) return;
  sbuf_add(sb, " (", 2);
  origin_process(first, sb);
  sbuf_add(sb, ")", 1);
}
