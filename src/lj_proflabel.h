/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Labels in a profile's stream: which of the VM's label sets a stream has
** announced, under which number, and the set in force. sysprof's signal
** handler and memprof's allocator wrapper use it: it never allocates,
** locks or calls out. The records it writes: docs/formats.md, "Labels".
*/

#ifndef _LJ_PROFLABEL_H
#define _LJ_PROFLABEL_H

#include "lj_label.h"
#include "lj_profstream.h"

/* Sets a stream tells apart: those it announces and those it folds. */
#define PROFLABEL_SLOTS		4096	/* Power of two. */
LJ_STATIC_ASSERT(LJ_LABELSETS_MAX + LJ_LABELS_FOLDMAX <=
		 PROFLABEL_SLOTS*3/4);

typedef struct ProfLabels {
  uint32_t inforce;	/* The VM's id of the set in force: 0 none. */
  uint32_t inforceno;	/* Its number in the stream. */
  uint32_t nsets;	/* Sets announced. */
  uint32_t nfolded;	/* Sets folded, told apart. */
  uint32_t id[PROFLABEL_SLOTS];	/* The VM's ids of the sets seen; 0 empty. */
  uint32_t no[PROFLABEL_SLOTS];	/* Their numbers, or LJ_LABELS_OTHER. */
} ProfLabels;

/* How a stream opens its two records: a tag (sysprof), or a header and
** an info kind (memprof). */
typedef struct ProfLabelRecs {
  uint8_t set[2], labels[2];
  uint8_t len;		/* Bytes of each opening. */
  uint8_t inforce;	/* 0: the set's number is not put in force by a
			** record (sysprof's mode D counts by number). */
} ProfLabelRecs;

/* A switch to another set, encoded; taken once the stream has it. */
typedef struct ProfLabelSwitch {
  uint32_t id, no, slot;
  int isnew;		/* Not seen before in this stream. */
} ProfLabelSwitch;

/* The most bytes a switch encodes. */
#define PROFLABEL_BYTES		(2*(2 + 5) + LJ_LABEL_ENCMAX)

/* The VM's id of the set coroutine L runs under: 0 none. */
static LJ_AINLINE uint32_t lj_proflabel_id(const lua_State *L)
{
  const LabelSet *ls = L != NULL ? lj_label_of(L) : NULL;
  return ls != NULL ? ls->id : 0;
}

LJ_FUNC void lj_proflabel_reset(ProfLabels *pl);
LJ_FUNC uint8_t *lj_proflabel_switch(const ProfLabels *pl,
				     const ProfLabelRecs *r,
				     const lua_State *L, uint8_t *p,
				     ProfLabelSwitch *sw);
LJ_FUNC void lj_proflabel_taken(ProfLabels *pl, const ProfLabelSwitch *sw);

#endif
