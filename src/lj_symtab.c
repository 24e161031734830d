/*
** Symbol tables of profile streams.
*/

#define _GNU_SOURCE
#define lj_symtab_c
#define LUA_CORE

#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "lj_obj.h"
#include "lj_debug.h"
#if LJ_HASJIT
#include "lj_jit.h"
#include "lj_dispatch.h"
#endif
#include "lj_symtab.h"

/* -- Lua functions and traces -------------------------------------------- */

void lj_symtab_writeproto(struct lj_wbuf *out, uint8_t header,
			  const GCproto *pt)
{
  GCstr *name = proto_chunkname(pt);
  lj_wbuf_addbyte(out, header);
  lj_wbuf_adduleb(out, (uintptr_t)pt);
  lj_wbuf_addstring(out, strdata(name), name->len);
  /* Built-ins have line -1: the format keeps its 64 bit two's complement. */
  lj_wbuf_adduleb(out, (uint64_t)(int64_t)pt->firstline);
}

#if LJ_HASJIT
void lj_symtab_writetrace(struct lj_wbuf *out, uint8_t header,
			  const GCtrace *T)
{
  GCproto *pt = &gcref(T->startpt)->pt;
  BCPos pc = proto_bcpos(pt, mref(T->startpc, const BCIns));
  lj_wbuf_addbyte(out, header);
  lj_wbuf_adduleb(out, (uint64_t)T->traceno);
  lj_wbuf_adduleb(out, (uintptr_t)pt);
  lj_wbuf_adduleb(out, (uint64_t)(int64_t)lj_debug_line(pt, pc));
}
#endif

static void symtab_luacode(struct lj_wbuf *out, global_State *g)
{
  GCobj *o;
  for (o = gcref(g->gc.root); o != NULL; o = gcref(o->gch.nextgc))
    if (o->gch.gct == ~LJ_TPROTO)
      lj_symtab_writeproto(out, SYMTAB_LFUNC, gco2pt(o));
#if LJ_HASJIT
  {
    jit_State *J = G2J(g);
    TraceNo i;
    for (i = 1; i < J->sizetrace; i++) {
      GCtrace *T = traceref(J, i);
      if (T != NULL && T->traceno == i)  /* Skips the one being recorded. */
	lj_symtab_writetrace(out, SYMTAB_TRACE, T);
    }
  }
#endif
}

/* -- C symbols of ELF objects -------------------------------------------- */

struct lj_symtab_obj {
  uintptr_t base;	/* Load address. */
  uint64_t namehash;	/* Tells objects loaded at the same base apart. */
};

static uint64_t symtab_hash(const char *s)
{
  uint64_t h = 1469598103934665603ull;  /* FNV-1a. */
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

static void symtab_writecsym(struct lj_wbuf *out, uint8_t header,
			     uintptr_t addr, const char *name)
{
  lj_wbuf_addbyte(out, header);
  lj_wbuf_adduleb(out, addr);
  lj_wbuf_addstring(out, name, strlen(name));
}

/* Function symbols of the section of type `type`; returns how many. */
static size_t symtab_elfsection(struct lj_wbuf *out, uint8_t header,
				Elf *elf, Elf64_Word type, uintptr_t base)
{
  Elf_Scn *scn = NULL;
  size_t count = 0;
  while ((scn = elf_nextscn(elf, scn)) != NULL) {
    GElf_Shdr shdr;
    Elf_Data *data;
    size_t i, n;
    if (gelf_getshdr(scn, &shdr) == NULL || shdr.sh_type != type ||
	shdr.sh_entsize == 0 || (data = elf_getdata(scn, NULL)) == NULL)
      continue;
    n = shdr.sh_size / shdr.sh_entsize;
    for (i = 0; i < n; i++) {
      GElf_Sym sym;
      const char *name;
      int kind;
      if (gelf_getsym(data, (int)i, &sym) == NULL)
	continue;
      kind = GELF_ST_TYPE(sym.st_info);
      if ((kind != STT_FUNC && kind != STT_GNU_IFUNC) ||
	  sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
	continue;
      name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (name == NULL || *name == '\0')
	continue;
      symtab_writecsym(out, header, base + (uintptr_t)sym.st_value, name);
      count++;
    }
  }
  return count;
}

/* One object: its .symtab, else its dynamic symbols, else its own name. */
static void symtab_elfobject(struct lj_wbuf *out, uint8_t header,
			     const char *path, const char *name,
			     uintptr_t base)
{
  size_t count = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (elf != NULL) {
      count = symtab_elfsection(out, header, elf, SHT_SYMTAB, base);
      if (count == 0)
	count = symtab_elfsection(out, header, elf, SHT_DYNSYM, base);
      elf_end(elf);
    }
    close(fd);
  }
  if (count == 0)
    symtab_writecsym(out, header, base, name);
}

struct symtab_walk {
  struct lj_wbuf *out;
  struct lj_symtab_objs *objs;
  struct lj_symtab_obj *seen;	/* Objects loaded now. */
  size_t n, size;
  uint8_t header;
};

static int symtab_known(const struct lj_symtab_objs *objs,
			const struct lj_symtab_obj *o)
{
  size_t i;
  for (i = 0; i < objs->n; i++)
    if (objs->known[i].base == o->base && objs->known[i].namehash == o->namehash)
      return 1;
  return 0;
}

static int symtab_walkobj(struct dl_phdr_info *info, size_t size, void *data)
{
  struct symtab_walk *w = (struct symtab_walk *)data;
  const char *name = info->dlpi_name;
  struct lj_symtab_obj o;
  char exe[4096];
  UNUSED(size);
  if (name == NULL || *name == '\0') {  /* The main executable. */
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe)-1);
    exe[n > 0 ? n : 0] = '\0';
    name = exe;
  }
  o.base = (uintptr_t)info->dlpi_addr;
  o.namehash = symtab_hash(name);
  if (w->n == w->size) {
    size_t nsize = w->size ? 2*w->size : 32;
    struct lj_symtab_obj *p = realloc(w->seen, nsize * sizeof(*p));
    if (p == NULL)
      return 1;  /* Out of memory: what was seen so far must do. */
    w->seen = p;
    w->size = nsize;
  }
  w->seen[w->n++] = o;
  if (!symtab_known(w->objs, &o))
    symtab_elfobject(w->out, w->header,
		     *info->dlpi_name ? info->dlpi_name : "/proc/self/exe",
		     name, o.base);
  return 0;
}

static int symtab_counters(struct dl_phdr_info *info, size_t size, void *data)
{
  unsigned long long *c = (unsigned long long *)data;
  UNUSED(size);
  c[0] = info->dlpi_adds;
  c[1] = info->dlpi_subs;
  return 1;  /* The counters are the same in every entry. */
}

void lj_symtab_newobjs(struct lj_wbuf *out, struct lj_symtab_objs *objs,
		       uint8_t header)
{
  unsigned long long c[2] = {0, 0};
  struct symtab_walk w;
  dl_iterate_phdr(symtab_counters, c);
  if (objs->known != NULL && c[0] == objs->adds && c[1] == objs->subs)
    return;
  w.out = out;
  w.objs = objs;
  w.seen = NULL;
  w.n = w.size = 0;
  w.header = header;
  dl_iterate_phdr(symtab_walkobj, &w);
  free(objs->known);
  objs->known = w.seen;
  objs->n = w.n;
  objs->size = w.size;
  objs->adds = c[0];
  objs->subs = c[1];
}

void lj_symtab_freeobjs(struct lj_symtab_objs *objs)
{
  free(objs->known);
  memset(objs, 0, sizeof(*objs));
}

/* -- The symbol table section -------------------------------------------- */

void lj_symtab_dump(struct lj_wbuf *out, global_State *g,
		    struct lj_symtab_objs *objs)
{
  static const uint8_t prologue[] = { 'l', 'j', 's', LJS_VERSION, 0, 0, 0 };
  lj_wbuf_addn(out, prologue, sizeof(prologue));
  symtab_luacode(out, g);
  elf_version(EV_CURRENT);
  lj_symtab_freeobjs(objs);
  lj_symtab_newobjs(out, objs, SYMTAB_CFUNC);
  lj_wbuf_addbyte(out, SYMTAB_FINAL);
}
