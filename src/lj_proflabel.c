/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Labels in a profile's stream (lj_proflabel.h).
*/

#define lj_proflabel_c
#define LUA_CORE

#include <string.h>

#include "lj_proflabel.h"
#include "lj_wbuf.h"

LJ_STATIC_ASSERT(LJ_LABELS_MAXN == LUAM_LABEL_MAXN &&
		 LJ_LABEL_MAXKEY == LUAM_LABEL_MAXKEY &&
		 LJ_LABEL_MAXVALUE == LUAM_LABEL_MAXVALUE);

void lj_proflabel_reset(ProfLabels *pl)
{
  memset(pl, 0, sizeof(*pl));
}

/* The slot of id: where it is, or the empty one it would go to. Ids are
** handed out in sequence: the low bits spread them. */
static uint32_t proflabel_slot(const ProfLabels *pl, uint32_t id)
{
  uint32_t i = id * 0x9e3779b1u;
  for (i >>= 20; pl->id[i] != 0 && pl->id[i] != id;
       i = (i + 1) & (PROFLABEL_SLOTS-1))
    ;
  return i;
}

/* What the stream needs to take a sample or an event of L, whose set is
** not the one in force: encoded at p, returns the end. A set not seen is
** announced while the stream has numbers left, else folded; its labels
** record follows when its number is not the one in force. The stream
** takes it all or nothing (a sample dropped): lj_proflabel_taken then. */
uint8_t *lj_proflabel_switch(const ProfLabels *pl, const ProfLabelRecs *r,
			     const lua_State *L, uint8_t *p,
			     ProfLabelSwitch *sw)
{
  const LabelSet *ls = L != NULL ? lj_label_of(L) : NULL;
  sw->id = ls != NULL ? ls->id : 0;
  sw->isnew = 0;
  sw->no = LJ_LABELS_NONE;
  if (ls != NULL) {
    sw->slot = proflabel_slot(pl, sw->id);
    if (pl->id[sw->slot] == sw->id) {
      sw->no = pl->no[sw->slot];
    } else if (pl->nsets < LJ_LABELSETS_MAX) {
      sw->isnew = 1;
      sw->no = pl->nsets + 1;
      memcpy(p, r->set, r->len);
      p = lj_wbuf_uleb(p + r->len, sw->no);
      memcpy(p, ls->enc, ls->len);
      p += ls->len;
    } else {
      sw->isnew = 1;
      sw->no = LJ_LABELS_OTHER;
    }
  }
  if (r->inforce && sw->no != pl->inforceno) {
    memcpy(p, r->labels, r->len);
    p = lj_wbuf_uleb(p + r->len, sw->no);
  }
  return p;
}

void lj_proflabel_taken(ProfLabels *pl, const ProfLabelSwitch *sw)
{
  pl->inforce = sw->id;
  pl->inforceno = sw->no;
  if (!sw->isnew)
    return;
  if (sw->no != LJ_LABELS_OTHER) {
    pl->nsets++;
  } else if (pl->nfolded < LJ_LABELS_FOLDMAX) {
    pl->nfolded++;
  } else {
    return;  /* Not told apart: it stays new. */
  }
  pl->id[sw->slot] = sw->id;
  pl->no[sw->slot] = sw->no;
}
