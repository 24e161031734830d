#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# The sampler's signal delivered at every few instructions, in a row,
# through calls, returns, fast functions, C functions, coroutines, errors
# and traces: every delivery is handled and counted, nothing crashes, the
# stream reads back, and every Lua frame has its line.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

my $sigstep = "$ENV{LJPROF_BUILD_DIR}/test/sigstep";
my $luajit = "$ENV{LJPROF_BUILD_DIR}/bin/luajit";
plan skip_all => 'sigstep is not built' unless -x $sigstep;
my $probe = `'$sigstep' --probe 2>&1`;
if ($? >> 8 == 77) {
  chomp $probe;
  plan skip_all => "the kernel refuses what sigstep needs: $probe";
}

my $bin = scratch() . '/sigstep.bin';
my $script = scratch() . '/sigstep.lua';
open my $fh, '>', $script or die $!;
print $fh <<"LUA";
local ffi = require("ffi")
ffi.cdef("int raise(int sig);")
-- Only the signals sigstep delivers: the timer is all but silent.
assert(misc.sysprof.start({ mode = "C", interval = 1e6, clock = "wall", path = "$bin" }))
ffi.C.raise(10)  -- SIGUSR1: ready
local function leaf(x) return x % 7 end
local function mid(x) return leaf(x) + #tostring(x) end
local co = coroutine.wrap(function() while true do coroutine.yield(mid(3)) end end)
local s = 0
for i = 1, 3000 do
  s = s + mid(i) + co()
  local ok = pcall(error, "x")
  local t = { i, i + 1 }
  s = s + select("#", unpack(t)) + (next(t) or 0)
  s = s + #string.rep("ab", i % 5)
end
local samples = misc.sysprof.report().samples
assert(misc.sysprof.stop())
print("samples " .. samples)
LUA
close $fh;

my $out = `'$sigstep' 30000 8 '$luajit' '$script' 2>&1`;
my $rc = $? >> 8;
is($rc, 0, 'the script survived and finished') or diag $out;
my ($delivered, $blocked) = $out =~ /delivered (\d+) blocked (\d+)/;
my ($samples) = $out =~ /samples (\d+)/;
cmp_ok($delivered || 0, '>=', 1500, "the handler ran at $delivered chosen instructions ($blocked found it blocked)");
ok(defined $samples && $samples >= $delivered && $samples <= $delivered + $blocked,
   "every delivery was counted ($samples samples)");
my $report = `ljprof report --format=collapsed '$bin' 2>&1`;
is($? >> 8, 0, 'the stream reads back complete');
like($report, qr/\Q$script\E:6/, 'samples name the functions the signal landed in');
# Instruction by instruction through calls, returns, errors and coroutine
# switches: the sampler always knows the line.
my @stacks = $report =~ /^(.*) \d+$/mg;
my @zero = grep { /\@[^;]*:0(;|$)/ } @stacks;
my @unknown = grep { /\(line \?\)/ } @stacks;
is(scalar @zero, 0, 'no Lua frame at line 0') or diag join "\n", @zero[0 .. ($#zero < 4 ? $#zero : 4)];
is(scalar @unknown, 0, 'no Lua frame whose line is unknown')
  or diag join "\n", @unknown[0 .. ($#unknown < 4 ? $#unknown : 4)];

# A trace calls the VM's own helpers (lj_vm_next for a pairs loop): the
# interrupted registers are the trace's, not the interpreter's. Returning
# from lj_vm_next, the interpreter's BASE register holds the next index
# (8 to 15 for a table of 14 keys): a frame made from it lies just above
# address 0, and must be refused as one, not read below it.
my $nbin = scratch() . '/sigstep-next.bin';
my $nscript = scratch() . '/sigstep-next.lua';
open $fh, '>', $nscript or die $!;
print $fh <<"LUA";
local ffi = require("ffi")
ffi.cdef("int raise(int sig);")
local t = {}
for i = 1, 14 do t["k" .. i] = i end
local function count(t)
  local n = 0
  for _, v in pairs(t) do n = n + v end
  return n
end
local s = 0
for _ = 1, 2000 do s = s + count(t) end  -- compiled: pairs calls lj_vm_next
assert(misc.sysprof.start({ mode = "C", interval = 1e6, clock = "wall", path = "$nbin" }))
ffi.C.raise(10)
for _ = 1, 3000 do s = s + count(t) end
local samples = misc.sysprof.report().samples
assert(misc.sysprof.stop())
print("samples " .. samples .. " sum " .. s)
LUA
close $fh;
$out = `'$sigstep' 20000 2 '$luajit' '$nscript' 2>&1`;
is($? >> 8, 0, 'a sample in every other instruction of a pairs loop\'s trace and lj_vm_next: the script finished')
  or diag $out;
like($out, qr/sum 525000/, 'and computed what it computes');
($delivered) = $out =~ /delivered (\d+)/;
cmp_ok($delivered || 0, '>=', 5000, "the handler ran at $delivered instructions");
$report = `ljprof report --format=collapsed '$nbin' 2>&1`;
is($? >> 8, 0, 'that stream reads back complete');
like($report, qr/\Q$nscript\E:14;\@\Q$nscript\E:\d+;TRACE \[\d+\] \@\Q$nscript\E:7/,
     'the loop\'s samples show count\'s frame under the loop\'s trace');

done_testing;
