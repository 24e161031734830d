#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# The interpreter publishes the VM state and base for the samplers only
# while a profile runs (stubs in the dispatch, patch 0016): a profile
# started deep in a call chain, a second one after it, one that outlives
# a memory profile started before it, and calls sent through a call hook
# (lj_dispatch_call, not the stubs) each see the frames that run. JIT
# off: the interpreter's calls and returns are what is tested. Mode L
# names the innermost Lua frame alone.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

# Of [frames, count] pairs: samples whose innermost Lua frames are, from
# the innermost out, exactly @want (frames named "@F:line", the script's
# path written F; mode L has the innermost only), and the samples that
# have a Lua frame.
sub innermost_are {
  my ($stacks, $script, $mode, @want) = @_;
  @want = ($want[0]) if $mode eq 'L';
  my ($n, $lua) = (0, 0);
  for (@$stacks) {
    my ($frames, $count) = @$_;
    my @l = reverse map { s/\Q$script\E/F/r } grep { /^\@/ } @$frames;
    next unless @l;
    $lua += $count;
    $n += $count if @l >= @want && join(';', @l[0 .. $#want]) eq join(';', @want);
  }
  return ($n, $lua);
}

# The stacks of a stream, as sysprof_stacks gives them.
sub stacks_of {
  my ($bin) = @_;
  my ($stacks) = collapsed($bin);
  return [map { [[split /;/], $stacks->{$_}] } keys %$stacks];
}

my $spin = 'local function spin(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end  -- SPIN';

for my $mode ('C', 'L') {
  # -- Started three calls deep, stopped, started again from the top -------
  my $dir = scratch();
  my ($p1, $p2) = ("$dir/deep-$mode.bin", "$dir/top-$mode.bin");
  my $two = <<"LUA";
jit.off()
$spin
local function inner()
  assert(misc.sysprof.start({ mode = "$mode", interval = 1, path = "$p1" }))
  while misc.sysprof.report().samples < 500 do spin(5000) end  -- INNER
  assert(misc.sysprof.stop())
end
local function outer() inner() end  -- OUTER
outer()  -- FIRST
local function other() local x = spin(5000) return x end  -- OTHER
assert(misc.sysprof.start({ mode = "$mode", interval = 1, path = "$p2" }))
while misc.sysprof.report().samples < 500 do other() end  -- SECOND
assert(misc.sysprof.stop())
LUA
  my $run = run_lua($two, timeout => 120);
  is($run->{rc}, 0, "mode $mode: two profiles ran") or diag($run->{err});
  my %l = map { $_ => line_of($two, "-- $_") } qw(SPIN INNER OUTER FIRST OTHER SECOND);
  my ($n, $all) = innermost_are(stacks_of($p1), $run->{script}, $mode,
                                "\@F:$l{SPIN}", "\@F:$l{INNER}", "\@F:$l{OUTER}", "\@F:$l{FIRST}");
  cmp_ok($n, '>=', 0.9 * $all, "mode $mode: started three calls deep: spin < inner < outer < main in 90% ($n of $all)");
  ($n, $all) = innermost_are(stacks_of($p2), $run->{script}, $mode,
                             "\@F:$l{SPIN}", "\@F:$l{OTHER}", "\@F:$l{SECOND}");
  cmp_ok($n, '>=', 0.9 * $all, "mode $mode: the next profile, from the top: spin < other < main in 90% ($n of $all)");

  # -- A memory profile starts first and stops first -----------------------
  my $mem = <<"LUA";
jit.off()
$spin
local function work() local x = spin(5000) return x end  -- WORK
assert(misc.memprof.start({ path = "/dev/null" }))
assert(misc.sysprof.start({ mode = MODE, interval = 1, path = PATH }))
for _ = 1, 20 do work() end
assert(misc.memprof.stop())
local n = misc.sysprof.report().samples
while misc.sysprof.report().samples < n + 500 do work() end  -- AFTER
assert(misc.sysprof.stop())
LUA
  my ($stacks, undef, $script) = sysprof_stacks("memfirst-$mode", $mem, $mode);
  %l = map { $_ => line_of($mem, "-- $_") } qw(SPIN WORK AFTER);
  ($n, $all) = innermost_are($stacks, $script, $mode, "\@F:$l{SPIN}", "\@F:$l{WORK}", "\@F:$l{AFTER}");
  cmp_ok($n, '>=', 0.85 * $all, "mode $mode: after the memory profile stopped: spin < work < main in 85% ($n of $all)");

  # -- Calls through a call hook: lj_dispatch_call publishes ---------------
  my $hook = <<"LUA";
jit.off()
$spin
local function caller()
  local s = 0
  for _ = 1, 20 do s = s + spin(5000) end  -- CALLER
  return s
end
debug.sethook(function() end, "c")
assert(misc.sysprof.start({ mode = MODE, interval = 1, path = PATH }))
while misc.sysprof.report().samples < 500 do caller() end  -- LOOP
assert(misc.sysprof.stop())
debug.sethook()
LUA
  ($stacks, undef, $script) = sysprof_stacks("hook-$mode", $hook, $mode);
  %l = map { $_ => line_of($hook, "-- $_") } qw(SPIN CALLER LOOP);
  ($n, $all) = innermost_are($stacks, $script, $mode, "\@F:$l{SPIN}", "\@F:$l{CALLER}", "\@F:$l{LOOP}");
  cmp_ok($n, '>=', 0.85 * $all, "mode $mode: under a call hook: spin < caller < main in 85% ($n of $all)");
}

done_testing();
