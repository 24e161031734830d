/* Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE. */
#include "symbols.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The resolutions of the raw kinds [from, to) made stale: each kind takes
** a generation no kind had, so that an entry's generation says its kind. */
static void bump_generations(struct symbols *s, enum symbols_raw_kind from,
                             enum symbols_raw_kind to) {
  for (unsigned kind = from; kind < to; kind++)
    s->generation[kind] = ++s->newest_generation;
}

/* A resolver; its cache new, or handed on with every entry older than
** generation `stale_below`. */
static void init_resolver(struct symbols *s, int cache_mapped,
                          struct resolved_location *cache,
                          uint64_t stale_below) {
  memset(s, 0, sizeof *s);
  s->newest_generation = stale_below;
  bump_generations(s, RAW_INTERNAL, RAW_KINDS);
  s->cache_mapped = cache_mapped;
  s->resolved =
      cache          ? cache
      : cache_mapped ? table_calloc(SYMBOLS_RESOLVED_CACHE, sizeof *s->resolved)
                     : xcalloc(SYMBOLS_RESOLVED_CACHE, sizeof *s->resolved);
  labelsets_init(&s->labels);
}

void symbols_init(struct symbols *s) { init_resolver(s, 0, NULL, 0); }

void symbols_init_threaded(struct symbols *s, struct symbols_cache *spare) {
  init_resolver(s, 1, spare->entries, spare->stale_below);
  spare->entries = NULL;
}

void symbols_pass_cache(struct symbols *s, struct symbols_cache *to) {
  symbols_cache_free(to);
  to->entries = s->resolved;
  to->stale_below = s->newest_generation + 1;
  s->resolved = NULL;
}

void symbols_cache_free(struct symbols_cache *c) {
  table_free(c->entries, SYMBOLS_RESOLVED_CACHE, sizeof *c->entries);
  c->entries = NULL;
}

void symbols_free(struct symbols *s) {
  for (size_t i = 0; i < s->nstrings; i++) free(s->strings[i].data);
  free(s->strings);
  hashtab_free(&s->string_index);
  keymap_free(&s->protos);
  free(s->proto_bindings);
  keymap_free(&s->cfuncs);
  keymap_free(&s->ffuncs);
  free(s->code_index);
  keymap_free(&s->traces);
  free(s->trace_bindings);
  free(s->locations);
  table_free(s->location_slots, s->location_mask + 1,
             sizeof *s->location_slots);
  if (s->cache_mapped)
    table_free(s->resolved, SYMBOLS_RESOLVED_CACHE, sizeof *s->resolved);
  else
    free(s->resolved);
  free(s->stack_frames);
  free(s->stacks);
  labelsets_free(&s->labels);
  memset(s, 0, sizeof *s);
}

void symbols_forget_bindings(struct symbols *s) {
  keymap_free(&s->protos);
  keymap_free(&s->cfuncs);
  keymap_free(&s->ffuncs);
  keymap_free(&s->traces);
  s->nprotos = s->ntraces = s->ncode = 0;
  s->code_index_stale = 1;
  bump_generations(s, RAW_INTERNAL, RAW_KINDS);
  s->stack_base = s->nstacks;
  memset(&s->memprof, 0, sizeof s->memprof);
  memset(&s->process, 0, sizeof s->process);
  labelsets_forget_stream(&s->labels);
}

struct string_probe {
  const struct symbols *s;
  const char *str;
  size_t len;
};

static int same_string(const void *ctx, uint32_t id) {
  const struct string_probe *p = ctx;
  const struct symstring *str = &p->s->strings[id];
  return str->len == p->len && memcmp(str->data, p->str, p->len) == 0;
}

uint32_t symbols_intern(struct symbols *s, const char *str, size_t len) {
  struct string_probe probe = {s, str, len};
  uint32_t hash = hash_bytes(str, len);
  uint32_t id = hashtab_find(&s->string_index, hash, same_string, &probe);
  if (id != HASHTAB_NONE) return id;
  grow_array((void **)&s->strings, &s->strings_cap, s->nstrings + 1,
             sizeof *s->strings);
  id = (uint32_t)s->nstrings++;
  s->strings[id].data = xmalloc(len);
  memcpy(s->strings[id].data, str, len);
  s->strings[id].len = len;
  hashtab_add(&s->string_index, hash, id);
  return id;
}

/*
** A new binding changes no cached resolution (those of unbound names are
** not cached: symbols_resolve_raw()); a binding replaced changes those of
** its kinds. Native code is named by the C functions around it: every C
** function's binding changes it.
*/
void symbols_bind_proto(struct symbols *s, uint64_t addr, const char *chunk,
                        size_t len, uint64_t first_line) {
  uint32_t id = keymap_get(&s->protos, addr);
  if (id != HASHTAB_NONE) {
    bump_generations(s, RAW_LUA, RAW_LUA + 1);
    bump_generations(s, RAW_PROTO, RAW_PROTO + 1);
  } else {
    grow_array((void **)&s->proto_bindings, &s->protos_cap, s->nprotos + 1,
               sizeof *s->proto_bindings);
    id = (uint32_t)s->nprotos++;
    keymap_put(&s->protos, addr, id);
  }
  s->proto_bindings[id] =
      (struct proto_binding){symbols_intern(s, chunk, len), first_line};
}

/* The chunk name bound to a proto address, or SYMBOLS_NONE. */
static uint32_t proto_chunk(const struct symbols *s, uint64_t proto) {
  uint32_t id = keymap_get(&s->protos, proto);
  return id == HASHTAB_NONE ? SYMBOLS_NONE : s->proto_bindings[id].chunk;
}

void symbols_bind_cfunc(struct symbols *s, uint64_t addr, const char *name,
                        size_t len) {
  if (keymap_get(&s->cfuncs, addr) != HASHTAB_NONE)
    bump_generations(s, RAW_CFUNC, RAW_CFUNC + 1);
  bump_generations(s, RAW_CODE, RAW_CODE + 1);
  s->code_index_stale = 1;
  keymap_put(&s->cfuncs, addr, symbols_intern(s, name, len));
}

void symbols_bind_ffunc(struct symbols *s, uint64_t id, const char *name,
                        size_t len) {
  if (keymap_get(&s->ffuncs, id) != HASHTAB_NONE)
    bump_generations(s, RAW_FFUNC, RAW_FFUNC + 1);
  keymap_put(&s->ffuncs, id, symbols_intern(s, name, len));
}

void symbols_bind_trace(struct symbols *s, uint64_t traceno, uint64_t proto,
                        uint64_t line) {
  uint32_t id = keymap_get(&s->traces, traceno);
  if (id != HASHTAB_NONE) {
    bump_generations(s, RAW_TRACE, RAW_TRACE + 1);
  } else {
    grow_array((void **)&s->trace_bindings, &s->traces_cap, s->ntraces + 1,
               sizeof *s->trace_bindings);
    id = (uint32_t)s->ntraces++;
    keymap_put(&s->traces, traceno, id);
  }
  s->trace_bindings[id] =
      (struct trace_binding){proto_chunk(s, proto), proto, line};
}

static uint32_t location_hash(const struct location *loc) {
  return hash_u64(((uint64_t)loc->kind << 48 | (uint64_t)loc->vm << 32 |
                   loc->name) ^
                  hash_u64(loc->addr ^ (loc->traceno << 17)) ^
                  (loc->line * UINT64_C(0xff51afd7ed558ccd)));
}

static int same_location(const struct location *a, const struct location *b) {
  return a->kind == b->kind && a->vm == b->vm && a->name == b->name &&
         a->addr == b->addr &&
         a->line == b->line && a->traceno == b->traceno;
}

static void place_location(struct location_slot *slots, size_t mask,
                           const struct location_slot *slot) {
  size_t i = location_hash(&slot->key) & mask;
  while (slots[i].ref) i = (i + 1) & mask;
  slots[i] = *slot;
}

static void grow_location_index(struct symbols *s) {
  size_t nold = s->location_slots ? s->location_mask + 1 : 0;
  size_t nslots = nold ? nold * 2 : 256;
  struct location_slot *slots = table_calloc(nslots, sizeof *slots);
  for (size_t i = 0; i < nold; i++)
    if (s->location_slots[i].ref)
      place_location(slots, nslots - 1, &s->location_slots[i]);
  table_free(s->location_slots, nold, sizeof *slots);
  s->location_slots = slots;
  s->location_mask = nslots - 1;
}

static uint32_t location_id(struct symbols *s, struct location loc) {
  if (!s->location_slots) grow_location_index(s);
  size_t i = location_hash(&loc) & s->location_mask;
  for (; s->location_slots[i].ref; i = (i + 1) & s->location_mask)
    if (same_location(&s->location_slots[i].key, &loc))
      return s->location_slots[i].ref - 1;
  grow_array((void **)&s->locations, &s->locations_cap, s->nlocations + 1,
             sizeof *s->locations);
  uint32_t id = (uint32_t)s->nlocations++;
  s->locations[id] = loc;
  s->location_slots[i] = (struct location_slot){loc, id + 1};
  if (s->nlocations * 2 > s->location_mask + 1) grow_location_index(s);
  return id;
}

uint32_t symbols_location_id(struct symbols *s, struct location loc) {
  return location_id(s, loc);
}

static uint32_t resolve_internal(struct symbols *s) {
  return location_id(s, (struct location){.kind = LOC_INTERNAL,
                                          .name = SYMBOLS_NONE});
}

uint32_t symbols_loc_before_start(struct symbols *s) {
  return location_id(s, (struct location){.kind = LOC_BEFORE_START,
                                          .name = SYMBOLS_NONE});
}

static uint32_t resolve_lua(struct symbols *s, uint64_t proto,
                           uint64_t line) {
  uint32_t id = keymap_get(&s->protos, proto);
  if (id == HASHTAB_NONE)
    return location_id(s, (struct location){.kind = LOC_LUA_UNKNOWN,
                                            .name = SYMBOLS_NONE,
                                            .addr = proto,
                                            .line = line});
  const struct proto_binding *p = &s->proto_bindings[id];
  if (line == SYMBOLS_LINE_UNKNOWN)
    return location_id(s, (struct location){.kind = LOC_LUA_NOLINE,
                                            .name = p->chunk,
                                            .line = p->first_line});
  return location_id(s, (struct location){.kind = LOC_LUA,
                                          .name = p->chunk,
                                          .line = line});
}

static uint32_t resolve_cfunc(struct symbols *s, uint64_t addr) {
  uint32_t name = keymap_get(&s->cfuncs, addr);
  if (name == HASHTAB_NONE)
    return location_id(s, (struct location){.kind = LOC_CFUNC_UNKNOWN,
                                            .name = SYMBOLS_NONE,
                                            .addr = addr});
  return location_id(s, (struct location){.kind = LOC_CFUNC,
                                          .name = name});
}

static uint32_t resolve_trace(struct symbols *s, uint64_t traceno) {
  uint32_t tid = keymap_get(&s->traces, traceno);
  if (tid == HASHTAB_NONE)
    return location_id(s, (struct location){.kind = LOC_TRACE_UNKNOWN,
                                            .name = SYMBOLS_NONE,
                                            .traceno = traceno});
  const struct trace_binding *t = &s->trace_bindings[tid];
  return location_id(
      s, (struct location){.kind = LOC_TRACE,
                           .name = t->chunk,
                           .addr = t->chunk == SYMBOLS_NONE ? t->proto : 0,
                           .line = t->line,
                           .traceno = traceno});
}

static uint32_t resolve_proto(struct symbols *s, uint64_t proto) {
  uint32_t id = keymap_get(&s->protos, proto);
  if (id == HASHTAB_NONE)
    return location_id(s, (struct location){.kind = LOC_PROTO_UNKNOWN,
                                            .name = SYMBOLS_NONE,
                                            .addr = proto});
  const struct proto_binding *p = &s->proto_bindings[id];
  return location_id(s, (struct location){.kind = LOC_LUA,
                                          .name = p->chunk,
                                          .line = p->first_line});
}

static uint32_t resolve_ffunc(struct symbols *s, uint64_t id) {
  uint32_t name = keymap_get(&s->ffuncs, id);
  if (name == HASHTAB_NONE)
    return location_id(s, (struct location){.kind = LOC_FFUNC_UNKNOWN,
                                            .name = SYMBOLS_NONE,
                                            .addr = id});
  return location_id(s, (struct location){.kind = LOC_FFUNC, .name = name});
}

static int by_address(const void *a, const void *b) {
  uint64_t x = ((const struct keyslot *)a)->key;
  uint64_t y = ((const struct keyslot *)b)->key;
  return (x > y) - (x < y);
}

static void sort_code_index(struct symbols *s) {
  const struct keymap *m = &s->cfuncs;
  s->ncode = 0;
  grow_array((void **)&s->code_index, &s->code_cap, m->count,
             sizeof *s->code_index);
  for (size_t i = 0; m->slots && i <= m->mask; i++)
    if (m->slots[i].used) s->code_index[s->ncode++] = m->slots[i];
  qsort(s->code_index, s->ncode, sizeof *s->code_index, by_address);
  s->code_index_stale = 0;
}

/* The C symbol at the greatest address <= addr, or NULL. */
static const struct keyslot *symbol_below(struct symbols *s, uint64_t addr) {
  if (s->code_index_stale) sort_code_index(s);
  size_t lo = 0, hi = s->ncode; /* the answer is below hi */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->code_index[mid].key <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo ? &s->code_index[lo - 1] : NULL;
}

/* The length of OBJECT in an end mark `OBJECT+0xOFFSET` (docs/formats.md),
** its OFFSET in *offset; 0 for any other name. */
static size_t end_mark(const struct symstring *str, uint64_t *offset) {
  size_t i = str->len, digits = 0;
  uint64_t v = 0;
  while (i > 0 && isxdigit((unsigned char)str->data[i - 1])) i--, digits++;
  if (digits == 0 || digits > 16 || i < 4 ||
      memcmp(str->data + i - 3, "+0x", 3) != 0)
    return 0;
  for (size_t k = i; k < str->len; k++) {
    char c = str->data[k];
    v = v << 4 | (uint64_t)(isdigit((unsigned char)c) ? c - '0'
                                                     : (c | 0x20) - 'a' + 10);
  }
  *offset = v;
  return i - 3;
}

static uint32_t resolve_code(struct symbols *s, uint64_t addr) {
  const struct keyslot *sym = symbol_below(s, addr);
  const struct symstring *str = sym ? &s->strings[sym->value] : NULL;
  if (!str || str->len == 0) /* below every symbol, or past an object */
    return location_id(s, (struct location){.kind = LOC_NATIVE_UNKNOWN,
                                            .name = SYMBOLS_NONE,
                                            .addr = addr});
  uint64_t offset;
  size_t len = end_mark(str, &offset);
  if (len)
    return location_id(
        s, (struct location){.kind = LOC_NATIVE_OFFSET,
                             .name = symbols_intern(s, str->data, len),
                             .addr = offset + (addr - sym->key)});
  return location_id(s,
                     (struct location){.kind = LOC_CFUNC, .name = sym->value});
}

uint32_t symbols_loc_trace_frame(struct symbols *s, uint64_t traceno,
                                 uint64_t proto, uint64_t line) {
  uint32_t chunk = proto_chunk(s, proto);
  return location_id(
      s, (struct location){.kind = LOC_TRACE_FRAME,
                           .name = chunk,
                           .addr = chunk == SYMBOLS_NONE ? proto : 0,
                           .line = line,
                           .traceno = traceno});
}

/* The id of a location made before, or SYMBOLS_NONE. */
static uint32_t location_find(const struct symbols *s,
                              const struct location *loc) {
  if (!s->location_slots) return SYMBOLS_NONE;
  size_t i = location_hash(loc) & s->location_mask;
  for (; s->location_slots[i].ref; i = (i + 1) & s->location_mask)
    if (same_location(&s->location_slots[i].key, loc))
      return s->location_slots[i].ref - 1;
  return SYMBOLS_NONE;
}

/* A compiler's location's parent: its start (any trace, any phase), or
** for that, the compiler itself. */
static int vm_parent(const struct location *loc, struct location *parent) {
  struct location l = *loc; /* parent may be loc */
  if (l.kind != LOC_VM || l.vm > SYMBOLS_VM_JIT ||
      (l.vm > LJM_VM_ASM && l.vm < SYMBOLS_VM_JIT))
    return 0;
  int start = l.name != SYMBOLS_NONE || l.addr;
  if (l.vm == SYMBOLS_VM_JIT && !start) return 0;
  *parent = (struct location){.kind = LOC_VM, .vm = SYMBOLS_VM_JIT,
                              .name = SYMBOLS_NONE};
  if (l.vm != SYMBOLS_VM_JIT && start) {
    parent->name = l.name;
    parent->addr = l.addr;
    parent->line = l.line;
  }
  return 1;
}

uint32_t symbols_loc_vm(struct symbols *s, unsigned kind, uint64_t traceno,
                        uint64_t proto, uint64_t line) {
  uint32_t chunk = proto ? proto_chunk(s, proto) : SYMBOLS_NONE;
  struct location loc = {.kind = LOC_VM,
                         .vm = (uint16_t)kind,
                         .name = chunk,
                         .addr = chunk == SYMBOLS_NONE ? proto : 0,
                         .line = line,
                         .traceno = traceno};
  uint32_t id = location_id(s, loc);
  for (struct location up = loc; vm_parent(&up, &up);) location_id(s, up);
  return id;
}

uint32_t symbols_vm_parent(const struct symbols *s, uint32_t loc) {
  struct location parent;
  if (!vm_parent(&s->locations[loc], &parent)) return SYMBOLS_NONE;
  return location_find(s, &parent);
}

uint32_t symbols_loc_label(struct symbols *s, const char *text) {
  return location_id(s, (struct location){
                            .kind = LOC_LABEL,
                            .name = symbols_intern(s, text, strlen(text))});
}

static uint32_t resolve(struct symbols *s, enum symbols_raw_kind kind,
                        uint64_t a, uint64_t b) {
  switch (kind) {
  case RAW_LUA: return resolve_lua(s, a, b);
  case RAW_CFUNC: return resolve_cfunc(s, a);
  case RAW_TRACE: return resolve_trace(s, a);
  case RAW_PROTO: return resolve_proto(s, a);
  case RAW_FFUNC: return resolve_ffunc(s, a);
  case RAW_CODE: return resolve_code(s, a);
  default: return resolve_internal(s);
  }
}

/* A name the symbol table does not bind (yet)? */
static int unbound(enum loc_kind kind) {
  return kind == LOC_LUA_UNKNOWN || kind == LOC_CFUNC_UNKNOWN ||
         kind == LOC_TRACE_UNKNOWN || kind == LOC_PROTO_UNKNOWN ||
         kind == LOC_FFUNC_UNKNOWN;
}

/* Cached unless unbound: then binding its name needs no invalidation. */
uint32_t symbols_resolve_raw(struct symbols *s, enum symbols_raw_kind kind,
                             uint64_t a, uint64_t b) {
  uint32_t id = resolve(s, kind, a, b);
  if (!unbound((enum loc_kind)s->locations[id].kind))
    *symbols_raw_entry(s, kind, a, b) =
        (struct resolved_location){a, b, s->generation[kind], id};
  return id;
}

void aliases_free(struct aliases *a) {
  free(a->number_of);
  free(a->strings);
  memset(a, 0, sizeof *a);
}

/* Append a chunk name, or its alias when it spans lines and a is given. */
static void format_chunk(const struct symbols *s, uint32_t chunk,
                         struct aliases *a, struct sbuf *sb) {
  const struct symstring *str = &s->strings[chunk];
  if (!a || !memchr(str->data, '\n', str->len)) {
    sbuf_add(sb, str->data, str->len);
    return;
  }
  grow_array_zeroed((void **)&a->number_of, &a->cap, (size_t)chunk + 1,
                    sizeof *a->number_of);
  if (!a->number_of[chunk]) {
    grow_array((void **)&a->strings, &a->strings_cap, a->count + 1,
               sizeof *a->strings);
    a->strings[a->count++] = chunk;
    a->number_of[chunk] = (uint32_t)a->count;
  }
  sbuf_printf(sb, "CHUNK %" PRIu32, a->number_of[chunk]);
}

/* Lines are signed in the VM: -1 (all ones) marks "no line". */
static void format_line(uint64_t line, struct sbuf *sb) {
  if (line == SYMBOLS_LINE_UNKNOWN)
    sbuf_printf(sb, " (line ?)");
  else if (line > INT64_MAX)
    sbuf_printf(sb, ":%" PRId64, (int64_t)(line - INT64_MAX - 1) + INT64_MIN);
  else {
    sbuf_add(sb, ":", 1);
    sbuf_u64(sb, line);
  }
}

static void format_lua(const struct symbols *s, uint32_t chunk, uint64_t proto,
                       uint64_t line, struct aliases *a, struct sbuf *sb) {
  if (chunk == SYMBOLS_NONE)
    sbuf_printf(sb, "@<unknown proto 0x%" PRIx64 ">", proto);
  else
    format_chunk(s, chunk, a, sb);
  format_line(line, sb);
}

/* `JIT compiler (record): trace 12 at @file.lua:68`, what is known of it;
** `INTERNAL (GC)`. */
static void format_vm(const struct symbols *s, const struct location *loc,
                      struct aliases *a, struct sbuf *sb) {
  static const char *const what[SYMBOLS_VM_JIT] = {
      [LJM_VM_RECORD] = "record", [LJM_VM_OPT] = "opt", [LJM_VM_ASM] = "asm",
      [LJM_VM_GC] = "GC", [LJM_VM_EXIT] = "trace exit",
      [LJM_VM_STACK] = "stack moved"};
  if (loc->vm > LJM_VM_ASM && loc->vm != SYMBOLS_VM_JIT) {
    sbuf_printf(sb, "INTERNAL (%s)", what[loc->vm]);
    return;
  }
  sbuf_printf(sb, "JIT compiler");
  if (loc->vm != SYMBOLS_VM_JIT) sbuf_printf(sb, " (%s)", what[loc->vm]);
  if (!loc->traceno && loc->name == SYMBOLS_NONE && !loc->addr) return;
  sbuf_printf(sb, ": trace");
  if (loc->traceno) sbuf_printf(sb, " %" PRIu64, loc->traceno);
  if (loc->name == SYMBOLS_NONE && !loc->addr) return;
  sbuf_printf(sb, " at ");
  format_lua(s, loc->name, loc->addr, loc->line, a, sb);
}

void symbols_format(const struct symbols *s, uint32_t id, struct aliases *a,
                    struct sbuf *sb) {
  const struct location *loc = &s->locations[id];
  switch ((enum loc_kind)loc->kind) {
  case LOC_INTERNAL:
    sbuf_printf(sb, "INTERNAL");
    break;
  case LOC_LUA:
  case LOC_LUA_UNKNOWN:
    format_lua(s, loc->name, loc->addr, loc->line, a, sb);
    break;
  case LOC_LUA_NOLINE: /* named by where the function is defined; a main
                          chunk (first line 0) by its chunk alone */
    format_lua(s, loc->name, loc->addr,
               loc->line ? loc->line : SYMBOLS_LINE_UNKNOWN, a, sb);
    if (loc->line) format_line(SYMBOLS_LINE_UNKNOWN, sb);
    break;
  case LOC_CFUNC:
  case LOC_FFUNC:
  case LOC_LABEL:
    sbuf_add(sb, s->strings[loc->name].data, s->strings[loc->name].len);
    break;
  case LOC_CFUNC_UNKNOWN:
    sbuf_printf(sb, "CFUNC 0x%" PRIx64, loc->addr);
    break;
  case LOC_TRACE:
    sbuf_printf(sb, "TRACE [%" PRIu64 "] started at ", loc->traceno);
    format_lua(s, loc->name, loc->addr, loc->line, a, sb);
    break;
  case LOC_TRACE_UNKNOWN:
    sbuf_printf(sb, "TRACE [%" PRIu64 "]", loc->traceno);
    break;
  case LOC_BEFORE_START:
    sbuf_printf(sb, "UNKNOWN (allocated before profiling started)");
    break;
  case LOC_PROTO_UNKNOWN:
    sbuf_printf(sb, "@<unknown proto 0x%" PRIx64 ">", loc->addr);
    break;
  case LOC_FFUNC_UNKNOWN:
    sbuf_printf(sb, "ffunc #%" PRIu64, loc->addr);
    break;
  case LOC_NATIVE_UNKNOWN:
    sbuf_printf(sb, "0x%" PRIx64, loc->addr);
    break;
  case LOC_NATIVE_OFFSET:
    sbuf_add(sb, s->strings[loc->name].data, s->strings[loc->name].len);
    sbuf_printf(sb, "+0x%" PRIx64, loc->addr);
    break;
  case LOC_TRACE_FRAME:
    sbuf_printf(sb, "TRACE [%" PRIu64 "] ", loc->traceno);
    format_lua(s, loc->name, loc->addr, loc->line, a, sb);
    break;
  case LOC_VM:
    format_vm(s, loc, a, sb);
    break;
  }
}

void symbols_format_function(const struct symbols *s, uint32_t id,
                             struct aliases *a, struct sbuf *sb) {
  const struct location *loc = &s->locations[id];
  if (loc->kind != LOC_LUA || loc->line != 0 || loc->name == SYMBOLS_NONE) {
    symbols_format(s, id, a, sb);
    return;
  }
  format_chunk(s, loc->name, a, sb);
  sbuf_printf(sb, " (main chunk)");
}
