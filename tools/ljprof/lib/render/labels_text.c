/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The text reports' table by label (labels.h): each key's values, what
** each holds and its share, the top stack under it; the sets folded.
** Nothing for a stream without labels.
*/
#include <inttypes.h>

#include "report.h"

void report_labels_text(struct sbuf *sb, const struct symbols *sym,
                        const struct labeltable *t,
                        const struct labels_text *how) {
  if (!t->n) return;
  sbuf_printf(sb, "%s\n", how->title);
  for (size_t i = 0; i < t->n; i++) {
    const struct labelrow *r = &t->rows[i];
    const struct symstring *key = &sym->strings[r->key];
    labels_escape(sb, key->data, key->len);
    sbuf_add(sb, "=", 1);
    labels_format_value(sym, r->value, sb);
    sbuf_add(sb, ": ", 2);
    how->value(sb, r->total, how->ud);
    sbuf_add(sb, " (", 2);
    sbuf_tenths(sb, t->total ? 100.0 * (double)r->total / (double)t->total
                             : 0.0);
    sbuf_add(sb, "%)\n", 3);
    if (r->top == SIZE_MAX) continue;
    sbuf_add(sb, "\t", 1);
    how->stack(sb, r->top, how->ud);
    sbuf_add(sb, "\n", 1);
  }
  if (sym->labels.folded)
    sbuf_printf(sb,
                "Folded: %s%" PRIu64 " label sets past the %d a stream names, "
                "counted as (other)\n",
                sym->labels.folded_more ? "at least " : "", sym->labels.folded,
                LJ_LABELSETS_MAX);
  sbuf_add(sb, "\n", 1);
}

void report_labels_kept(struct sbuf *sb, const struct report_options *opt) {
  if (!opt->nlabels) return;
  sbuf_printf(sb, "Only what carries: ");
  for (size_t i = 0; i < opt->nlabels; i++) {
    const struct labelterm *t = &opt->labels[i];
    if (i) sbuf_add(sb, ", ", 2);
    if (!t->value) sbuf_add(sb, "no ", 3);
    labels_escape(sb, t->key, t->key_len);
    if (!t->value) continue;
    sbuf_add(sb, "=", 1);
    labels_escape(sb, t->value, t->value_len);
  }
  sbuf_add(sb, "\n", 1);
}
