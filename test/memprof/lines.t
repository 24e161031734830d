#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# With the JIT off, each line is charged exactly the allocations it makes,
# and what the garbage collector frees is no longer live.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

my $bin = scratch() . '/lines.bin';
my $run = run_lua(<<"LUA");
jit.off()
local keep = {}
for i = 1, 200 do keep[i] = false end               -- the array part, now
local warm = {}
for i = 1, 3000 do warm[i] = "warm" .. i end        -- string table grows now
local pad = string.rep("w", 8192)                   -- and the string buffer
collectgarbage() collectgarbage("stop")
assert(misc.memprof.start("$bin"))
for i = 1, 20 do keep[i] = {} end
for i = 1, 10 do keep[20 + i] = string.rep("s", 40 + i) end
local function mk(t, k)
  return { k }
end
local t = setmetatable({}, { __index = mk })
local x = t.a, t.b, t.c
keep, t, x = nil, nil, nil
collectgarbage()
assert(misc.memprof.stop())
LUA
is($run->{rc}, 0, 'payload ran') or diag $run->{err};
my $r = memprof_report($bin);
is($r->{rc}, 0, 'the stream reads back complete') or diag $r->{err};
my $src = '@' . $run->{script};

my $tables = location($r, "$src:9");
is($tables->{alloc_events}, 20, 'line 9 made exactly 20 tables');
is($tables->{alloc_bytes}, 20 * 64, '... of 64 bytes each');

# A string of length n takes 24 + ((n + 4) & ~3) bytes.
my $bytes = 0;
$bytes += 24 + ((40 + $_ + 4) & ~3) for 1 .. 10;
my $strings = location($r, "$src:10");
is($strings->{alloc_events}, 10, 'line 10 made exactly 10 strings (string.rep is charged to its caller)');
is($strings->{alloc_bytes}, $bytes, "... of $bytes bytes in all");

# An __index function makes a table on line 12, called from line 15.
is(location($r, "$src:12")->{alloc_events}, 3, 'the metamethod line made its 3 tables');
is(location($r, "$src:15")->{alloc_events}, 0, 'the line that indexed made none');

is($tables->{live_blocks} + $strings->{live_blocks}, 0, 'after collectgarbage() none of them is live');
is(location($r, 'INTERNAL')->{free_events} >= 30, 1, 'the collector freed them (internal frees)');
my ($gc) = grep { $_->{location} eq "$src:9" }
	   @{ location($r, 'INTERNAL')->{free_overrides} || [] };
is($gc && $gc->{events}, 20, "the collector's frees of line 9's tables: all 20");
is($gc && $gc->{bytes}, 20 * 64, '... each saying its 64 bytes');

done_testing;
