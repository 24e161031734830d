/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** gen-churn: write a synthetic memprof file (symtab + memprof stream) of
** allocation churn, or a sysprof one, for benchmarking the reader.
**
**   gen-churn [-k typical|many-sites|sysprof] [-s MEGABYTES] [-l LIVE_BLOCKS]
**             [-r SEED] > churn.bin
**
** Lua protos (a few lines of each allocate), C functions, traces and the
** VM itself allocate; the program warms up to a live set of LIVE_BLOCKS
** blocks, then churns around it (allocs and frees in balance, some
** reallocations). Freed addresses are reused LIFO as a real allocator
** does. New protos and traces are announced along the way.
**
** The kind sets how many sites allocate: `typical` is a program of some
** size (about two thousand sites: Lua lines, C functions, traces);
** `many-sites` is a worst case for the reader (some 120 thousand sites,
** more than any program we know, and half a million (site, owner) pairs).
** `sysprof` writes a CPU profile (sysprof v3, mode C) of typical's
** program instead: samples of call stacks 2 to 12 deep, a few hot ones.
*/
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BASE_ADDR UINT64_C(0x7f3a10000000)

static uint64_t rng = UINT64_C(0x9E3779B97F4A7C15);

static uint64_t next_random(void) { /* xorshift64* */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * UINT64_C(0x2545F4914F6CDD1D);
}

static uint64_t below(uint64_t n) { return next_random() % n; }

/* How many functions and traces allocate, and on how many lines each. */
struct shape {
  const char *kind;
  unsigned nprotos, ncfuncs, ntraces;
  unsigned lines_per_proto; /* at most; a few hot ones take most events */
};

static const struct shape shapes[] = {
    {"typical", 400, 80, 60, 6},
    {"many-sites", 4000, 600, 300, 30},
    {"sysprof", 400, 80, 60, 6},
};

static const struct shape *shape = &shapes[0];

static uint64_t written;

static void put_byte(int b) {
  putchar(b);
  written++;
}

static void put_uleb(uint64_t v) {
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    put_byte(v ? b | 0x80 : b);
  } while (v);
}

static void put_str(const char *s) {
  size_t n = strlen(s);
  put_uleb(n);
  fwrite(s, 1, n, stdout);
  written += n;
}

static void put_prologue(const char *magic) {
  fwrite(magic, 1, 3, stdout);
  written += 3;
  put_byte(3);
  for (int i = 0; i < 3; i++) put_byte(0);
}

static uint64_t proto_addr(unsigned i) { return UINT64_C(0x7f3a00001000) + i * 0x140u; }
static uint64_t cfunc_addr(unsigned i) { return UINT64_C(0x55d4c0002000) + i * 0x90u; }

static void put_lfunc_fields(unsigned i) {
  char name[64];
  snprintf(name, sizeof name, "@app/module_%u.lua", i / 8);
  put_uleb(proto_addr(i));
  put_str(name);
  put_uleb(1 + (i % 8) * 40);
}

static void put_cfunc_fields(unsigned i) {
  char name[64];
  snprintf(name, sizeof name, "lib_func_%u", i);
  put_uleb(cfunc_addr(i));
  put_str(name);
}

static void put_trace_fields(unsigned t) {
  put_uleb(t + 1);
  put_uleb(proto_addr(t * 7 % shape->nprotos));
  put_uleb(1 + t % 300);
}

/* The live set, oldest first in a ring, and freed addresses for reuse. */
static uint64_t *live_addr, *live_size, *freed;
static struct site *live_site;
static size_t live_head, live_mask, nlive, nfreed;
static uint64_t bump = BASE_ADDR;

static uint64_t random_size(void) {
  uint64_t r = below(100);
  if (r < 60) return 16 + below(8) * 8;
  if (r < 90) return 64 + below(192);
  if (r < 99) return 256 + below(4096);
  return 4096 + below(65536);
}

static size_t freed_cap;

static void reuse_later(uint64_t addr) {
  if (nfreed < freed_cap) freed[nfreed++] = addr;
}

static uint64_t new_addr(uint64_t size) {
  if (nfreed > 0 && below(10) < 8) return freed[--nfreed];
  uint64_t a = bump;
  bump += (size + 15) & ~UINT64_C(15);
  return a;
}

/* A skewed pick in [0, n): a few hot ones, a long tail (as real sites). */
static unsigned skewed(unsigned n) {
  double u = (double)(next_random() >> 11) / (double)(UINT64_C(1) << 53);
  return (unsigned)(n * u * u * u);
}

/* A site: source (1 internal, 2 Lua, 3 C, 4 trace) and what it names. */
struct site {
  unsigned source;
  unsigned index; /* proto, C function or trace */
  unsigned line;
};

/*
** A new site for an event. Allocations and reallocations come mostly from
** Lua lines; frees mostly from the garbage collector (internal), as in
** LuaJIT, where the sweep frees what the program dropped.
*/
static struct site random_site(unsigned event, unsigned nprotos,
                               unsigned ntraces) {
  static const unsigned lua_share[] = {0, 70, 10, 80}; /* by event, in % */
  uint64_t r = below(100);
  unsigned lua = lua_share[event], rest = (100 - lua) / 3;
  if (r < lua) {
    unsigned p = skewed(nprotos);
    return (struct site){2, p, 1 + (p % 8) * 40 + skewed(shape->lines_per_proto)};
  }
  if (event == 2 || r < lua + rest) return (struct site){1, 0, 0};
  if (r < lua + 2 * rest) return (struct site){3, skewed(shape->ncfuncs), 0};
  return (struct site){4, skewed(ntraces), 0};
}

static void put_event_header(unsigned event, struct site s) {
  put_byte(s.source << 2 | event);
  switch (s.source) {
  case 2: put_uleb(proto_addr(s.index)); put_uleb(s.line); break;
  case 3: put_uleb(cfunc_addr(s.index)); break;
  case 4: put_uleb(1 + s.index); break;
  }
}

/*
** CPU samples (LJP_* of lj_profstream.h, numbers written here): a call
** tree where proto p is called by proto p / 2 at a line of its own, so a
** stack is a leaf's line, its callers' lines up to proto 0, then the
** native code below the interpreter; one sample in five is in a C
** function the leaf called.
*/
static uint64_t put_samples(uint64_t limit) {
  uint64_t samples = 0;
  put_byte(0x0E); /* config: mode C, 1 ms, CPU clock */
  put_uleb(2);
  put_uleb(1000);
  put_uleb(0);
  while (written < limit) {
    unsigned p = skewed(shape->nprotos), depth = 0;
    int in_c = below(5) == 0;
    put_byte(in_c ? 3 : 1); /* VM state: C function, Lua function */
    if (in_c) put_byte(2), put_uleb(cfunc_addr(skewed(shape->ncfuncs)));
    unsigned line = skewed(shape->lines_per_proto);
    for (; depth < 11; line = p % 2 + 1, p /= 2, depth++) {
      put_byte(1);
      put_uleb(proto_addr(p));
      put_uleb(1 + (p % 8) * 40 + line);
      if (p == 0) break;
    }
    put_byte(4);
    put_uleb(UINT64_C(0x55d4c0001000));
    put_byte(0x80);
    samples++;
  }
  return samples;
}

static const struct shape *find_shape(const char *kind) {
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
    if (strcmp(shapes[i].kind, kind) == 0) return &shapes[i];
  return NULL;
}

int main(int argc, char **argv) {
  uint64_t megabytes = 160, target_live = 300000;
  int opt;
  while ((opt = getopt(argc, argv, "k:s:l:r:")) != -1) {
    switch (opt) {
    case 's': megabytes = strtoull(optarg, NULL, 10); break;
    case 'l': target_live = strtoull(optarg, NULL, 10); break;
    case 'r': rng = strtoull(optarg, NULL, 10) | 1; break;
    case 'k': shape = find_shape(optarg); break;
    default: shape = NULL; break;
    }
    if (!shape) {
      fprintf(stderr, "usage: gen-churn [-k typical|many-sites|sysprof] [-s MEGABYTES]"
                      " [-l LIVE_BLOCKS] [-r SEED]\n");
      return 2;
    }
  }
  static char outbuf[1 << 20];
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  size_t ring = 1;
  while (ring < target_live * 2) ring *= 2;
  live_mask = ring - 1;
  live_addr = malloc(ring * sizeof *live_addr);
  live_size = malloc(ring * sizeof *live_size);
  live_site = malloc(ring * sizeof *live_site);
  freed_cap = target_live + 1;
  freed = malloc(freed_cap * sizeof *freed);
  if (!live_addr || !live_size || !live_site || !freed) return 1;

  /* Half the protos and traces exist at start; the rest appear later. */
  unsigned nprotos = shape->nprotos / 2, ntraces = shape->ntraces / 2;
  put_prologue("ljs");
  for (unsigned i = 0; i < nprotos; i++) put_byte(0), put_lfunc_fields(i);
  for (unsigned t = 0; t < ntraces; t++) put_byte(2), put_trace_fields(t);
  for (unsigned i = 0; i < shape->ncfuncs; i++) put_byte(1), put_cfunc_fields(i);
  put_byte(0x80);

  uint64_t limit = megabytes << 20;
  uint64_t events = 0;
  if (!strcmp(shape->kind, "sysprof")) {
    put_prologue("ljp");
    events = put_samples(limit);
    put_byte(0x80);
    fflush(stdout);
    fprintf(stderr, "gen-churn (%s): %llu bytes, %llu events, 0 blocks live\n",
            shape->kind, (unsigned long long)written,
            (unsigned long long)events);
    return 0;
  }
  put_prologue("ljm");
  while (written < limit) {
    if (nprotos < shape->nprotos && below(2000) == 0) {
      put_byte(0x08);
      put_lfunc_fields(nprotos++);
    }
    if (ntraces < shape->ntraces && below(20000) == 0) {
      put_byte(0x10);
      put_trace_fields(ntraces++);
    }
    uint64_t r = below(100);
    int grow = nlive < target_live;
    if (nlive == 0 || (grow && r < 85) || (!grow && r < 45)) {
      uint64_t size = random_size(), addr = new_addr(size);
      struct site s = random_site(1, nprotos, ntraces);
      size_t tail = (live_head + nlive++) & live_mask;
      put_event_header(1, s);
      put_uleb(addr);
      put_uleb(size);
      live_addr[tail] = addr;
      live_size[tail] = size;
      live_site[tail] = s;
      events++;
      continue;
    }
    /* Frees mostly come from the GC sweep, oldest blocks first; most
    ** reallocations, and frees that are not the GC's, happen where the
    ** block was allocated (a table growing, a buffer released). */
    unsigned event = r < 90 ? 2 : 3;
    size_t k = event == 2 && below(10) < 7 ? below(nlive < 256 ? nlive : 256)
                                           : below(nlive);
    size_t i = (live_head + k) & live_mask;
    struct site s = random_site(event, nprotos, ntraces);
    if (s.source != 1 && below(10) < 8) s = live_site[i];
    put_event_header(event, s);
    put_uleb(live_addr[i]);
    put_uleb(live_size[i]);
    reuse_later(live_addr[i]);
    if (event == 2) { /* the oldest block fills the hole */
      live_addr[i] = live_addr[live_head];
      live_size[i] = live_size[live_head];
      live_site[i] = live_site[live_head];
      live_head = (live_head + 1) & live_mask;
      nlive--;
    } else { /* small blocks grow, big ones shrink */
      uint64_t osize = live_size[i];
      uint64_t nsize = osize < 65536 ? osize * 2 : osize / 2;
      uint64_t naddr = new_addr(nsize);
      put_uleb(naddr);
      put_uleb(nsize);
      live_addr[i] = naddr;
      live_size[i] = nsize;
    }
    events++;
  }
  put_byte(0x80);
  fflush(stdout);
  fprintf(stderr, "gen-churn (%s): %llu bytes, %llu events, %zu blocks live\n",
          shape->kind, (unsigned long long)written,
          (unsigned long long)events, nlive);
  return 0;
}
