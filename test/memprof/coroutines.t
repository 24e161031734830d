#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Coroutines: the coroutine that allocates owns the event, a stack that
# grows while profiled is moved safely (and charged as internal), and
# frees are charged where they happen.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

my $bin = scratch() . '/co.bin';
my $run = run_lua(<<"LUA");
jit.off()
collectgarbage("stop")
assert(misc.memprof.start("$bin"))
local function deep(n)
  if n == 0 then return {} end
  local a, b, c, d, e, f, g, h = n, n, n, n, n, n, n, n
  return deep(n - 1), a, b, c, d, e, f, g, h
end
local co = coroutine.wrap(function()
  for i = 1, 3 do
    local t = {}
    coroutine.yield(deep(5000))
  end
end)
local got = { 0, 0, 0 }
for i = 1, 3 do got[i] = co() end
assert(misc.memprof.stop())
LUA
is($run->{rc}, 0, 'payload ran: no crash while stacks moved') or diag $run->{err};
my $r = memprof_report($bin);
is($r->{rc}, 0, 'the stream reads back complete') or diag $r->{err};
my $src = '@' . $run->{script};

is(location($r, "$src:5")->{alloc_events}, 3, 'the innermost frame of the coroutine made its 3 tables');
is(location($r, "$src:11")->{alloc_events}, 3, 'the coroutine body made its 3 tables');
is(location($r, "$src:16")->{alloc_events}, 0, 'the resuming line made none of them');
my $int = location($r, 'INTERNAL');
cmp_ok($int->{realloc_events}, '>=', 3, 'the deep recursion grew the coroutine stack: internal reallocations');
is(location($r, "$src:6")->{realloc_events} + location($r, "$src:7")->{realloc_events}, 0,
   'no stack growth was charged to the frames being moved');

# Frees have no coroutine of their own: the one running frees. A hash part
# that grows inside a coroutine frees its old nodes there.
my $fbin = scratch() . '/co-free.bin';
my $frun = run_lua(<<"LUA");
jit.off()
collectgarbage("stop")
assert(misc.memprof.start("$fbin"))
local co = coroutine.wrap(function()
  local h = {}
  for i = 1, 200 do h["k" .. i] = i end
  coroutine.yield(h)
end)
local got = co()
assert(misc.memprof.stop())
LUA
is($frun->{rc}, 0, 'free payload ran') or diag $frun->{err};
my $fr = memprof_report($fbin);
my $fsrc = '@' . $frun->{script};
cmp_ok(location($fr, "$fsrc:6")->{free_events}, '>=', 5,
       'the rehashes inside the coroutine free at its line');
is(location($fr, "$fsrc:9")->{free_events} + location($fr, 'INTERNAL')->{free_events}, 0,
   'none of those frees is charged to the resuming line or to the VM');

done_testing;
