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

# Runs BODY (Lua, after a PROLOGUE run before profiling starts) under
# sigstep: the signal at every EVERY-th of STEPS instructions. Checks the
# run and the stream (UNKNOWN_OK: samples with a frame at "line ?" let
# pass); returns the collapsed report and the script's path.
sub stepped {
  my ($name, $prologue, $body, $steps, $every, $min, $unknown_ok) = @_;
  my $bin = scratch() . "/$name.bin";
  my $script = scratch() . "/$name.lua";
  open my $fh, '>', $script or die $!;
  print $fh <<"LUA";
local ffi = require("ffi")
ffi.cdef("int raise(int sig);")
$prologue
-- Only the signals sigstep delivers: the timer is all but silent.
assert(misc.sysprof.start({ mode = "C", interval = 1e6, clock = "wall", path = "$bin" }))
ffi.C.raise(10)  -- SIGUSR1: ready
$body
local samples = misc.sysprof.report().samples
assert(misc.sysprof.stop())
print("samples " .. samples)
LUA
  close $fh;
  my $out = `'$sigstep' $steps $every '$luajit' '$script' 2>&1`;
  is($? >> 8, 0, "$name: the script survived and finished") or diag $out;
  my ($delivered, $blocked) = $out =~ /delivered (\d+) blocked (\d+)/;
  my ($samples) = $out =~ /samples (\d+)/;
  cmp_ok($delivered || 0, '>=', $min,
         "$name: the handler ran at ${\($delivered // 0)} chosen instructions");
  ok(defined $samples && $samples >= $delivered && $samples <= $delivered + $blocked,
     "$name: every delivery was counted (${\($samples // '?')} samples)");
  my $report = `ljprof report --format=collapsed '$bin' 2>&1`;
  is($? >> 8, 0, "$name: the stream reads back complete");
  # Instruction by instruction: the sampler always knows the line.
  my @stacks = $report =~ /^(.*) \d+$/mg;
  my @zero = grep { /\@[^;]*:0(;|$)/ } @stacks;
  my @unknown = grep { /\(line \?\)/ } @stacks;
  my $nunknown = 0;
  $nunknown += $_ for $report =~ /\(line \?\)[^\n]* (\d+)$/mg;
  is(scalar @zero, 0, "$name: no Lua frame at line 0")
    or diag join "\n", @zero[0 .. ($#zero < 4 ? $#zero : 4)];
  cmp_ok($nunknown, '<=', $unknown_ok // 0,
         "$name: no Lua frame whose line is unknown ($nunknown samples)")
    or diag join "\n", @unknown[0 .. ($#unknown < 4 ? $#unknown : 4)];
  return ($report, $script);
}

# Calls, returns, errors and coroutine switches, JIT on.
my ($report, $script) = stepped('mixed', '', <<'LUA', 30000, 8, 1500);
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
LUA
like($report, qr/\Q$script\E:7/,
     'samples name the functions the signal landed in');

# A vararg function's header moves its base above the frame with its
# link, and its RET0 moves it back down before returning to its caller:
# every instruction of both (every other one, in a loop of odd and even
# lengths), in the interpreter. Then the caller calls C code directly
# (BC_FNEW's lj_func_newL_gc): its frame, not the vararg function's.
($report, $script) = stepped('vararg', 'jit.off()', <<'LUA', 20000, 2, 5000);
local function puts(...)
  local n = select("#", ...)
end
local function work(rounds)
  local s = 0
  for i = 1, rounds do
    puts(i, s)
    local f = function() return i end
    s = s + 1
  end
  return s
end
work(3000)
LUA
like($report, qr/\Q$script\E:19;\@\Q$script\E:14;lj_func_newL_gc/,
     'vararg: a closure made after the vararg call returned is work\'s');
unlike($report, qr/\Q$script\E:1\d;\@\Q$script\E:[789]\b[^;]*;lj_func_newL_gc/,
       'vararg: never the returned vararg function\'s')
  or diag join "\n", grep { /lj_func_newL_gc/ } split /\n/, $report;

# A trace calls the VM's own helpers (lj_vm_next for a pairs loop): the
# interrupted registers are the trace's, not the interpreter's. Returning
# from lj_vm_next, the interpreter's BASE register holds the next index
# (8 to 15 for a table of 14 keys): a frame made from it lies just above
# address 0, and must be refused as one, not read below it.
($report, $script) = stepped('next', <<'PRE', <<'LUA', 20000, 2, 5000);
local t = {}
for i = 1, 14 do t["k" .. i] = i end
local function count(t)
  local n = 0
  for _, v in pairs(t) do n = n + v end
  return n
end
local s = 0
for _ = 1, 2000 do s = s + count(t) end  -- compiled: pairs calls lj_vm_next
PRE
for _ = 1, 3000 do s = s + count(t) end
assert(s == 525000)
LUA
like($report, qr/\Q$script\E:16;\@\Q$script\E:[5-8];TRACE \[\d+\] \@\Q$script\E:7/,
     'next: the loop\'s samples show count\'s frame under the loop\'s trace')
  or diag join "\n", (grep { /TRACE/ } split /\n/, $report)[0 .. 5];

# A guard inside an inlined vararg function fails (its side trace never
# compiled: hotexit): the exit's snapshot holds the vararg frame, whose
# link is its base's delta, not a PC; the walk passes it, as in the
# snapshot of a side trace's head.
# One instruction of lj_vm_exit_interp, between publishing the restored
# base and the state, shows the snapshot's frames above the restored ones
# (the innermost at "line ?"): let one such sample pass.
($report, $script) = stepped('vexit', <<'PRE', <<'LUA', 30000, 2, 5000, 1);
jit.opt.start("hotexit=60000")
local function puts(buf, ...)
  local a, b, c = ...
  buf[1] = a
  if c == 0 then buf[3] = c end
end
local function round(i)
  local buf = {}
  puts(buf, "a", "b", i % 5)
  return { buf, i }
end
local function work(n)
  local s = 0
  for i = 1, n do
    local r = round(i)
    s = s + #r[1]
  end
  return s
end
work(3000)
collectgarbage()  -- No cycle to step through in the window.
PRE
work(3000)
LUA
like($report, qr/:28;\@\Q$script\E:17;\@\Q$script\E:11;\@\Q$script\E:7;TRACE \[\d+\] \@\Q$script\E:16;\[exit\] TRACE \d+ exit/,
     'vexit: exits from the guard in puts show work, round and puts');
unlike($report, qr/\(line \?\);\[exit\]/, 'vexit: never a frame at line ? under an exit');

# The JIT records calls as they happen: the interpreter calls it (a hot
# loop or call, each instruction to record, lj_dispatch_call) through
# lj_vm_cpcall, still in the state of the Lua code, the registers C's; the
# PC it called from is in its C frame. A callee being entered is the
# innermost frame.
# Left: lj_vm_leave_cp restoring the interpreter's C frame after the JIT
# (9 of 65 000 samples here; 545 before the JIT's calls were known).
($report, $script) = stepped('jitcalls', '', <<'LUA', 200000, 3, 20000, 30);
local function leaf(x) return x * 2 end
local function mid(x) return leaf(x) + leaf(x + 1) end
local function top(x) return mid(x) - mid(x - 1) end
local s = 0
for i = 1, 300 do s = s + top(i) end
assert(s == 1200)
LUA
like($report, qr/\Q$script\E:11;\@\Q$script\E:9;\@\Q$script\E:8;\@\Q$script\E:7[ ;]/,
     'jitcalls: leaf under mid under top under the loop');

done_testing;
