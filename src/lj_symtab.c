/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Symbol tables of profile streams.
*/

#define _GNU_SOURCE
#define lj_symtab_c
#define LUA_CORE

#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>
#include <lzma.h>

#include "lj_obj.h"
#include "lj_debug.h"
#if LJ_HASJIT
#include "lj_jit.h"
#endif
#include "lj_proftrace.h"
#include "lj_profhost.h"
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

#if LJ_HASJIT
static void symtab_trace(void *out, const GCtrace *T)
{
  lj_symtab_writetrace((struct lj_wbuf *)out, SYMTAB_TRACE, T);
}
#endif

static void symtab_luacode(struct lj_wbuf *out, global_State *g)
{
  GCobj *o;
  for (o = gcref(g->gc.root); o != NULL; o = gcref(o->gch.nextgc))
    if (o->gch.gct == ~LJ_TPROTO)
      lj_symtab_writeproto(out, SYMTAB_LFUNC, gco2pt(o));
#if LJ_HASJIT
  lj_proftrace_each(g, symtab_trace, out);
#endif
}

/* -- C symbols of ELF objects -------------------------------------------- */

struct lj_symtab_obj {
  uintptr_t base;	/* Load address. */
  uint64_t namehash;	/* Tells objects loaded at the same base apart. */
};

/* An object the loader's walk found new, as much of it as its symbols
** need: they are read and written after the walk, outside the loader's
** lock (lj_profhost.h). */
#define SYMTAB_MAXSEG	8	/* Executable segments kept of an object. */

typedef struct SymtabNew {
  uintptr_t base;
  char *path;		/* Its file. */
  int exe;		/* The main executable: path is /proc/self/exe. */
  int nseg;
  struct { uint64_t lo, hi; } seg[SYMTAB_MAXSEG];  /* From base. */
} SymtabNew;

static uint64_t symtab_hash(const char *s)
{
  uint64_t h = 1469598103934665603ull;  /* FNV-1a. */
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

/* A versioned name (memcpy@GLIBC_2.2.5, from a .symtab) without its
** version: the function's name. */
static void symtab_writecsym(struct lj_wbuf *out, uint8_t header,
			     uintptr_t addr, const char *name)
{
  lj_wbuf_addbyte(out, header);
  lj_wbuf_adduleb(out, addr);
  lj_wbuf_addstring(out, name, strcspn(name, "@"));
}

/* A function symbol of an object, relative to its load address. */
typedef struct SymtabFunc {
  uint64_t addr;
  const char *name;	/* In an ELF image kept open until it is written. */
  uint32_t size;	/* 0: nothing says where it ends. */
  uint32_t rank;	/* Of aliases the lowest is written: global ones, the
			** unversioned first, then local ones. */
} SymtabFunc;		/* Small: sorting moves them. */

typedef struct SymtabFuncs {
  SymtabFunc *f;
  size_t n, size;
} SymtabFuncs;

/* A symbol without a size (st_size 0, e.g. _init) ends with its section. */
static uint64_t symtab_sectionrest(Elf *elf, const GElf_Sym *sym)
{
  Elf_Scn *scn = sym->st_shndx < SHN_LORESERVE ?
		 elf_getscn(elf, sym->st_shndx) : NULL;
  GElf_Shdr shdr;
  if (scn == NULL || gelf_getshdr(scn, &shdr) == NULL ||
      sym->st_value < shdr.sh_addr ||
      sym->st_value >= shdr.sh_addr + shdr.sh_size)
    return 0;
  return shdr.sh_addr + shdr.sh_size - sym->st_value;
}

/* Function symbols of the sections of type `type`; returns how many. */
static size_t symtab_collect(SymtabFuncs *fs, Elf *elf, Elf64_Word type)
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
    if (fs->n + n > fs->size) {  /* Room for every symbol of the section. */
      SymtabFunc *p = realloc(fs->f, (fs->n + n) * sizeof(*p));
      if (p == NULL)
	return count;  /* Out of memory: what was read so far must do. */
      fs->f = p;
      fs->size = fs->n + n;
    }
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
      fs->f[fs->n].addr = sym.st_value;
      fs->f[fs->n].size = (uint32_t)(sym.st_size ? sym.st_size :
				     symtab_sectionrest(elf, &sym));
      fs->f[fs->n].name = name;
      fs->f[fs->n].rank = (GELF_ST_BIND(sym.st_info) == STB_LOCAL) * 2 +
			  (strchr(name, '@') != NULL);
      fs->n++;
      count++;
    }
  }
  return count;
}

static int symtab_byaddr(const void *a, const void *b)
{
  const SymtabFunc *x = (const SymtabFunc *)a, *y = (const SymtabFunc *)b;
  if (x->addr != y->addr)
    return x->addr < y->addr ? -1 : 1;
  if (x->size != y->size)
    return x->size < y->size ? 1 : -1;
  if (x->rank != y->rank)
    return (int)x->rank - (int)y->rank;
  return strcmp(x->name, y->name);  /* Same name every time. */
}

static int symtab_hasfunc(const SymtabFuncs *fs, uint64_t addr)
{
  size_t lo = 0, hi = fs->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (fs->f[mid].addr == addr)
      return 1;
    if (fs->f[mid].addr < addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return 0;
}

/* An end mark: `object+0xOFFSET` at that offset from the load address. */
static void symtab_writemark(struct lj_wbuf *out, uint8_t header,
			     uintptr_t base, uint64_t offset,
			     const char *objname)
{
  char mark[256 + 20];  /* A file name has at most 255 bytes. */
  snprintf(mark, sizeof(mark), "%.255s+0x%llx", objname,
	   (unsigned long long)offset);
  symtab_writecsym(out, header, base + (uintptr_t)offset, mark);
}

/*
** The format has no symbol sizes: where no function covers the code, end
** marks say so (docs/formats.md). Code that no symbol covers, from the
** start of an executable segment or from a function's end, is
** `object+0xOFFSET`; past the segment an empty name says no object's
** code is there. Readers thus never give a PC past a function's end that
** function's name.
*/
static void symtab_writefuncs(struct lj_wbuf *out, uint8_t header,
			      const SymtabFuncs *fs, const SymtabNew *obj,
			      const char *objname)
{
  uintptr_t base = obj->base;
  const char *slash = strrchr(objname, '/');
  uint64_t reach = 0;
  size_t i;
  int k;
  if (slash != NULL)
    objname = slash + 1;
  for (k = 0; k < obj->nseg; k++)
    if (!symtab_hasfunc(fs, obj->seg[k].lo))
      symtab_writemark(out, header, base, obj->seg[k].lo, objname);
  for (i = 0; i < fs->n; i++) {
    const SymtabFunc *f = &fs->f[i];
    if (i > 0 && f->addr == fs->f[i-1].addr)
      continue;  /* An alias: the one sorted first was written. */
    symtab_writecsym(out, header, base + (uintptr_t)f->addr, f->name);
    if (f->size == 0)
      continue;  /* It reaches the next symbol. */
    if (f->addr + f->size > reach)
      reach = f->addr + f->size;
    if (i+1 == fs->n || fs->f[i+1].addr > reach)
      symtab_writemark(out, header, base, reach, objname);
  }
  for (k = 0; k < obj->nseg; k++)
    if (!symtab_hasfunc(fs, obj->seg[k].hi))
      symtab_writecsym(out, header, base + (uintptr_t)obj->seg[k].hi, "");
}

/* -- Objects' functions, kept for the process ---------------------------- */

/*
** Reading an object's functions (its debug file, sorting) is most of what
** starting a profile costs: it is done once per object and process, and
** later profiles (the next start, a rotation, a signal's toggle) reuse it.
** Entries are added, never changed or freed, so what a lookup returns stays
** valid without the lock. The lock is never held while a stream is
** written: a writer may wait for the thread that also looks objects up.
*/
typedef struct SymtabKept {
  dev_t dev;
  ino_t ino;
  off_t size;
  time_t mtime;
  SymtabFuncs fs;	/* Sorted; the names in the same block. */
} SymtabKept;

/* A block twice *size items large (32 at first) holding p's; NULL when
** memory is short, and p as it was. */
static void *symtab_grow(void *p, size_t *size, size_t item)
{
  size_t nsize = *size ? 2 * *size : 32;
  if ((p = realloc(p, nsize * item)) != NULL)
    *size = nsize;
  return p;
}

static pthread_mutex_t symtab_lock = PTHREAD_MUTEX_INITIALIZER;
static SymtabKept *symtab_kept;
static size_t symtab_nkept, symtab_sizekept;

static int symtab_same(const SymtabKept *k, const struct stat *st)
{
  return k->dev == st->st_dev && k->ino == st->st_ino &&
	 k->size == st->st_size && k->mtime == st->st_mtime;
}

static int symtab_findkept(const struct stat *st, SymtabFuncs *fs)
{
  size_t i;
  int found = 0;
  pthread_mutex_lock(&symtab_lock);
  for (i = 0; i < symtab_nkept && !found; i++)
    if ((found = symtab_same(&symtab_kept[i], st)))
      *fs = symtab_kept[i].fs;
  pthread_mutex_unlock(&symtab_lock);
  return found;
}

/* A copy of fs, names included; nothing if memory is short. */
static void symtab_keep(const struct stat *st, const SymtabFuncs *fs)
{
  size_t i, names = 0;
  SymtabFunc *f;
  char *p;
  for (i = 0; i < fs->n; i++)
    names += strlen(fs->f[i].name) + 1;
  if ((f = malloc(fs->n * sizeof(SymtabFunc) + names)) == NULL)
    return;
  p = (char *)(f + fs->n);
  for (i = 0; i < fs->n; i++) {
    size_t len = strlen(fs->f[i].name) + 1;
    f[i] = fs->f[i];
    f[i].name = memcpy(p, fs->f[i].name, len);
    p += len;
  }
  pthread_mutex_lock(&symtab_lock);
  if (symtab_nkept == symtab_sizekept) {
    SymtabKept *k = symtab_grow(symtab_kept, &symtab_sizekept, sizeof(*k));
    if (k != NULL)
      symtab_kept = k;
  }
  if (symtab_nkept < symtab_sizekept) {
    /* Filled before it is counted: a fork's child may look it up. */
    SymtabKept *k = &symtab_kept[symtab_nkept];
    k->dev = st->st_dev;
    k->ino = st->st_ino;
    k->size = st->st_size;
    k->mtime = st->st_mtime;
    k->fs.f = f;
    k->fs.n = k->fs.size = fs->n;
    symtab_nkept++;
    f = NULL;
  }
  pthread_mutex_unlock(&symtab_lock);
  free(f);  /* Not kept: no room. */
}

/* The child of a fork(): a thread of the parent may have held the lock. */
void lj_symtab_forked(void)
{
  pthread_mutex_init(&symtab_lock, NULL);
}

/* -- Where an object's symbols are --------------------------------------- */

static Elf_Data *symtab_section(Elf *elf, const char *name)
{
  Elf_Scn *scn = NULL;
  size_t strndx;
  if (elf_getshdrstrndx(elf, &strndx) != 0)
    return NULL;
  while ((scn = elf_nextscn(elf, scn)) != NULL) {
    GElf_Shdr shdr;
    const char *s;
    if (gelf_getshdr(scn, &shdr) != NULL && shdr.sh_type != SHT_NOBITS &&
	(s = elf_strptr(elf, strndx, shdr.sh_name)) != NULL &&
	strcmp(s, name) == 0)
      return elf_getdata(scn, NULL);
  }
  return NULL;
}

/* MiniDebugInfo: .gnu_debugdata is an xz-compressed ELF image whose
** .symtab has the functions .dynsym lacks. Returns the image or NULL. */
static uint8_t *symtab_minidebug(Elf *elf, size_t *len)
{
  Elf_Data *d = symtab_section(elf, ".gnu_debugdata");
  lzma_stream z = LZMA_STREAM_INIT;
  uint8_t *buf = NULL;
  lzma_ret r = LZMA_OK;
  if (d == NULL || d->d_size == 0 ||
      lzma_stream_decoder(&z, UINT64_MAX, 0) != LZMA_OK)
    return NULL;
  z.next_in = (const uint8_t *)d->d_buf;
  z.avail_in = d->d_size;
  while (r == LZMA_OK) {
    if (z.avail_out == 0) {
      size_t nsize = 2*z.total_out + 4*d->d_size;
      uint8_t *p = realloc(buf, nsize);
      if (p == NULL)
	break;
      buf = p;
      z.next_out = buf + z.total_out;
      z.avail_out = nsize - z.total_out;
    }
    r = lzma_code(&z, LZMA_FINISH);
  }
  *len = z.total_out;
  lzma_end(&z);
  if (r != LZMA_STREAM_END) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* Open `path` if it is the debug file whose CRC .gnu_debuglink names. */
static int symtab_opencrc(const char *path, uint32_t crc)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  void *p;
  if (fd < 0)
    return -1;
  if (fstat(fd, &st) == 0 && st.st_size > 0 &&
      (p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) !=
      MAP_FAILED) {
    uint32_t c = lzma_crc32((const uint8_t *)p, st.st_size, 0);
    munmap(p, st.st_size);
    if (c == crc)
      return fd;
  }
  close(fd);
  return -1;
}

/* The debug file named by the object's build-id note, or -1. */
static int symtab_buildid(Elf *elf)
{
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(elf, scn)) != NULL) {
    GElf_Shdr shdr;
    GElf_Nhdr nh;
    Elf_Data *d;
    size_t off = 0, noff, doff;
    if (gelf_getshdr(scn, &shdr) == NULL || shdr.sh_type != SHT_NOTE ||
	(d = elf_getdata(scn, NULL)) == NULL)
      continue;
    while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
      const uint8_t *id = (const uint8_t *)d->d_buf + doff;
      char path[128];
      int n;
      uint32_t i;
      if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
	  memcmp((char *)d->d_buf + noff, "GNU", 4) != 0 ||
	  nh.n_descsz < 2 || nh.n_descsz > 40)
	continue;
      n = snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%02x/",
		   id[0]);
      for (i = 1; i < nh.n_descsz; i++)
	n += snprintf(path + n, sizeof(path) - n, "%02x", id[i]);
      snprintf(path + n, sizeof(path) - n, ".debug");
      return open(path, O_RDONLY | O_CLOEXEC);
    }
  }
  return -1;
}

/* The debug file .gnu_debuglink names: beside the object at `path`, in
** .debug/ there, or under /usr/lib/debug; -1 if none has its CRC. */
static int symtab_debuglink(Elf *elf, const char *path)
{
  static const char *const where[] = {
    "%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"
  };
  Elf_Data *d = symtab_section(elf, ".gnu_debuglink");
  const char *slash = strrchr(path, '/');
  int dir = slash ? (int)(slash - path) : 0;
  const char *name;
  size_t len, at, i;
  uint32_t crc;
  if (d == NULL)
    return -1;
  name = (const char *)d->d_buf;
  len = strnlen(name, d->d_size);
  at = (len + 4) & ~(size_t)3;  /* The CRC follows, 4-byte aligned. */
  if (len == 0 || at + 4 > d->d_size)
    return -1;
  memcpy(&crc, (const char *)d->d_buf + at, 4);
  for (i = 0; i < sizeof(where)/sizeof(where[0]); i++) {
    char buf[4096];
    int fd;
    snprintf(buf, sizeof(buf), where[i], dir, path, name);
    if ((fd = symtab_opencrc(buf, crc)) >= 0)
      return fd;
  }
  return -1;
}

/*
** One object's functions, from the first of: its .symtab, its
** MiniDebugInfo with its .dynsym, the .symtab of its separate debug file
** (by build-id, else by .gnu_debuglink), its .dynsym.
*/
static void symtab_elfobject(struct lj_wbuf *out, uint8_t header,
			     const SymtabNew *obj, const char *name)
{
  SymtabFuncs fs = { NULL, 0, 0 };
  Elf *elf = NULL, *dbg = NULL;
  uint8_t *mini = NULL;
  struct stat st;
  const char *path = obj->path;
  int fd, dfd = -1, known = stat(path, &st) == 0;
  if (known && symtab_findkept(&st, &fs)) {
    symtab_writefuncs(out, header, &fs, obj, name);
    return;
  }
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0 && (elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)) != NULL &&
      symtab_collect(&fs, elf, SHT_SYMTAB) == 0) {
    size_t len;
    if ((mini = symtab_minidebug(elf, &len)) != NULL)
      dbg = elf_memory((char *)mini, len);
    else if ((dfd = symtab_buildid(elf)) >= 0 ||
	     (dfd = symtab_debuglink(elf, name)) >= 0)
      dbg = elf_begin(dfd, ELF_C_READ_MMAP, NULL);
    if (dbg != NULL)
      symtab_collect(&fs, dbg, SHT_SYMTAB);
    if (mini != NULL || fs.n == 0)
      symtab_collect(&fs, elf, SHT_DYNSYM);
  }
  qsort(fs.f, fs.n, sizeof(SymtabFunc), symtab_byaddr);
  if (known)
    symtab_keep(&st, &fs);
  symtab_writefuncs(out, header, &fs, obj, name);
  free(fs.f);
  if (dbg != NULL) elf_end(dbg);
  free(mini);
  if (dfd >= 0) close(dfd);
  if (elf != NULL) elf_end(elf);
  if (fd >= 0) close(fd);
}

/* The walk under the loader's lock: every object loaded (to compare the
** next walk against), and a copy of those not written yet. */
struct symtab_walk {
  const struct lj_symtab_objs *objs;
  const char *exe;		/* The main executable's path. */
  struct lj_symtab_obj *seen;	/* Objects loaded now. */
  size_t n, size;
  SymtabNew *fresh;		/* Of those, the ones not written yet. */
  size_t nfresh, sizefresh;
  int short_of_memory;
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

static int symtab_copynew(struct symtab_walk *w, struct dl_phdr_info *info,
			  int exe)
{
  SymtabNew *o;
  int k;
  if (w->nfresh == w->sizefresh) {
    SymtabNew *p = symtab_grow(w->fresh, &w->sizefresh, sizeof(SymtabNew));
    if (p == NULL)
      return 0;
    w->fresh = p;
  }
  o = &w->fresh[w->nfresh];
  if ((o->path = strdup(exe ? "/proc/self/exe" : info->dlpi_name)) == NULL)
    return 0;
  o->exe = exe;
  o->base = (uintptr_t)info->dlpi_addr;
  o->nseg = 0;
  for (k = 0; k < info->dlpi_phnum && o->nseg < SYMTAB_MAXSEG; k++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      o->seg[o->nseg].lo = ph->p_vaddr;
      o->seg[o->nseg++].hi = ph->p_vaddr + ph->p_memsz;
    }
  }
  w->nfresh++;
  return 1;
}

static int symtab_walkobj(struct dl_phdr_info *info, size_t size, void *data)
{
  struct symtab_walk *w = (struct symtab_walk *)data;
  int exe = info->dlpi_name == NULL || *info->dlpi_name == '\0';
  struct lj_symtab_obj o;
  UNUSED(size);
  o.base = (uintptr_t)info->dlpi_addr;
  o.namehash = symtab_hash(exe ? w->exe : info->dlpi_name);
  if (w->n == w->size) {
    struct lj_symtab_obj *p = symtab_grow(w->seen, &w->size, sizeof(o));
    if (p == NULL)
      goto short_of_memory;
    w->seen = p;
  }
  if (!symtab_known(w->objs, &o) && !symtab_copynew(w, info, exe))
    goto short_of_memory;
  w->seen[w->n++] = o;
  return 0;
short_of_memory:
  w->short_of_memory = 1;
  return 1;  /* What was seen so far must do; the next call walks again. */
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
  char exe[4096];
  ssize_t len;
  size_t i;
  lj_profhost_objects(symtab_counters, c);
  if (objs->known != NULL && c[0] == objs->adds && c[1] == objs->subs)
    return;
  len = readlink("/proc/self/exe", exe, sizeof(exe)-1);
  exe[len > 0 ? len : 0] = '\0';
  memset(&w, 0, sizeof(w));
  w.objs = objs;
  w.exe = exe;
  lj_profhost_objects(symtab_walkobj, &w);
  elf_version(EV_CURRENT);
  for (i = 0; i < w.nfresh; i++) {
    SymtabNew *o = &w.fresh[i];
    symtab_elfobject(out, header, o, o->exe ? exe : o->path);
    free(o->path);
  }
  free(w.fresh);
  free(objs->known);
  objs->known = w.seen;
  objs->n = w.n;
  objs->size = w.size;
  objs->adds = w.short_of_memory ? 0 : c[0];
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
  if (objs != NULL) {
    lj_symtab_freeobjs(objs);
    lj_symtab_newobjs(out, objs, SYMTAB_CFUNC);
  }
  lj_wbuf_addbyte(out, SYMTAB_FINAL);
}
