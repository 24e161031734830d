/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Lua functions by the names their source gives them. A stream knows a
** function by its chunk and the line it starts at (`@app.lua:12`); the
** name a Lua programmer looks for (`handle`, `M.parse`, `obj:send`) is
** on that line of the chunk's file: `local function f`, `function M.f`,
** `function obj:m`, `f = function`, `t.f = function`, `name = function`
** in a table constructor. The file is read when a report asks, once.
** No name when the chunk is not a file (`=stdin`, a string), the file is
** gone, not a regular file or larger than SRCNAME_MAX_FILE, the line is
** not there, or it holds no function or more than one.
*/
#ifndef LJPROF_SRCNAME_H
#define LJPROF_SRCNAME_H

#include <stddef.h>
#include <stdint.h>

#include "symbols.h"
#include "util.h"

#define SRCNAME_MAX_FILE (16u << 20)

struct srcfile;

struct srcnames {
  struct srcfile *files; /* read so far, found or not */
  size_t count, cap;
};

void srcnames_free(struct srcnames *names);

/* The name of the function that starts at line of chunk (`@path`),
** appended to sb; 0 (sb untouched) when it has none. */
int srcnames_find(struct srcnames *names, const char *chunk, size_t len,
                  uint64_t line, struct sbuf *sb);

/* symbols_format_function(), then ` (function NAME)` when a Lua
** function's source names it. */
void srcnames_format_function(struct srcnames *names,
                              const struct symbols *s, uint32_t loc,
                              struct aliases *a, struct sbuf *sb);

#endif
