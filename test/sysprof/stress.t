#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Thousands of samples at 1 ms through everything that moves stacks: the
# collector, coroutines, errors unwinding, FFI callbacks, fast functions on
# top, traces. No crash, complete streams, counts that add up: on the VM,
# and again on its AddressSanitizer build when there is one; in our stream
# and in the reference's (v2). Each run goes on until it has its samples
# (LJPROF_STRESS_SAMPLES, 2000), so a slow or loaded machine changes
# nothing but the wall clock.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Lua;

my $asan = "$ENV{LJPROF_BUILD_DIR}/asan/bin/luajit";
my @vms = (['luajit', 'VM'], -x $asan ? ([$asan, 'ASan VM']) : ());
$ENV{ASAN_OPTIONS} = 'detect_leaks=0:abort_on_error=1';
my $want = $ENV{LJPROF_STRESS_SAMPLES} || 2000;
my $payload = <<'LUA';
local ffi = require("ffi")
ffi.cdef[[
typedef int (*cmp_t)(const void *, const void *);
void qsort(void *base, size_t n, size_t size, cmp_t cmp);
]]
assert(misc.sysprof.start({ mode = MODE, interval = 1, clock = CLOCK, path = PATH, format = FORMAT }))
local co = coroutine.wrap(function()
  while true do
    local t = {}
    for i = 1, 500 do t[i] = { i, tostring(i) } end
    coroutine.yield(#t)
  end
end)
local cb = ffi.cast("cmp_t", function(a, b)
  local x, y = ffi.cast("int *", a)[0], ffi.cast("int *", b)[0]
  return x < y and -1 or (x > y and 1 or 0)
end)
local arr = ffi.new("int[?]", 500)
local function deep(n) if n == 0 then error("bottom") end return deep(n - 1) end
local rounds = 0
while misc.sysprof.report().samples < SAMPLES do
  co()
  for i = 0, 499 do arr[i] = (i * 7919) % 503 end
  ffi.C.qsort(arr, 500, 4, cb)
  pcall(deep, 50)
  pcall(function() local x = nil; return x.y end)
  for i = 1, 200 do local _ = next({ 1 }) end
  collectgarbage("step", 50)
  rounds = rounds + 1
end
assert(misc.sysprof.stop())
local r = misc.sysprof.report()  -- the profile's final counts
local sum = 0
for _, n in pairs(r.vmstate) do sum = sum + n end
print(r.samples, sum, rounds)
LUA

for my $vm (@vms) {
  my ($luajit, $name) = @$vm;
  for my $case (['C', 'cpu', 'v3'], ['L', 'cpu', 'v3'], ['C', 'wall', 'v3'], ['C', 'wall', 'v2']) {
    my ($mode, $clock, $format) = @$case;
    my $what = "$name, mode $mode, $clock clock, $format";
    my $bin = scratch() . "/stress-$mode-$clock-$format.bin";
    my $code = $payload;
    $code =~ s/MODE/"$mode"/; $code =~ s/CLOCK/"$clock"/; $code =~ s/PATH/"$bin"/;
    $code =~ s/FORMAT/"$format"/;
    $code =~ s/SAMPLES/$want/;
    my $run = run_lua($code, luajit => $luajit, timeout => 300);
    is($run->{rc}, 0, "$what: ran to the end") or diag $run->{timedout} ? 'killed after its deadline' : $run->{err};
    my ($samples, $sum, $rounds) = split /\s+/, $run->{out};
    cmp_ok($samples || 0, '>=', $want, "$what: $samples samples over $rounds rounds");
    is($sum, $samples, "$what: counts add up");
    my $doc = eval { JSON::PP->new->decode(scalar `ljprof report --format=json '$bin' 2>/dev/null`) };
    ok($doc && !$doc->{error}, "$what: the stream reads back complete");
    # Every sample has its stack, or is counted as dropped (the ring was
    # full, or the VM's thread was writing a symbol into it); v2 has no
    # count of those.
    my $stacks = 0;
    $stacks += $_->{count} for @{ $doc ? $doc->{stacks} : [] };
    if ($format eq 'v2') {
      cmp_ok($stacks, '<=', $samples, "$what: no more stacks than samples ($stacks)");
    } else {
      my $dropped = $doc ? $doc->{dropped} : -1;
      is($stacks + $dropped, $samples, "$what: each sample has its stack or is counted as dropped "
         . "($stacks + $dropped)");
    }
    cmp_ok($stacks, '>=', ($samples || 1) / 2, "$what: most samples have their stacks");
  }
}

done_testing;
