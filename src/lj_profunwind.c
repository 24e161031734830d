/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Native stack unwinding for the profilers (x86-64, ARM64).
**
** Each object's .eh_frame_hdr holds a sorted table of its functions and
** their FDEs. A step finds the FDE of the frame's PC, runs its CIE's and
** its own CFA program up to that PC (keeping the rules for the CFA, the
** return address, the frame pointer and the interpreter's PC register:
** what the walk and the VM's frames need) and applies them. This is what
** libunwind does, without its locks, signal masks and caches, and without
** ever meeting an object nobody told it of: objects are registered from
** outside signal context. On ARM64 the return address is the link
** register's column: until a prologue saves it, it is x30 itself, which
** only the interrupted frame knows.
**
** A step reads the registered tables, bounded by the segment that holds
** them, and the sampled stack, bounded by its extent or checked by the
** caller's probe. It allocates nothing, locks nothing, makes no system
** call of its own.
*/

#define _GNU_SOURCE
#define lj_profunwind_c

#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <ucontext.h>

#include "lj_obj.h"
#include "lj_vm.h"
#include "lj_profunwind.h"
#include "lj_profhost.h"

/* -- Bounded reads of unwind tables -------------------------------------- */

typedef struct Cursor {
  const uint8_t *p, *end;
  int bad;
} Cursor;

static void cur_init(Cursor *c, uintptr_t at, uintptr_t lo, uintptr_t hi)
{
  c->p = (const uint8_t *)at;
  c->end = (const uint8_t *)hi;
  c->bad = at < lo || at >= hi;
}

static int cur_skip(Cursor *c, uint64_t n)
{
  if (c->bad || (uint64_t)(c->end - c->p) < n) {
    c->bad = 1;
    return 0;
  }
  c->p += n;
  return 1;
}

/* n little-endian bytes, n <= 8. */
static uint64_t cur_bytes(Cursor *c, int n)
{
  uint64_t v = 0;
  int i;
  if (!cur_skip(c, (uint64_t)n))
    return 0;
  for (i = 0; i < n; i++)
    v |= (uint64_t)c->p[i-n] << (8*i);
  return v;
}

static uint64_t cur_leb(Cursor *c, int sign)
{
  uint64_t v = 0;
  unsigned shift = 0;
  uint8_t b = 0;
  do {
    if (c->bad || c->p >= c->end) {
      c->bad = 1;
      return 0;
    }
    b = *c->p++;
    if (shift < 64)
      v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  if (sign && shift < 64 && (b & 0x40))
    v |= ~(uint64_t)0 << shift;
  return v;
}

#define cur_uleb(c)	cur_leb((c), 0)
#define cur_sleb(c)	((int64_t)cur_leb((c), 1))

/* DW_EH_PE_* pointer encodings: the value's format, then what it is
** relative to. Indirect pointers are never followed. */
#define PE_OMIT		0xff
#define PE_INDIRECT	0x80
#define PE_DATAREL_S4	0x3b

static uintptr_t cur_ptr(Cursor *c, uint8_t enc, uintptr_t datarel)
{
  uintptr_t at = (uintptr_t)c->p, v;
  switch (enc & 0x0f) {
  case 0x00: case 0x04: case 0x0c: v = cur_bytes(c, 8); break;
  case 0x01: v = cur_uleb(c); break;
  case 0x02: v = cur_bytes(c, 2); break;
  case 0x03: v = cur_bytes(c, 4); break;
  case 0x09: v = (uintptr_t)cur_sleb(c); break;
  case 0x0a: v = (uintptr_t)(int16_t)cur_bytes(c, 2); break;
  case 0x0b: v = (uintptr_t)(int32_t)cur_bytes(c, 4); break;
  default: c->bad = 1; return 0;
  }
  switch (enc & 0x70) {
  case 0x00: return v;
  case 0x10: return v + at;
  case 0x30: return v + datarel;
  default: c->bad = 1; return 0;
  }
}

/* -- Stack reads --------------------------------------------------------- */

static int stack_holds(const ProfUnwStack *stk, uintptr_t at, size_t n)
{
  return stk->hi >= stk->lo + n && at >= stk->lo && at <= stk->hi - n;
}

int lj_profunwind_read(const ProfUnwStack *stk, uintptr_t at, uintptr_t *v)
{
  if (!stack_holds(stk, at, sizeof(*v)) &&
      !(stk->probe != NULL &&
	stk->probe(stk->ctx, (const void *)at, sizeof(*v))))
    return 0;
  memcpy(v, (const void *)at, sizeof(*v));
  return 1;
}

/* DWARF register numbers of the registers a step knows: the PC register
** (bx), the frame pointer (bp), the stack pointer, and the PC (x86-64:
** RIP, for PLT entries) or the link register (ARM64: x30). */
#if LJ_TARGET_X64
#define DW_BX		3	/* RBX */
#define DW_BP		6	/* RBP */
#define DW_SP		7	/* RSP */
#define DW_IP		16	/* RIP */
#elif LJ_TARGET_ARM64
#define DW_BX		21	/* x21 */
#define DW_BP		29	/* x29 */
#define DW_LR		30	/* x30 */
#define DW_SP		31	/* sp */
#endif

static int reg_value(const ProfUnwRegs *r, uint64_t dw, uintptr_t *v)
{
  switch (dw) {
  case DW_BX: *v = r->bx; return 1;
  case DW_BP: *v = r->bp; return 1;
  case DW_SP: *v = r->sp; return 1;
#ifdef DW_IP
  case DW_IP: *v = r->ip; return 1;
#endif
#ifdef DW_LR
  case DW_LR: if (!r->exact) return 0; *v = r->lr; return 1;
#endif
  default: return 0;
  }
}

/* A return address as code: ARM64's pointer authentication may have
** signed it (DW_CFA_AARCH64_negate_ra_state says so), its signature in
** the high bits. XPACLRI strips them from x30, and is a no-op (a hint)
** on cores without PAC. */
static uintptr_t ra_strip(uintptr_t ra)
{
#if LJ_TARGET_ARM64
  register uintptr_t x30 __asm__("x30") = ra;
  __asm__("hint #7" : "+r"(x30));  /* XPACLRI */
  return x30;
#else
  return ra;
#endif
}

/* -- DWARF expressions --------------------------------------------------- */

#define EXPR_STACK	8

/* The operations compilers emit for x86-64 and ARM64 frames: PLT entries
** compute their CFA from RSP and RIP, signal trampolines find registers
** in the saved context. push: the CFA, pushed first for a register's rule. */
static int expr_eval(const uint8_t *p, uint64_t len, const ProfUnwRegs *r,
		     const ProfUnwStack *stk, const uintptr_t *push,
		     uintptr_t *out)
{
  uintptr_t st[EXPR_STACK], a, b;
  int n = 0;
  Cursor c;
  c.p = p; c.end = p + len; c.bad = 0;
  if (push != NULL)
    st[n++] = *push;
  while (c.p < c.end && !c.bad) {
    uint8_t op = *c.p++;
    if (n >= EXPR_STACK)
      return 0;
    if (op >= 0x30 && op <= 0x4f) {  /* DW_OP_lit0..31 */
      st[n++] = op - 0x30;
      continue;
    }
    if (op >= 0x70 && op <= 0x8f) {  /* DW_OP_breg0..31 */
      if (!reg_value(r, op - 0x70, &a))
	return 0;
      st[n++] = a + (uintptr_t)cur_sleb(&c);
      continue;
    }
    switch (op) {
    case 0x08: st[n++] = cur_bytes(&c, 1); continue;
    case 0x09: st[n++] = (uintptr_t)(int8_t)cur_bytes(&c, 1); continue;
    case 0x0a: st[n++] = cur_bytes(&c, 2); continue;
    case 0x0b: st[n++] = (uintptr_t)(int16_t)cur_bytes(&c, 2); continue;
    case 0x0c: st[n++] = cur_bytes(&c, 4); continue;
    case 0x0d: st[n++] = (uintptr_t)(int32_t)cur_bytes(&c, 4); continue;
    case 0x0e: case 0x0f: st[n++] = cur_bytes(&c, 8); continue;
    case 0x10: st[n++] = cur_uleb(&c); continue;
    case 0x11: st[n++] = (uintptr_t)cur_sleb(&c); continue;
    case 0x12: if (n < 1) return 0; st[n] = st[n-1]; n++; continue;
    case 0x23: if (n < 1) return 0; st[n-1] += cur_uleb(&c); continue;
    case 0x06:  /* DW_OP_deref */
      if (n < 1 || !lj_profunwind_read(stk, st[n-1], &st[n-1]))
	return 0;
      continue;
    default:
      break;
    }
    /* Binary operations: the second entry against the top one. */
    if (n < 2)
      return 0;
    b = st[--n];
    a = st[n-1];
    switch (op) {
    case 0x1a: a &= b; break;
    case 0x1c: a -= b; break;
    case 0x21: a |= b; break;
    case 0x22: a += b; break;
    case 0x24: a = b < 64 ? a << b : 0; break;
    case 0x25: a = b < 64 ? a >> b : 0; break;
    case 0x27: a ^= b; break;
    case 0x29: a = a == b; break;
    case 0x2a: a = (intptr_t)a >= (intptr_t)b; break;
    case 0x2b: a = (intptr_t)a > (intptr_t)b; break;
    case 0x2c: a = (intptr_t)a <= (intptr_t)b; break;
    case 0x2d: a = (intptr_t)a < (intptr_t)b; break;
    case 0x2e: a = a != b; break;
    default: return 0;
    }
    st[n-1] = a;
  }
  if (c.bad || n == 0)
    return 0;
  *out = st[n-1];
  return 1;
}

/* -- FDE and CIE --------------------------------------------------------- */

typedef struct Fde {
  uintptr_t start, end;		/* The code it describes. */
  const uint8_t *cie_ins, *cie_end, *ins, *end_ins;  /* CFA programs. */
  uint64_t code_align;
  int64_t data_align;
  uint64_t ra;			/* Column of the return address. */
  uint8_t enc;			/* Pointer encoding. */
  uint8_t augdata;		/* FDEs have augmentation data ('z'). */
  uint8_t signal;		/* A signal trampoline's ('S'). */
} Fde;

/* A CIE or FDE's length and extent; 0 for the end marker or damage. */
static int entry_open(Cursor *c, const ProfUnwSeg *s, uintptr_t at)
{
  uint64_t len;
  cur_init(c, at, s->tab_lo, s->tab_hi);
  len = cur_bytes(c, 4);
  if (len == 0xffffffffu)
    len = cur_bytes(c, 8);
  if (c->bad || len == 0 || len > (uint64_t)(c->end - c->p))
    return 0;
  c->end = c->p + len;
  return 1;
}

static int cie_parse(const ProfUnwSeg *s, uintptr_t at, Fde *f)
{
  Cursor c;
  const char *aug;
  uint8_t version;
  if (!entry_open(&c, s, at) || cur_bytes(&c, 4) != 0)
    return 0;  /* Not a CIE. */
  version = (uint8_t)cur_bytes(&c, 1);
  if (version != 1 && version != 3)
    return 0;
  aug = (const char *)c.p;
  while (!c.bad && cur_bytes(&c, 1) != 0) ;
  if (c.bad)
    return 0;
  if (aug[0] == 'e' && aug[1] == 'h')
    cur_skip(&c, 8);
  f->code_align = cur_uleb(&c);
  f->data_align = cur_sleb(&c);
  f->ra = version == 1 ? cur_bytes(&c, 1) : cur_uleb(&c);
  f->enc = 0;
  f->signal = 0;
  f->augdata = aug[0] == 'z';
  if (f->augdata) {
    uint64_t len = cur_uleb(&c);
    const uint8_t *data = c.p;
    if (c.bad || len > (uint64_t)(c.end - data))
      return 0;
    for (aug++; *aug != '\0' && !c.bad; aug++) {
      if (*aug == 'R') f->enc = (uint8_t)cur_bytes(&c, 1);
      else if (*aug == 'P') cur_ptr(&c, (uint8_t)cur_bytes(&c, 1), 0);
      else if (*aug == 'L') cur_bytes(&c, 1);
      else if (*aug == 'S') f->signal = 1;
      else if (*aug != 'B' && *aug != 'G') break;  /* Skipped by length. */
    }
    c.p = data + len;
  }
  if (c.bad || c.p > c.end || (f->enc & PE_INDIRECT))
    return 0;
  f->cie_ins = c.p;
  f->cie_end = c.end;
  return 1;
}

static int fde_parse(const ProfUnwSeg *s, uintptr_t at, Fde *f)
{
  Cursor c;
  uintptr_t idp;
  uint64_t cie;
  if (!entry_open(&c, s, at))
    return 0;
  idp = (uintptr_t)c.p;
  cie = cur_bytes(&c, 4);
  if (c.bad || cie == 0 || !cie_parse(s, idp - (uintptr_t)cie, f))
    return 0;
  f->start = cur_ptr(&c, f->enc, 0);
  f->end = f->start + cur_ptr(&c, f->enc & 0x0f, 0);
  if (f->augdata)
    cur_skip(&c, cur_uleb(&c));
  f->ins = c.p;
  f->end_ins = c.end;
  return !c.bad;
}

/* -- CFA programs -------------------------------------------------------- */

/* How a register of the caller is found, from the CFA. */
enum {
  RULE_SAME, RULE_UNDEF, RULE_OFFSET, RULE_VALOFFSET, RULE_REG, RULE_EXPR,
  RULE_VALEXPR
};

typedef struct Rule {
  uint8_t kind;
  int64_t arg;			/* Offset, register, or expression length. */
  const uint8_t *expr;
} Rule;

/* The registers followed: the PC register, the frame pointer and the
** return address. */
enum { COL_BX, COL_BP, COL_RA, COL__MAX };

typedef struct Rules {
  Rule cfa;			/* RULE_REG: register + cfa_off; or RULE_EXPR. */
  int64_t cfa_off;
  Rule col[COL__MAX];
} Rules;

#define STATE_DEPTH	4	/* DW_CFA_remember_state nesting kept. */

/* The column a register's rule is kept in, or -1 for one nobody asks for. */
static int col_of(const Fde *f, uint64_t reg)
{
  if (reg == DW_BX) return COL_BX;
  if (reg == DW_BP) return COL_BP;
  if (reg == f->ra) return COL_RA;
  return -1;
}

static void rule_set(Rules *rs, const Fde *f, uint64_t reg, uint8_t kind,
		     int64_t arg, const uint8_t *expr)
{
  int k = col_of(f, reg);
  if (k >= 0) {
    rs->col[k].kind = kind;
    rs->col[k].arg = arg;
    rs->col[k].expr = expr;
  }
}

static void rule_restore(Rules *rs, const Rules *init, const Fde *f,
			 uint64_t reg)
{
  int k = col_of(f, reg);
  if (k >= 0)
    rs->col[k] = init->col[k];
}

/* A factored offset: a LEB128 number times the data alignment. */
static int64_t cur_factored(Cursor *c, const Fde *f, int sign)
{
  return (int64_t)cur_leb(c, sign) * f->data_align;
}

/* Run a CFA program while its location is at most pc. init: the rules
** after the CIE's program, what DW_CFA_restore returns to. */
static int cfa_run(const Fde *f, const uint8_t *p, const uint8_t *end,
		   uintptr_t pc, Rules *rs, const Rules *init)
{
  Rules saved[STATE_DEPTH];
  int depth = 0;
  uintptr_t loc = f->start;
  Cursor c;
  c.p = p; c.end = end; c.bad = 0;
  while (c.p < c.end && !c.bad) {
    uint8_t op = *c.p++;
    uint64_t reg, len;
    uintptr_t delta = 0;
    switch (op >> 6) {
    case 1: delta = op & 0x3f; goto advance;
    case 2: reg = op & 0x3f;
      rule_set(rs, f, reg, RULE_OFFSET, cur_factored(&c, f, 0), NULL);
      continue;
    case 3: rule_restore(rs, init, f, op & 0x3f); continue;
    default: break;
    }
    switch (op) {
    case 0x00: break;  /* DW_CFA_nop */
    case 0x01: loc = cur_ptr(&c, f->enc, 0); if (loc > pc) return 1; break;
    case 0x02: delta = cur_bytes(&c, 1); goto advance;
    case 0x03: delta = cur_bytes(&c, 2); goto advance;
    case 0x04: delta = cur_bytes(&c, 4); goto advance;
    case 0x05: reg = cur_uleb(&c);
      rule_set(rs, f, reg, RULE_OFFSET, cur_factored(&c, f, 0), NULL);
      break;
    case 0x06: rule_restore(rs, init, f, cur_uleb(&c)); break;
    case 0x07: rule_set(rs, f, cur_uleb(&c), RULE_UNDEF, 0, NULL); break;
    case 0x08: rule_set(rs, f, cur_uleb(&c), RULE_SAME, 0, NULL); break;
    case 0x09: reg = cur_uleb(&c);
      rule_set(rs, f, reg, RULE_REG, (int64_t)cur_uleb(&c), NULL);
      break;
    case 0x0a:  /* DW_CFA_remember_state */
      if (depth == STATE_DEPTH) return 0;
      saved[depth++] = *rs;
      break;
    case 0x0b:  /* DW_CFA_restore_state */
      if (depth == 0) return 0;
      *rs = saved[--depth];
      break;
    case 0x0c: rs->cfa.kind = RULE_REG; rs->cfa.arg = (int64_t)cur_uleb(&c);
      rs->cfa_off = (int64_t)cur_uleb(&c);
      break;
    case 0x0d: rs->cfa.kind = RULE_REG; rs->cfa.arg = (int64_t)cur_uleb(&c);
      break;
    case 0x0e: rs->cfa_off = (int64_t)cur_uleb(&c); break;
    case 0x0f: len = cur_uleb(&c);
      rs->cfa.kind = RULE_EXPR; rs->cfa.arg = (int64_t)len; rs->cfa.expr = c.p;
      cur_skip(&c, len);
      break;
    case 0x10: case 0x16: reg = cur_uleb(&c); len = cur_uleb(&c);
      rule_set(rs, f, reg, op == 0x10 ? RULE_EXPR : RULE_VALEXPR,
	       (int64_t)len, c.p);
      cur_skip(&c, len);
      break;
    case 0x11: reg = cur_uleb(&c);
      rule_set(rs, f, reg, RULE_OFFSET, cur_factored(&c, f, 1), NULL);
      break;
    case 0x12: rs->cfa.kind = RULE_REG; rs->cfa.arg = (int64_t)cur_uleb(&c);
      rs->cfa_off = cur_factored(&c, f, 1);
      break;
    case 0x13: rs->cfa_off = cur_factored(&c, f, 1); break;
    case 0x14: reg = cur_uleb(&c);
      rule_set(rs, f, reg, RULE_VALOFFSET, cur_factored(&c, f, 0), NULL);
      break;
    case 0x15: reg = cur_uleb(&c);
      rule_set(rs, f, reg, RULE_VALOFFSET, cur_factored(&c, f, 1), NULL);
      break;
    case 0x2d: break;  /* DW_CFA_AARCH64_negate_ra_state: see ra_strip. */
    case 0x2e: cur_uleb(&c); break;  /* DW_CFA_GNU_args_size */
    case 0x2f: reg = cur_uleb(&c);  /* DW_CFA_GNU_negative_offset_extended */
      rule_set(rs, f, reg, RULE_OFFSET, -cur_factored(&c, f, 0), NULL);
      break;
    default: return 0;
    }
    continue;
  advance:
    loc += delta * f->code_align;
    if (loc > pc)
      return 1;
  }
  return !c.bad;
}

/* A caller's register by its rule: 1, or 0 when it cannot be known. */
static int rule_apply(const Rule *ru, const ProfUnwRegs *r,
		      const ProfUnwStack *stk, uintptr_t cfa, uintptr_t *v)
{
  uintptr_t at;
  switch (ru->kind) {
  case RULE_SAME: return 1;
  case RULE_OFFSET: return lj_profunwind_read(stk, cfa + (uintptr_t)ru->arg, v);
  case RULE_VALOFFSET: *v = cfa + (uintptr_t)ru->arg; return 1;
  case RULE_REG: return reg_value(r, (uint64_t)ru->arg, v);
  case RULE_EXPR:
    return expr_eval(ru->expr, (uint64_t)ru->arg, r, stk, &cfa, &at) &&
	   lj_profunwind_read(stk, at, v);
  case RULE_VALEXPR:
    return expr_eval(ru->expr, (uint64_t)ru->arg, r, stk, &cfa, v);
  default: return 0;
  }
}

/* -- Finding a PC's FDE -------------------------------------------------- */

static int seg_holds(const ProfUnwSeg *s, uintptr_t pc)
{
  return pc >= s->lo && pc < s->hi &&
	 !atomic_load_explicit(&s->gone, memory_order_relaxed);
}

/* A walk stays in few objects: the one found last (*last, if given) is
** tried first. */
static const ProfUnwSeg *seg_find(const ProfUnwObjs *objs, uintptr_t pc,
				  size_t *last)
{
  size_t i = atomic_load_explicit(&objs->n, memory_order_acquire);
  if (last != NULL && *last < i && seg_holds(&objs->seg[*last], pc))
    return &objs->seg[*last];
  while (i-- > 0) {  /* The newest first: it replaced what it overlaps. */
    if (seg_holds(&objs->seg[i], pc)) {
      if (last != NULL)
	*last = i;
      return &objs->seg[i];
    }
  }
  return NULL;
}

/* The FDE whose function starts last at or before pc. */
static int fde_find(const ProfUnwSeg *s, uintptr_t pc, Fde *f)
{
  uint32_t lo = 0, hi = s->nfde;
  if (hi == 0 || s->hdr + (uintptr_t)(intptr_t)s->table[0] > pc)
    return 0;
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (s->hdr + (uintptr_t)(intptr_t)s->table[2*mid] <= pc)
      lo = mid;
    else
      hi = mid;
  }
  return fde_parse(s, s->hdr + (uintptr_t)(intptr_t)s->table[2*lo+1], f) &&
	 pc >= f->start && pc < f->end;
}

/* The rules in force at pc. */
static int rules_at(const Fde *f, uintptr_t pc, Rules *rs)
{
  Rules init;
  memset(&init, 0, sizeof(init));  /* RULE_SAME, no CFA yet. */
  init.cfa.kind = RULE_UNDEF;
  if (!cfa_run(f, f->cie_ins, f->cie_end, UINTPTR_MAX, &init, &init))
    return 0;
  *rs = init;
  return cfa_run(f, f->ins, f->end_ins, pc, rs, &init);
}

/* -- Stepping ------------------------------------------------------------ */

int lj_profunwind_known(const ProfUnwObjs *objs, uintptr_t ip)
{
  return seg_find(objs, ip, NULL) != NULL;
}

int lj_profunwind_knownin(const ProfUnwObjs *objs, ProfUnwCache *cache,
			  uintptr_t ip)
{
  return seg_find(objs, ip, &cache->lastseg) != NULL;
}

/* The rules as a cache entry, if they are of the kind it holds. */
static int rule_compact(const Rules *rs, const Fde *f, ProfUnwRule *e)
{
  const Rule *col = rs->col;
  int k;
  int16_t *off[COL__MAX];
  off[COL_BX] = &e->bx_off; off[COL_BP] = &e->bp_off; off[COL_RA] = &e->ra_off;
  /* Every walk ends there: kept, not found again each time. */
  if ((e->last = col[COL_RA].kind == RULE_UNDEF))
    return 1;
  if (rs->cfa.kind != RULE_REG || rs->cfa_off != (int32_t)rs->cfa_off ||
      (rs->cfa.arg != DW_SP && rs->cfa.arg != DW_BP && rs->cfa.arg != DW_BX))
    return 0;
  for (k = 0; k < COL__MAX; k++) {
    if (col[k].kind == RULE_SAME && k != COL_RA)
      *off[k] = 0;
    else if (col[k].kind == RULE_OFFSET && col[k].arg != 0 &&
	     col[k].arg == (int16_t)col[k].arg)
      *off[k] = (int16_t)col[k].arg;
    else
      return 0;
  }
  e->cfa_reg = (uint8_t)rs->cfa.arg;
  e->cfa_off = (int32_t)rs->cfa_off;
  e->exact = f->signal;
  return 1;
}

/* The caller's registers: its frame is the next to unwind. On ARM64 its
** link register held the return address. */
static int regs_caller(ProfUnwRegs *r, uintptr_t ip, uintptr_t sp,
		       uintptr_t bp, uintptr_t bx, int exact)
{
  r->ip = ra_strip(ip);
  r->sp = sp;
  r->bp = bp;
  r->bx = bx;
#if LJ_TARGET_ARM64
  r->lr = r->ip;
#else
  r->lr = 0;
#endif
  r->exact = exact;
  return 1;
}

/* A register saved off bytes from the CFA (0: not saved, unchanged). */
static int saved_read(const ProfUnwStack *stk, uintptr_t cfa, int16_t off,
		      uintptr_t *v)
{
  return off == 0 || lj_profunwind_read(stk, cfa + (uintptr_t)(intptr_t)off, v);
}

/* A step by a cache entry. */
static int step_compact(const ProfUnwRule *e, const ProfUnwStack *stk,
			ProfUnwRegs *r)
{
  uintptr_t cfa = 0, ra, bp = r->bp, bx = r->bx;
  if (e->last)
    return 0;
  reg_value(r, e->cfa_reg, &cfa);  /* One of those it knows. */
  cfa += (uintptr_t)(intptr_t)e->cfa_off;
  if ((!e->exact && cfa <= r->sp) || !saved_read(stk, cfa, e->ra_off, &ra) ||
      !saved_read(stk, cfa, e->bp_off, &bp) ||
      !saved_read(stk, cfa, e->bx_off, &bx))
    return 0;
  return regs_caller(r, ra, cfa, bp, bx, e->exact);
}

/* A return address still in its register: ARM64's x30, known in the
** interrupted frame only. x86-64 keeps none in a register. */
static int ra_inreg(const ProfUnwRegs *r, const Fde *f, uintptr_t *ra)
{
#ifdef DW_LR
  return f->ra == DW_LR && reg_value(r, DW_LR, ra);
#else
  UNUSED(r); UNUSED(f); UNUSED(ra);
  return 0;
#endif
}

/* A step by the rules, as the FDE gives them. */
static int step_rules(const Rules *rs, const Fde *f, const ProfUnwStack *stk,
		      ProfUnwRegs *r)
{
  uintptr_t cfa, ra, bp = r->bp, bx = r->bx;
  if (rs->cfa.kind == RULE_REG) {
    if (!reg_value(r, (uint64_t)rs->cfa.arg, &cfa))
      return 0;
    cfa += (uintptr_t)rs->cfa_off;
  } else if (rs->cfa.kind != RULE_EXPR ||
	     !expr_eval(rs->cfa.expr, (uint64_t)rs->cfa.arg, r, stk, NULL, &cfa)) {
    return 0;
  }
  /* The stack only grows down, but for a signal's frame; a frame that
  ** keeps its return address in a register (ARM64's leaf functions, any
  ** function before its prologue) may have no stack of its own. An
  ** undefined return address ends the stack (_start, thread entries). */
  if (rs->col[COL_RA].kind == RULE_SAME) {
    if (!ra_inreg(r, f, &ra) || cfa < r->sp)
      return 0;
  } else if ((!f->signal && cfa <= r->sp) ||
	     !rule_apply(&rs->col[COL_RA], r, stk, cfa, &ra)) {
    return 0;
  }
  if (!rule_apply(&rs->col[COL_BP], r, stk, cfa, &bp))
    bp = 0;
  if (!rule_apply(&rs->col[COL_BX], r, stk, cfa, &bx))
    bx = 0;
  return regs_caller(r, ra, cfa, bp, bx, f->signal);
}

/* Code of a known object that has no unwind entry: ARM64's PLT entries
** (x86-64's have theirs), a leaf written without CFI. Interrupted there,
** the frame has not touched the stack or the link register: the caller
** is x30's. */
static int step_nofde(ProfUnwRegs *r)
{
#if LJ_TARGET_ARM64
  if (r->exact && r->lr != 0)
    return regs_caller(r, r->lr, r->sp, r->bp, r->bx, 0);
#else
  UNUSED(r);
#endif
  return 0;
}

#if LJ_TARGET_ARM64
/* The signal return trampoline, the kernel's (__kernel_rt_sigreturn in
** the vDSO) or qemu-user's: mov x8, #139 (rt_sigreturn); svc #0. A handler
** returns there, and the stack holds the signal's frame: a siginfo_t, then
** the ucontext_t of the code it interrupted. The vDSO's CFI restores x29
** and x30 alone, qemu's trampoline has none: the registers are read from
** that context, as debuggers do. */
#define SIGTRAMP_INS		0xd4000001d2801168ull

/* Two instructions of code at ip: in a known object, or where the
** caller's probe says they may be read. */
static int code_read(const ProfUnwObjs *objs, const ProfUnwStack *stk,
		     uintptr_t ip, uint64_t *v)
{
  if (!(seg_find(objs, ip, NULL) != NULL &&
	seg_find(objs, ip + sizeof(*v) - 1, NULL) != NULL) &&
      !(stk->probe != NULL && stk->probe(stk->ctx, (const void *)ip,
					 sizeof(*v))))
    return 0;
  memcpy(v, (const void *)ip, sizeof(*v));
  return 1;
}
#endif

/* A step out of a signal handler's frame, where r->ip is a return address
** into the trampoline. */
static int step_sigframe(const ProfUnwObjs *objs, const ProfUnwStack *stk,
			 ProfUnwRegs *r)
{
#if LJ_TARGET_ARM64
  uintptr_t mc = r->sp + sizeof(siginfo_t) +
		 offsetof(ucontext_t, uc_mcontext);
  uintptr_t pc, sp, fp, lr, bx;
  uint64_t ins;
  if (r->exact || (r->ip & 3) || !code_read(objs, stk, r->ip, &ins) ||
      ins != SIGTRAMP_INS ||
      !lj_profunwind_read(stk, mc + offsetof(mcontext_t, pc), &pc) ||
      !lj_profunwind_read(stk, mc + offsetof(mcontext_t, sp), &sp) ||
      !lj_profunwind_read(stk, mc + offsetof(mcontext_t, regs[29]), &fp) ||
      !lj_profunwind_read(stk, mc + offsetof(mcontext_t, regs[30]), &lr) ||
      !lj_profunwind_read(stk, mc + offsetof(mcontext_t, regs[DW_BX]), &bx))
    return 0;
  regs_caller(r, pc, sp, fp, bx, 1);
  r->lr = lr;  /* The interrupted frame's own: its return address yet. */
  return 1;
#else
  UNUSED(objs); UNUSED(stk); UNUSED(r);
  return 0;
#endif
}

int lj_profunwind_step(const ProfUnwObjs *objs, ProfUnwCache *cache,
		       const ProfUnwStack *stk, ProfUnwRegs *r)
{
  /* A return address is looked up inside the call it returns from. */
  uintptr_t pc = r->exact ? r->ip : r->ip - 1;
  uint32_t gen = atomic_load_explicit(&objs->gen, memory_order_acquire);
  ProfUnwRule *e = NULL;
  const ProfUnwSeg *s;
  Fde f;
  Rules rs;
  if (cache != NULL) {
    uintptr_t h = (uintptr_t)((pc * 0x9e3779b97f4a7c15ull) >> 54);
    e = &cache->rule[h & (LJ_PROFUNWIND_CACHE-1)];
    if (e->pc == pc && e->gen == gen)
      return step_compact(e, stk, r);
  }
  s = seg_find(objs, pc, cache != NULL ? &cache->lastseg : NULL);
  if (s == NULL)  /* qemu-user's trampoline lies in no object. */
    return step_sigframe(objs, stk, r);
  if (s->nfde == 0 || !fde_find(s, pc, &f))
    return step_nofde(r);
  if (!rules_at(&f, pc, &rs))
    return 0;
#if LJ_TARGET_ARM64
  if (f.signal)  /* The vDSO's: its CFI restores too little. */
    return step_sigframe(objs, stk, r);
#endif
  if (e != NULL) {
    ProfUnwRule fresh;
    if (rule_compact(&rs, &f, &fresh)) {
      fresh.pc = pc;
      fresh.gen = gen;
      *e = fresh;
    }
  }
  return step_rules(&rs, &f, stk, r);
}

int lj_profunwind_leafstep(const ProfUnwStack *stk, ProfUnwRegs *r)
{
#if LJ_TARGET_ARM64
  UNUSED(stk);
  return r->exact && r->lr != 0 &&
	 regs_caller(r, r->lr, r->sp, r->bp, r->bx, 0);
#else
  uintptr_t ra;
  return r->exact && lj_profunwind_read(stk, r->sp, &ra) &&
	 regs_caller(r, ra, r->sp + sizeof(uintptr_t), r->bp, r->bx, 0);
#endif
}

/* -- Objects ------------------------------------------------------------- */

/* An object's unwind tables, into a segment's description. */
static void seg_tables(const struct dl_phdr_info *info, ProfUnwSeg *s)
{
  const ElfW(Phdr) *eh = NULL;
  Cursor c;
  uint8_t ptr_enc, count_enc, table_enc;
  int i;
  s->hdr = s->tab_lo = s->tab_hi = 0;
  s->table = NULL;
  s->nfde = 0;
  for (i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
      eh = &info->dlpi_phdr[i];
  if (eh == NULL)
    return;
  s->hdr = info->dlpi_addr + eh->p_vaddr;
  for (i = 0; i < info->dlpi_phnum; i++) {  /* The segment that holds it. */
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && s->hdr >= lo && s->hdr < lo + ph->p_memsz) {
      s->tab_lo = lo;
      s->tab_hi = lo + ph->p_memsz;
    }
  }
  cur_init(&c, s->hdr, s->tab_lo, s->tab_hi);
  if (cur_bytes(&c, 1) != 1)
    return;  /* Not a version we know. */
  ptr_enc = (uint8_t)cur_bytes(&c, 1);
  count_enc = (uint8_t)cur_bytes(&c, 1);
  table_enc = (uint8_t)cur_bytes(&c, 1);
  if (ptr_enc == PE_OMIT || count_enc == PE_OMIT || table_enc != PE_DATAREL_S4)
    return;  /* No search table. */
  cur_ptr(&c, ptr_enc, s->hdr);
  s->nfde = (uint32_t)cur_ptr(&c, count_enc, s->hdr);
  if (c.bad || ((uintptr_t)c.p & 3) ||
      (uint64_t)s->nfde * 8 > (uint64_t)(c.end - c.p)) {
    s->nfde = 0;
    return;
  }
  s->table = (const int32_t *)c.p;
}

typedef struct Walk {
  ProfUnwObjs *objs;
  unsigned long long adds, subs;  /* The same in every entry. */
  uint8_t seen[LJ_PROFUNWIND_MAXSEG];
} Walk;

/* The first entry has the counts: one is enough. */
static int count_objs(struct dl_phdr_info *info, size_t size, void *data)
{
  Walk *w = (Walk *)data;
  (void)size;
  w->adds = info->dlpi_adds;
  w->subs = info->dlpi_subs;
  return 1;
}

static int walk_obj(struct dl_phdr_info *info, size_t size, void *data)
{
  Walk *w = (Walk *)data;
  ProfUnwObjs *objs = w->objs;
  size_t n = atomic_load_explicit(&objs->n, memory_order_relaxed), k;
  ProfUnwSeg tables;
  int i, read = 0;
  count_objs(info, size, data);
  for (i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
      continue;
    for (k = 0; k < n; k++)
      if (objs->seg[k].lo == lo && objs->seg[k].hi == hi &&
	  !atomic_load_explicit(&objs->seg[k].gone, memory_order_relaxed))
	break;
    if (k < n) {
      w->seen[k] = 1;
      continue;
    }
    if (n == LJ_PROFUNWIND_MAXSEG)
      break;
    if (!read++)
      seg_tables(info, &tables);
    objs->seg[n] = tables;
    objs->seg[n].lo = lo;
    objs->seg[n].hi = hi;
    atomic_init(&objs->seg[n].gone, 0);
    w->seen[n++] = 1;
    atomic_store_explicit(&objs->n, n, memory_order_release);
  }
  return 0;
}

void lj_profunwind_addobjs(ProfUnwObjs *objs)
{
  Walk w;
  size_t k, n = atomic_load_explicit(&objs->n, memory_order_relaxed);
  w.objs = objs;
  memset(w.seen, 0, sizeof(w.seen));
  lj_profhost_objects(walk_obj, &w);
  for (k = 0; k < n; k++)  /* Unloaded: a step never reads its tables. */
    if (!w.seen[k] &&
	!atomic_exchange_explicit(&objs->seg[k].gone, 1, memory_order_relaxed))
      atomic_fetch_add_explicit(&objs->gen, 1, memory_order_release);
  objs->adds = w.adds;
  objs->subs = w.subs;
}

void lj_profunwind_init(ProfUnwObjs *objs, ProfUnwCache *cache)
{
  atomic_store(&objs->n, 0);
  memset(cache, 0, sizeof(*cache));
  lj_profunwind_addobjs(objs);
}

int lj_profunwind_refresh(ProfUnwObjs *objs)
{
  Walk w;
  w.adds = objs->adds;
  w.subs = objs->subs;
  lj_profhost_objects(count_objs, &w);
  if (w.adds == objs->adds && w.subs == objs->subs)
    return 0;
  lj_profunwind_addobjs(objs);
  return 1;
}

typedef struct Range {
  uintptr_t ip, lo, hi;
  int found;
} Range;

static int range_obj(struct dl_phdr_info *info, size_t size, void *data)
{
  Range *rg = (Range *)data;
  ProfUnwSeg s;
  Fde f;
  int i;
  (void)size;
  for (i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
	rg->ip >= lo && rg->ip < lo + ph->p_memsz) {
      seg_tables(info, &s);
      if (s.nfde != 0 && fde_find(&s, rg->ip, &f)) {
	rg->lo = f.start;
	rg->hi = f.end;
	rg->found = 1;
      }
      return 1;
    }
  }
  return 0;
}

/* The range of the FDE that holds ip, in any loaded object. */
static int range_find(uintptr_t ip, uintptr_t *lo, uintptr_t *hi)
{
  Range rg;
  rg.ip = ip;
  rg.lo = rg.hi = 0;
  rg.found = 0;
  lj_profhost_objects(range_obj, &rg);
  *lo = rg.lo;
  *hi = rg.hi;
  return rg.found;
}

/* The interpreter's code: its unwind entry spans it all. */
int lj_profunwind_vmcode(uintptr_t *lo, uintptr_t *hi)
{
  return range_find((uintptr_t)lj_vm_asm_begin, lo, hi);
}

int lj_profunwind_threadstack(uintptr_t *lo, uintptr_t *hi)
{
  pthread_attr_t attr;
  void *addr;
  size_t size;
  int ok;
  if (pthread_getattr_np(pthread_self(), &attr) != 0)
    return 0;
  ok = pthread_attr_getstack(&attr, &addr, &size) == 0;
  pthread_attr_destroy(&attr);
  *lo = ok ? (uintptr_t)addr : 0;
  *hi = ok ? (uintptr_t)addr + size : 0;
  return ok;
}
