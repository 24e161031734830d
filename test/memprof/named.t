#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Code that appears while profiling is named: chunks load()ed after the
# start, a C module required after the start, and short-lived chunks whose
# addresses the allocator hands out again and again.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

my $bin = scratch() . '/named.bin';
my $run = run_lua(<<"LUA");
jit.off()
assert(misc.memprof.start("$bin"))
local f = load("local t = { 0, 0, 0, 0, 0 }\\nfor i = 1, 5 do t[i] = {} end\\nreturn t", "\@loaded.lua")
f()
local g = load("return { {}, {}, {} }")
g()
local cmod = require("cmod")
cmod.alloc(7)
for i = 1, 300 do
  local h = load("return { " .. i .. " }", "=chunk" .. i)
  h()
  h = nil
  collectgarbage()
end
assert(misc.memprof.stop())
LUA
is($run->{rc}, 0, 'payload ran') or diag $run->{err};
my $r = memprof_report($bin);
is($r->{rc}, 0, 'the stream reads back complete') or diag $r->{err};

is(location($r, '@loaded.lua:2')->{alloc_events}, 5, 'a chunk loaded after the start is named by its chunk name and line');
is(location($r, 'return { {}, {}, {} }:1')->{alloc_events}, 4, 'a chunk loaded from a string is named by its source text');

my $c = location($r, 'cmod_alloc');
is($c->{alloc_events}, 1 + 7, 'a C module required after the start: cmod_alloc made its table and 7 userdata');
ok(!loc_matching($r, qr/^CFUNC 0x/), 'no C function is left unnamed');

my @wrong;
for my $i (1 .. 300) {
  my $l = location($r, "=chunk$i:1");
  push @wrong, "chunk$i: $l->{alloc_events}" if $l->{alloc_events} != 1;
}
is(scalar(@wrong), 0, '300 short-lived chunks at reused addresses: each named right, one table each')
  or diag "@wrong[0 .. 9]";
ok(!loc_matching($r, qr/unknown proto/), 'no event names a proto the stream never announced');

# New objects are looked for only when the loader's counters move: a C
# module allocating a thousand times after it was named adds events, not
# symbol tables (each re-scan would add the ~100 KB of symbols again).
my $sbin = scratch() . '/rescan.bin';
my $srun = run_lua(<<"LUA");
package.cpath = "$ENV{LJPROF_BUILD_DIR}/test/?.so;" .. package.cpath
local cmod = require("cmod")
jit.off()
assert(misc.memprof.start("$sbin"))
assert(misc.memprof.stop())
local base = io.open("$sbin", "rb"):seek("end")
assert(misc.memprof.start("$sbin"))
for i = 1, 1000 do cmod.alloc(1) end
assert(misc.memprof.stop())
print(base, io.open("$sbin", "rb"):seek("end"))
LUA
my ($empty, $busy) = split /\s+/, $srun->{out};
is($srun->{rc}, 0, 'rescan payload ran') or diag $srun->{err};
cmp_ok($busy - $empty, '<', 100_000,
       "2000 C-function events add ${\($busy - $empty)} bytes to an empty profile's $empty");
is(location(memprof_report($sbin), 'cmod_alloc')->{alloc_events}, 2000, 'and they are all named');

done_testing;
