/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** pprof: a gzip'd perftools.profiles.Profile (proto/profile.proto), as
** `go tool pprof` and other pprof readers take it.
**
** - A location per frame, with one line: its function and the frame's line;
**   but the frames a trace's machine code runs inlined (innermost first)
**   and the frame they are inlined into, the one the trace was entered in,
**   are one location with a line each, in that order, as pprof models
**   inlining. Equal runs of frames share a location; the trace's own frame,
**   the code running, stays a location of its own, innermost.
** - Functions: a Lua line's is its proto, named `@file.lua:FIRSTLINE`, file
**   `file.lua` (the chunk name without '@'), start line FIRSTLINE; other
**   frames are their own function, by the name the reports give them, with
**   a source file and line only if they have one (traces, memprof sites).
** - One mapping holds every location: the stream names no objects, and the
**   names are already resolved (has_functions etc. set).
** - Samples leaf first, values as the profile's sample types; the default
**   sample type is profile_weight()'s: CPU time, or memory as shown. A CPU
**   sample is labelled with what the VM was doing, `vmstate` (INTERP,
**   TRACE, RECORD, ...), and the trace that ran, exited or was being
**   compiled, `trace` (a number; none outside traces and the compiler), so
**   that `go tool pprof -tagfocus=vmstate=RECORD` keeps the compiler's.
**   Streams merged, each sample of either kind says which it came from,
**   `stream` (its file), and when the stream says, its process's `pid`
**   and `host` (strings), for `-tagfocus=pid=4242` and `-tags`. A sample
**   taken under a label set (sysprof v4, memprof v6) carries each label as
**   a string label, key and value escaped as the reports write them
**   (labels_escape()), for `-tagfocus=route=/api`; the folded sets as
**   `labels=other`.
** - CPU: period type cpu/nanoseconds, period the sampling interval,
**   duration the profile's elapsed time. Memory: period type space/bytes.
** - Comments: the source, and where the stream is damaged, if it is.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "report.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Label Label;

/* The string table: distinct byte strings, by index; [0] is "". */
struct strings {
  struct sbuf bytes;
  size_t *start; /* of string i in bytes; start[count] is the end */
  size_t count, cap;
  struct hashtab index;
};

struct string_probe {
  const struct strings *t;
  const char *data;
  size_t len;
};

static int same_string(const void *ctx, uint32_t id) {
  const struct string_probe *p = ctx;
  size_t len = p->t->start[id + 1] - p->t->start[id];
  return len == p->len &&
         (len == 0 || !memcmp(p->t->bytes.data + p->t->start[id], p->data, len));
}

static uint32_t hash_string(const char *data, size_t len) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)data[i]) * UINT64_C(0x100000001b3);
  return hash_u64(h);
}

static int64_t string_id(struct strings *t, const char *data, size_t len) {
  struct string_probe probe = {t, data, len};
  uint32_t hash = hash_string(data, len);
  uint32_t id = hashtab_find(&t->index, hash, same_string, &probe);
  if (id != HASHTAB_NONE) return id;
  grow_array((void **)&t->start, &t->cap, t->count + 2, sizeof *t->start);
  id = (uint32_t)t->count++;
  if (len) sbuf_add(&t->bytes, data, len);
  t->start[id + 1] = t->bytes.len;
  hashtab_add(&t->index, hash, id);
  return id;
}

static int64_t cstring_id(struct strings *t, const char *s) {
  return string_id(t, s, strlen(s));
}

static void strings_init(struct strings *t) {
  memset(t, 0, sizeof *t);
  grow_array((void **)&t->start, &t->cap, 1, sizeof *t->start);
  t->start[0] = 0;
  string_id(t, "", 0);
}

static void strings_free(struct strings *t) {
  sbuf_free(&t->bytes);
  free(t->start);
  hashtab_free(&t->index);
}

/* Everything the message points to, freed together. */
struct pprof {
  Profile msg;
  struct strings strings;
  ValueType *types, period_type;
  ProtobufCBinaryData *string_table;
  Mapping mapping, *mappings[1];
  Sample *samples;
  Label *labels, **label_ptrs; /* PPROF_LABELS and the set's per sample */
  uint64_t *location_ids;
  int64_t *values;
  Location *locations;
  Line *lines;
  Function *functions;
  size_t nfunctions;
  int64_t comments[2];
  ValueType **type_ptrs;
  Sample **sample_ptrs;
  Location **location_ptrs;
  Line **line_ptrs;
  Function **function_ptrs;
};

static int64_t clamp_i64(uint64_t v) {
  return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static void add_types(struct pprof *pp, const struct profile *p) {
  pp->types = xcalloc(p->ntypes, sizeof *pp->types);
  pp->type_ptrs = xcalloc(p->ntypes, sizeof *pp->type_ptrs);
  for (size_t i = 0; i < p->ntypes; i++) {
    perftools__profiles__value_type__init(&pp->types[i]);
    pp->types[i].type = cstring_id(&pp->strings, p->types[i].type);
    pp->types[i].unit = cstring_id(&pp->strings, p->types[i].unit);
    pp->type_ptrs[i] = &pp->types[i];
  }
  pp->msg.n_sample_type = p->ntypes;
  pp->msg.sample_type = pp->type_ptrs;
  pp->msg.default_sample_type = pp->types[profile_weight(p)].type;

  perftools__profiles__value_type__init(&pp->period_type);
  int cpu = p->kind == PROFILE_CPU;
  pp->period_type.type = cstring_id(&pp->strings, cpu ? "cpu" : "space");
  pp->period_type.unit = cstring_id(&pp->strings, cpu ? "nanoseconds" : "bytes");
  pp->msg.period_type = &pp->period_type;
  pp->msg.period = clamp_i64(p->period);
  pp->msg.duration_nanos = clamp_i64(p->duration_ns);
}

static void add_mapping(struct pprof *pp) {
  perftools__profiles__mapping__init(&pp->mapping);
  pp->mapping.id = 1;
  pp->mapping.filename = cstring_id(&pp->strings, "luajit");
  pp->mapping.has_functions = 1;
  pp->mapping.has_filenames = 1;
  pp->mapping.has_line_numbers = 1;
  pp->mappings[0] = &pp->mapping;
  pp->msg.n_mapping = 1;
  pp->msg.mapping = pp->mappings;
}

static int64_t add_name(struct pprof *pp, struct sbuf *sb) {
  return string_id(&pp->strings, sb->data, sb->len);
}

/* The function id of a frame's function, added when first met. */
static uint64_t function_of(struct pprof *pp, const struct profile *p,
                            struct keymap *by_func, uint32_t frame,
                            struct sbuf *scratch) {
  uint32_t func = p->frames[frame].func;
  uint32_t index = keymap_get(by_func, func);
  if (index != HASHTAB_NONE) return index + 1;
  index = (uint32_t)pp->nfunctions++;
  keymap_put(by_func, func, index);
  Function *fn = &pp->functions[index];
  perftools__profiles__function__init(fn);
  fn->id = index + 1;
  sbuf_reset(scratch);
  profile_function_name(p, frame, scratch);
  fn->name = fn->system_name = add_name(pp, scratch);
  sbuf_reset(scratch);
  int64_t start_line;
  if (profile_frame_source(p, frame, 1, scratch, &start_line)) {
    fn->filename = add_name(pp, scratch);
    fn->start_line = start_line;
  }
  pp->function_ptrs[index] = fn;
  return fn->id;
}

/*
** A stack is cut into runs of frames: the frames a trace's machine code
** runs inlined, innermost first, then the one they are inlined into (the
** "physical" frame); any other frame is a run alone. A run is one
** location, its frames the location's lines; equal runs (the same frames)
** share it.
*/
struct run {
  uint32_t first, length; /* its frames: stack_frames[first ..] */
};

struct runs {
  const struct profile *p;
  struct run *items; /* by location id - 1 */
  size_t count, cap;
  size_t nlines; /* their lengths summed */
  struct hashtab index;
};

struct run_probe {
  const struct runs *runs;
  const struct profile_stack_frame *frames;
  uint32_t length;
};

static int same_run(const void *ctx, uint32_t id) {
  const struct run_probe *probe = ctx;
  const struct run *run = &probe->runs->items[id];
  if (run->length != probe->length) return 0;
  const struct profile_stack_frame *frames =
      &probe->runs->p->stack_frames[run->first];
  for (uint32_t i = 0; i < run->length; i++)
    if (frames[i].frame != probe->frames[i].frame) return 0;
  return 1;
}

/* How many frames, from the first of frames[0 .. left), make a run. */
static uint32_t run_length(const struct profile_stack_frame *frames,
                           uint32_t left) {
  uint32_t n = 1;
  while (n < left && frames[n - 1].inlined) n++;
  return n;
}

/* The location id of the run at stack_frames[first ..], added when first
** met. */
static uint64_t run_location(struct runs *runs, uint32_t first,
                             uint32_t length) {
  const struct profile_stack_frame *frames = &runs->p->stack_frames[first];
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (uint32_t i = 0; i < length; i++)
    h = (h ^ frames[i].frame) * UINT64_C(0x100000001b3);
  uint32_t hash = hash_u64(h);
  struct run_probe probe = {runs, frames, length};
  uint32_t id = hashtab_find(&runs->index, hash, same_run, &probe);
  if (id == HASHTAB_NONE) {
    grow_array((void **)&runs->items, &runs->cap, runs->count + 1,
               sizeof *runs->items);
    id = (uint32_t)runs->count++;
    runs->items[id] = (struct run){first, length};
    runs->nlines += length;
    hashtab_add(&runs->index, hash, id);
  }
  return (uint64_t)id + 1;
}

static void runs_free(struct runs *runs) {
  free(runs->items);
  hashtab_free(&runs->index);
}

#define PPROF_LABELS 5

static void add_string_label(struct pprof *pp, Sample *sample, Label *l,
                             const char *key, const char *value) {
  perftools__profiles__label__init(l);
  l->key = cstring_id(&pp->strings, key);
  l->str = cstring_id(&pp->strings, value);
  sample->label[sample->n_label++] = l;
}

/* A label of the stack's set, its key and value escaped. */
static void add_set_labels(struct pprof *pp, const struct profile *p,
                           Sample *sample, Label *l,
                           const struct profile_stack *st) {
  struct sbuf key = {0}, value = {0};
  size_t n;
  const struct label *set = labelsets_get(&p->sym->labels, st->labels, &n);
  if (st->labels == LABELS_OTHER)
    add_string_label(pp, sample, l, "labels", "other");
  for (size_t i = 0; i < n; i++) {
    const struct symstring *k = &p->sym->strings[set[i].key];
    const struct symstring *v = &p->sym->strings[set[i].value];
    sbuf_reset(&key);
    sbuf_reset(&value);
    labels_escape(&key, k->data, k->len);
    labels_escape(&value, v->data, v->len);
    add_string_label(pp, sample, l++, sbuf_cstr(&key), sbuf_cstr(&value));
  }
  sbuf_free(&key);
  sbuf_free(&value);
}

/* Labels a stack's set gives its sample. */
static size_t set_labels(const struct profile *p,
                         const struct profile_stack *st) {
  size_t n;
  labelsets_get(&p->sym->labels, st->labels, &n);
  return st->labels == LABELS_OTHER ? 1 : n;
}

/* A sample's labels (at first, room for them all): a CPU sample's VM
** state and its trace if it has one, of a merge the stream it came from,
** then those of its label set. */
static void add_labels(struct pprof *pp, const struct profile *p,
                       Sample *sample, size_t first,
                       const struct profile_stack *st) {
  Label *l = &pp->labels[first];
  sample->label = &pp->label_ptrs[first];
  if (p->kind == PROFILE_CPU)
    add_string_label(pp, sample, l++, "vmstate",
                     sysprof_vmstate_name(st->vmstate));
  if (st->trace) {
    perftools__profiles__label__init(l);
    l->key = cstring_id(&pp->strings, "trace");
    l->num = clamp_i64(st->trace);
    sample->label[sample->n_label++] = l++;
  }
  if (origins_merged(p->origins)) {
    const struct origin *o = &p->origins->items[st->stream];
    add_string_label(pp, sample, l++, "stream", o->name);
    if (o->process.known) {
      char pid[24];
      snprintf(pid, sizeof pid, "%" PRIu64, o->process.pid);
      add_string_label(pp, sample, l++, "pid", pid);
      add_string_label(pp, sample, l++, "host", o->process.host);
    }
  }
  add_set_labels(pp, p, sample, l, st);
}

/* The samples, leaf first as pprof's, and the runs their locations are. */
static void add_samples(struct pprof *pp, const struct profile *p,
                        struct runs *runs) {
  pp->samples = xcalloc(p->nstacks + 1, sizeof *pp->samples);
  pp->sample_ptrs = xcalloc(p->nstacks + 1, sizeof *pp->sample_ptrs);
  pp->location_ids = xcalloc(p->nstack_frames + 1, sizeof *pp->location_ids);
  pp->values = xcalloc(p->nstacks * p->ntypes + 1, sizeof *pp->values);
  size_t nlabels = 0;
  for (size_t s = 0; s < p->nstacks; s++)
    nlabels += PPROF_LABELS + set_labels(p, &p->stacks[s]);
  pp->labels = xcalloc(nlabels + 1, sizeof *pp->labels);
  pp->label_ptrs = xcalloc(nlabels + 1, sizeof *pp->label_ptrs);
  nlabels = 0;
  for (size_t s = 0; s < p->nstacks; s++) {
    const struct profile_stack *st = &p->stacks[s];
    Sample *sample = &pp->samples[s];
    perftools__profiles__sample__init(sample);
    sample->location_id = &pp->location_ids[st->first];
    for (uint32_t f = 0, length; f < st->depth; f += length) {
      length = run_length(&p->stack_frames[st->first + f], st->depth - f);
      sample->location_id[sample->n_location_id++] =
          run_location(runs, st->first + f, length);
    }
    sample->n_value = p->ntypes;
    sample->value = &pp->values[s * p->ntypes];
    for (size_t v = 0; v < p->ntypes; v++)
      sample->value[v] = clamp_i64(st->values[v]);
    add_labels(pp, p, sample, nlabels, st);
    nlabels += PPROF_LABELS + set_labels(p, st);
    pp->sample_ptrs[s] = sample;
  }
  pp->msg.n_sample = p->nstacks;
  pp->msg.sample = pp->sample_ptrs;
}

/* A location per run, a line per frame of it; the functions they name. */
static void add_locations(struct pprof *pp, const struct profile *p,
                          const struct runs *runs) {
  size_t n = runs->count;
  pp->locations = xcalloc(n + 1, sizeof *pp->locations);
  pp->location_ptrs = xcalloc(n + 1, sizeof *pp->location_ptrs);
  pp->lines = xcalloc(runs->nlines + 1, sizeof *pp->lines);
  pp->line_ptrs = xcalloc(runs->nlines + 1, sizeof *pp->line_ptrs);
  pp->functions = xcalloc(p->nframes + 1, sizeof *pp->functions);
  pp->function_ptrs = xcalloc(p->nframes + 1, sizeof *pp->function_ptrs);
  struct keymap by_func = {0};
  struct sbuf scratch = {0};
  size_t nlines = 0;
  for (size_t r = 0; r < n; r++) {
    const struct run *run = &runs->items[r];
    Location *loc = &pp->locations[r];
    perftools__profiles__location__init(loc);
    loc->id = r + 1;
    loc->mapping_id = 1;
    loc->n_line = run->length;
    loc->line = &pp->line_ptrs[nlines];
    for (uint32_t i = 0; i < run->length; i++, nlines++) {
      uint32_t frame = p->stack_frames[run->first + i].frame;
      Line *line = &pp->lines[nlines];
      perftools__profiles__line__init(line);
      line->function_id = function_of(pp, p, &by_func, frame, &scratch);
      sbuf_reset(&scratch);
      int64_t at;
      if (profile_frame_source(p, frame, 0, &scratch, &at)) line->line = at;
      pp->line_ptrs[nlines] = line;
    }
    pp->location_ptrs[r] = loc;
  }
  keymap_free(&by_func);
  sbuf_free(&scratch);
  pp->msg.n_location = n;
  pp->msg.location = pp->location_ptrs;
  pp->msg.n_function = pp->nfunctions;
  pp->msg.function = pp->function_ptrs;
}

static void add_comments(struct pprof *pp, const struct profile *p) {
  struct sbuf text = {0};
  sbuf_printf(&text, "ljprof: %s", p->source);
  pp->comments[pp->msg.n_comment++] = add_name(pp, &text);
  if (p->reader->status != READER_OK) {
    sbuf_reset(&text);
    sbuf_printf(&text, "damaged stream, profile of what came before: %s",
                p->reader->err_msg);
    pp->comments[pp->msg.n_comment++] = add_name(pp, &text);
  }
  sbuf_free(&text);
  pp->msg.comment = pp->comments;
}

static void add_string_table(struct pprof *pp) {
  struct strings *t = &pp->strings;
  pp->string_table = xcalloc(t->count, sizeof *pp->string_table);
  for (size_t i = 0; i < t->count; i++)
    pp->string_table[i] = (ProtobufCBinaryData){
        t->start[i + 1] - t->start[i],
        (uint8_t *)t->bytes.data + t->start[i]};
  pp->msg.n_string_table = t->count;
  pp->msg.string_table = pp->string_table;
}

static void pprof_free(struct pprof *pp) {
  strings_free(&pp->strings);
  free(pp->types);
  free(pp->type_ptrs);
  free(pp->string_table);
  free(pp->samples);
  free(pp->sample_ptrs);
  free(pp->labels);
  free(pp->label_ptrs);
  free(pp->location_ids);
  free(pp->values);
  free(pp->locations);
  free(pp->location_ptrs);
  free(pp->lines);
  free(pp->line_ptrs);
  free(pp->functions);
  free(pp->function_ptrs);
}

/* Write data gzip'd; 0, or -1 if writing failed. */
static int write_gzip(FILE *out, const uint8_t *data, size_t len) {
  z_stream z = {0};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    return -1;
  unsigned char chunk[1 << 16];
  int rc = Z_OK, failed = 0;
  z.next_in = (unsigned char *)data;
  while (rc != Z_STREAM_END && !failed) {
    uInt step = len > UINT32_MAX ? UINT32_MAX : (uInt)len;
    z.avail_in += step;
    len -= step;
    do {
      z.next_out = chunk;
      z.avail_out = sizeof chunk;
      rc = deflate(&z, len ? Z_NO_FLUSH : Z_FINISH);
      size_t have = sizeof chunk - z.avail_out;
      if (rc == Z_STREAM_ERROR || fwrite(chunk, 1, have, out) != have)
        failed = 1;
    } while (z.avail_out == 0 && !failed);
  }
  deflateEnd(&z);
  return failed || fflush(out) != 0 || ferror(out) ? -1 : 0;
}

int report_pprof(FILE *out, const struct profile *p) {
  struct pprof pp = {0};
  perftools__profiles__profile__init(&pp.msg);
  strings_init(&pp.strings);
  add_types(&pp, p);
  add_mapping(&pp);
  struct runs runs = {.p = p};
  add_samples(&pp, p, &runs);
  add_locations(&pp, p, &runs);
  runs_free(&runs);
  add_comments(&pp, p);
  add_string_table(&pp); /* last: the others add strings */
  size_t size = perftools__profiles__profile__get_packed_size(&pp.msg);
  uint8_t *packed = xmalloc(size + 1);
  perftools__profiles__profile__pack(&pp.msg, packed);
  int rc = write_gzip(out, packed, size);
  free(packed);
  pprof_free(&pp);
  return rc;
}
