#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Call-graph samples: the hot function holds the samples, with the line it
# runs; C code sits between the Lua frames that call it and that it calls
# back, in that order; traces keep the Lua stack under them.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

my $cmodpath = $ENV{LJPROF_BUILD_DIR} . '/test/?.so';

# Samples whose stack matches $re, and all samples.
sub count_matching {
  my ($stacks, $re) = @_;
  my ($n, $all) = (0, 0);
  while (my ($k, $c) = each %$stacks) {
    $all += $c;
    $n += $c if $k =~ $re;
  }
  return ($n, $all);
}

for my $jit ('off', 'on') {
  my $bin = scratch() . "/hot-$jit.bin";
  my $run = run_lua(<<"LUA", timeout => 120);
jit.$jit()
local function cold(n) local x = 0 for i = 1, n do x = x + i end return x end
local function hot(n)
  local x = 0
  for i = 1, n do x = x + i % 7 end
  return x
end
assert(misc.sysprof.start({ mode = "C", interval = 1, path = "$bin" }))
while misc.sysprof.report().samples < 1000 do
  hot(200000); cold(10000) end
assert(misc.sysprof.stop())
LUA
  is($run->{rc}, 0, "JIT $jit: payload ran") or diag $run->{err};
  my ($stacks, $rc) = collapsed($bin);
  is($rc, 0, "JIT $jit: the stream reads back complete");
  my $src = quotemeta('@' . $run->{script});
  # JIT off: the loop line; JIT on: the trace that runs it.
  my $top = $jit eq 'off' ? qr/;$src:5(;[^@]*)?$/ : qr/;(TRACE \[\d+\] )?$src:[345](;[^@]*)?$/;
  my ($n, $all) = count_matching($stacks, $top);
  cmp_ok($all, '>=', 50, "JIT $jit: enough samples ($all)");
  cmp_ok($n, '>', 0.7 * $all, "JIT $jit: hot()'s loop holds most samples ($n of $all)");
  my ($under, undef) = count_matching($stacks, qr/(^|;)main;.*;lua_pcall;$src:10;$src:[345]/);
  cmp_ok($under, '>', 0.7 * $all, "JIT $jit: from main through lua_pcall and the calling line 10 ($under)");
  if ($jit eq 'on') {
    my ($traced) = count_matching($stacks, qr/;$src:[345];TRACE \[\d+\] $src:5(;|$)/);
    cmp_ok($traced, '>', 0.5 * $all, "JIT on: samples in the trace name it and keep hot() under it ($traced)");
  }
}

{ # Lua -> C function -> lua_call -> Lua: nested in that order
  my $bin = scratch() . '/cmod.bin';
  my $run = run_lua(<<"LUA", timeout => 120);
package.cpath = "$cmodpath;" .. package.cpath
local cmod = require("cmod")
jit.off()
local function callee(n)
  local x = 0
  for i = 1, n do x = x + i % 7 end
  return x
end
local function caller()
  while misc.sysprof.report().samples < 1000 do
    cmod.call(callee, 100000) end
end
assert(misc.sysprof.start({ mode = "C", interval = 1, path = "$bin" }))
caller()
assert(misc.sysprof.stop())
LUA
  is($run->{rc}, 0, 'C module: payload ran') or diag $run->{err};
  my ($stacks) = collapsed($bin);
  my $src = quotemeta('@' . $run->{script});
  my ($n, $all) = count_matching($stacks, qr/;$src:14;$src:11;cmod_call;lua_call;$src:6(;|$)/);
  cmp_ok($n, '>', 0.6 * $all, "caller line 11 ; cmod_call ; lua_call ; callee line 6 ($n of $all)");
  my ($wrong) = count_matching($stacks, qr/$src:6.*cmod_call/);
  is($wrong, 0, 'the callee never appears outside (before) the C function');
}

{ # coroutines and a fast function on top
  my $bin = scratch() . '/co.bin';
  my $run = run_lua(<<"LUA", timeout => 120);
jit.off()
local co = coroutine.wrap(function()
  while true do
    for i = 1, 20000 do local _ = next({ 1 }) end
    coroutine.yield()
  end
end)
assert(misc.sysprof.start({ mode = "C", interval = 1, path = "$bin" }))
while misc.sysprof.report().samples < 1000 do
  co() end
assert(misc.sysprof.stop())
LUA
  is($run->{rc}, 0, 'coroutines: payload ran') or diag $run->{err};
  my ($stacks) = collapsed($bin);
  my $src = quotemeta('@' . $run->{script});
  my ($n, $all) = count_matching($stacks, qr/;$src:10;[^;]*;$src:4(;|$)/);
  cmp_ok($n, '>', 0.5 * $all, "the coroutine's frames sit on the resuming line's, through the resume ($n of $all)");
  my ($ff) = count_matching($stacks, qr/;$src:4;next(;|$)/);
  cmp_ok($ff, '>', 0, "a fast function on top is named ($ff samples in next)");
}

done_testing;
