/*
** What the VM tells its profilers: code that appears, and the VM closing.
*/

#ifndef _LJ_PROF_H
#define _LJ_PROF_H

#include "lj_obj.h"
#include "lj_frame.h"

struct GCtrace;

/* The function of a frame, if the frame is one of L's stack: profilers
** read frames the VM may be changing, and check before they follow. */
static LJ_AINLINE GCfunc *lj_prof_framefunc(lua_State *L, cTValue *frame)
{
  cTValue *fslot = frame - LJ_FR2;
  if (fslot < tvref(L->stack) || frame >= tvref(L->stack) + L->stacksize ||
      !tvisfunc(fslot))
    return NULL;
  return frame_func(frame);
}

/* A proto or a trace is complete: a running profile announces it. */
LJ_FUNC void lj_prof_addproto(global_State *g, const GCproto *pt);
#if LJ_HASJIT
LJ_FUNC void lj_prof_addtrace(global_State *g, const struct GCtrace *T);
#endif
/* lua_close: profiles of this VM stop and complete their streams. */
LJ_FUNC void lj_prof_close(global_State *g);

#endif
