#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Modes and lines: leaf mode names a Lua frame and a native frame in every
# sample, mode D only counts, counts add up, and a line that does three
# times the work of its neighbour gets about three times the samples; the
# CPU-time clock samples at the asked rate where perf events are allowed.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Lua;

sub report_json {
  my ($file) = @_;
  my $out = `ljprof report --format=json '$file' 2>/dev/null`;
  return eval { JSON::PP->new->decode($out) };
}

my $payload = <<'LUA';
jit.off()
local function work(n)
  local x = 0
  for i = 1, n do x = x + i % 7 end          -- line 4: 1 part
  for i = 1, 3 * n do x = x + i % 5 end      -- line 5: 3 parts
  return x
end
local ffi = require("ffi")
ffi.cdef[[
struct timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct timespec *ts);
]]
local function cpu_ms()  -- The thread's CPU time, CLOCK_THREAD_CPUTIME_ID.
  local ts = ffi.new("struct timespec")
  ffi.C.clock_gettime(3, ts)
  return tonumber(ts.tv_sec) * 1e3 + tonumber(ts.tv_nsec) / 1e6
end
local t0 = cpu_ms()
assert(misc.sysprof.start({ mode = MODE, interval = 1, path = PATH }))
while misc.sysprof.report().samples < 1000 do work(100000) end
assert(misc.sysprof.stop())
local cpu = cpu_ms() - t0
local r = misc.sysprof.report()  -- the profile's final counts
local sum = 0
for _, n in pairs(r.vmstate) do sum = sum + n end
print(r.samples, sum, cpu)
LUA

for my $mode ('L', 'C', 'D') {
  my $bin = scratch() . "/mode-$mode.bin";
  (my $code = $payload) =~ s/MODE/"$mode"/;
  $code =~ s/PATH/"$bin"/;
  my $run = run_lua($code, timeout => 120);
  is($run->{rc}, 0, "mode $mode: payload ran until it had 1000 samples") or diag $run->{err};
  my ($samples, $sum) = split /\s+/, $run->{out};
  cmp_ok($samples, '>=', 1000, "mode $mode: report() counted $samples samples");
  is($sum, $samples, "mode $mode: the counts by VM state add up to the samples");
  my $doc = report_json($bin);
  ok($doc, "mode $mode: the stream reads back") or next;
  is($doc->{samples}, $samples, "mode $mode: the stream's stats say the same");
  my $src = '@' . $run->{script};
  if ($mode eq 'D') {
    is(scalar @{ $doc->{stacks} }, 0, 'mode D: no stacks, only counts');
    next;
  }
  my ($lua, $native, $all) = (0, 0, 0);
  my %line;
  for my $s (@{ $doc->{stacks} }) {
    my @f = @{ $s->{frames} };
    $all += $s->{count};
    $lua += $s->{count} if grep { /^\@/ } @f;
    $native += $s->{count} if grep { !/^[\@\[]/ && !/^TRACE/ } @f;
    for my $f (@f) { $line{$1} += $s->{count} if $f =~ /^\Q$src\E:(\d+)$/ }
  }
  cmp_ok($lua, '>=', 0.95 * $all, "mode $mode: a Lua frame in (nearly) every sample ($lua of $all)");
  cmp_ok($native, '>=', 0.95 * $all, "mode $mode: a native frame in (nearly) every sample ($native of $all)");
  my ($l4, $l5) = ($line{4} || 0, $line{5} || 0);
  cmp_ok($l5, '>', 2 * $l4, "mode $mode: line 5 (3 parts of work) has over twice the samples of line 4 ($l5 vs $l4)");
  cmp_ok($l4, '>', 0, "mode $mode: line 4 has samples too");
}

# The default clock is the thread's CPU time. Where the kernel allows perf
# events it is a perf cpu-clock event, which fires at the asked rate (a
# POSIX timer on the CPU-time clock fires on the kernel tick, about 4 ms
# here): 1 ms asked gives a sample for each 1.5 ms at most of the CPU time
# the thread had (its own clock, read by the payload), where the timer
# gave one for each 4 ms. The stream says which clock ran.
{
  my $bin = scratch() . '/clock.bin';
  (my $code = $payload) =~ s/MODE/"D"/;
  $code =~ s/PATH/"$bin"/;
  my $run = run_lua($code, timeout => 120);
  is($run->{rc}, 0, 'default clock: payload ran') or diag $run->{err};
  my $doc = report_json($bin);
  my $clock = $doc ? $doc->{clock} : '';
  like($clock, qr/^thread-cpu(-perf)?$/, "default clock: the thread's CPU time ($clock)");
  SKIP: {
    skip 'perf events refused here: the POSIX timer drives the CPU-time clock', 1
      unless $clock eq 'thread-cpu-perf';
    my ($samples, undef, $cpu_ms) = split /\s+/, $run->{out};
    cmp_ok($samples, '>=', $cpu_ms / 1.5,
           sprintf 'perf cpu-clock: 1 ms asked, a sample for each 1.5 ms of the thread\'s CPU time at most (%d in %.0f ms)',
           $samples, $cpu_ms);
  }
}

done_testing;
