/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Native stack unwinding for the profilers (x86-64, ARM64), from the call
** frame information of each loaded object (.eh_frame, through
** .eh_frame_hdr); from the same tables, where the interpreter's code lies.
*/

#ifndef _LJ_PROFUNWIND_H
#define _LJ_PROFUNWIND_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define LJ_PROFUNWIND_MAXSEG	512	/* Executable segments known. */

/* An object's executable segment, and where its unwind tables lie. */
typedef struct ProfUnwSeg {
  uintptr_t lo, hi;		/* The code. */
  _Atomic int gone;		/* Unloaded since: never read again. */
  uintptr_t hdr;		/* .eh_frame_hdr, 0 if it has none. */
  const int32_t *table;		/* Its search table: code, FDE; from hdr. */
  uint32_t nfde;
  uintptr_t tab_lo, tab_hi;	/* The segment holding the tables. */
} ProfUnwSeg;

/* The code the unwinder knows: appended to outside signal context,
** published by count; segments are never reused. gen changes when one is
** gone, which empties every cache. */
typedef struct ProfUnwObjs {
  ProfUnwSeg seg[LJ_PROFUNWIND_MAXSEG];
  _Atomic size_t n;
  _Atomic uint32_t gen;
  unsigned long long adds, subs;  /* The loader's counts at the last look. */
} ProfUnwObjs;

/* The rules found for a PC, when they are the usual kind: the CFA is a
** register plus an offset, the others are saved at offsets from it. One
** cache per walker: it is written by the steps that use it. */
#define LJ_PROFUNWIND_CACHE	1024	/* Power of two. */

typedef struct ProfUnwRule {
  uintptr_t pc;			/* 0: empty. */
  uint32_t gen;
  int32_t cfa_off;
  int16_t ra_off, bp_off, bx_off;  /* 0: the register is unchanged. */
  uint8_t cfa_reg, exact;
  uint8_t last;			/* No caller: the stack ends (_start). */
} ProfUnwRule;

typedef struct ProfUnwCache {
  ProfUnwRule rule[LJ_PROFUNWIND_CACHE];
  size_t lastseg;		/* The segment found last: tried first. */
} ProfUnwCache;

/* The sampled thread's stack, where a step may read freely; elsewhere only
** what probe (when set) says is readable. */
typedef struct ProfUnwStack {
  uintptr_t lo, hi;
  int (*probe)(void *ctx, const void *p, size_t n);
  void *ctx;
} ProfUnwStack;

/* What a step needs and restores: the callee-saved registers the VM's
** frames and the walk use (bp: the frame pointer, RBP or x29; bx: the
** interpreter's PC register, CFRAME_GREG_PC) and, on ARM64, the link
** register x30, where a function keeps its return address until its
** prologue saves it (0 on x86-64). exact: ip is where the frame was
** interrupted, not a return address (the first frame, a frame below a
** signal's); only then is lr the frame's own. */
typedef struct ProfUnwRegs {
  uintptr_t ip, sp, bp, bx, lr;
  int exact;
} ProfUnwRegs;

/* The registers of an interrupted context (<sys/ucontext.h>): its PC, its
** stack pointer, frame pointer, link register and general register n
** (CFRAME_GREG_* of lj_frame.h). */
#if defined(__x86_64__)
#define LJ_PROFUNW_UCPC(uc)	((uintptr_t)(uc)->uc_mcontext.gregs[REG_RIP])
#define LJ_PROFUNW_UCSP(uc)	((uintptr_t)(uc)->uc_mcontext.gregs[REG_RSP])
#define LJ_PROFUNW_UCFP(uc)	((uintptr_t)(uc)->uc_mcontext.gregs[REG_RBP])
#define LJ_PROFUNW_UCLR(uc)	((uintptr_t)0)
#define LJ_PROFUNW_UCREG(uc, n)	((uintptr_t)(uc)->uc_mcontext.gregs[(n)])
#elif defined(__aarch64__)
#define LJ_PROFUNW_UCPC(uc)	((uintptr_t)(uc)->uc_mcontext.pc)
#define LJ_PROFUNW_UCSP(uc)	((uintptr_t)(uc)->uc_mcontext.sp)
#define LJ_PROFUNW_UCFP(uc)	((uintptr_t)(uc)->uc_mcontext.regs[29])
#define LJ_PROFUNW_UCLR(uc)	((uintptr_t)(uc)->uc_mcontext.regs[30])
#define LJ_PROFUNW_UCREG(uc, n)	((uintptr_t)(uc)->uc_mcontext.regs[(n)])
#endif

/* The registers here, in the caller's frame, read in place (getcontext
** would make a system call): a walk from the code that calls this. */
static inline __attribute__((always_inline)) void
lj_profunwind_here(ProfUnwRegs *r)
{
#if defined(__x86_64__)
  __asm__ volatile("leaq 0(%%rip), %%rax\n\t"
		   "movq %%rax, %0\n\t"
		   "movq %%rsp, %1\n\t"
		   "movq %%rbp, %2\n\t"
		   "movq %%rbx, %3"
		   : "=m"(r->ip), "=m"(r->sp), "=m"(r->bp), "=m"(r->bx)
		   : : "rax");
  r->lr = 0;
#elif defined(__aarch64__)
  __asm__ volatile("adr x16, .\n\t"
		   "str x16, %0\n\t"
		   "mov x16, sp\n\t"
		   "str x16, %1\n\t"
		   "str x29, %2\n\t"
		   "str x21, %3\n\t"
		   "str x30, %4"
		   : "=m"(r->ip), "=m"(r->sp), "=m"(r->bp), "=m"(r->bx),
		     "=m"(r->lr)
		   : : "x16");
#endif
  r->exact = 1;
}

/* Not async-signal-safe: they read the process's list of objects. The
** objects loaded now, into an empty list and cache. */
void lj_profunwind_init(ProfUnwObjs *objs, ProfUnwCache *cache);
void lj_profunwind_addobjs(ProfUnwObjs *objs);
/* The same, when the loader counts a change since; 1 if it did. */
int lj_profunwind_refresh(ProfUnwObjs *objs);
int lj_profunwind_threadstack(uintptr_t *lo, uintptr_t *hi);
/* The interpreter's machine code [lo, hi); 0 if unknown. */
int lj_profunwind_vmcode(uintptr_t *lo, uintptr_t *hi);

/* Async-signal-safe: memory reads within the bounds above, nothing else. */
int lj_profunwind_known(const ProfUnwObjs *objs, uintptr_t ip);
int lj_profunwind_knownin(const ProfUnwObjs *objs, ProfUnwCache *cache,
			  uintptr_t ip);
int lj_profunwind_read(const ProfUnwStack *stk, uintptr_t at, uintptr_t *v);
int lj_profunwind_step(const ProfUnwObjs *objs, ProfUnwCache *cache,
		       const ProfUnwStack *stk, ProfUnwRegs *r);
/* Out of a leaf function that r interrupted, which keeps no frame: its
** return address on the stack (x64), in the link register (ARM64). */
int lj_profunwind_leafstep(const ProfUnwStack *stk, ProfUnwRegs *r);

#endif
