#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Samples taken while the JIT works on the program: in a trace exit, in
# the compiler, in a flush of every trace. Each keeps the Lua line it is
# for (the exit's line, the line being compiled, the line that flushes),
# never "line ?", and a whole native stack in the order it was called:
# the host (main, lua_pcall) outermost, then the Lua frames, then the
# trace that exits and the JIT's own code, innermost.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

plan skip_all => 'the JIT is not compiled in'
  unless `luajit -e 'io.write(jit and jit.status() and 1 or 0)'` eq '1';

# Runs $code (PATH and MODE filled in); the collapsed stacks as
# [frames, count] pairs, frames outermost first, and the script's name.
sub profile {
  my ($name) = @_;
  my ($stacks, undef, $script, $rc) = sysprof_stacks(@_);
  is($rc, 0, "$name: the stream reads back complete");
  return ($stacks, '@' . $script);
}

sub has { my ($f, $name) = @_; return scalar grep { $_ eq $name } @$f }
sub unknown { my ($f) = @_; return scalar grep { /\(line \?\)$/ } @$f }

# Index of the first frame matching $re, or -1.
sub index_of {
  my ($f, $re) = @_;
  for my $i (0 .. $#$f) { return $i if $f->[$i] =~ $re }
  return -1;
}

# From the program's entry: main, lua_pcall, the main chunk, in order.
sub whole {
  my ($f, $src) = @_;
  my ($m, $p, $l) = (index_of($f, qr/^main$/), index_of($f, qr/^lua_pcall$/),
                     index_of($f, qr/^\Q$src\E:/));
  return $m >= 0 && $m < $p && $p < $l;
}

# -- A trace that exits on every other iteration ----------------------------

# hotexit above 255 (a snapshot's count saturates there): the exit never
# gets a side trace and goes through the exit handler every time.
my $exits = <<'LUA';
jit.opt.start("hotexit=1000")
local function f(t, i)
  local x = t[i]
  if x > 0 then return x end
  return -x                                   -- line 5: the exit resumes
end
local t = {}
for i = 1, 100 do t[i] = (i % 2 == 0) and i or -i end
local s = 0
assert(misc.sysprof.start({ mode = MODE, interval = 1, path = PATH }))
while misc.sysprof.report().samples < 1500 do
  for i = 1, 100000 do
    s = s + f(t, i % 100 + 1)                 -- line 13
  end
end
assert(misc.sysprof.stop())
LUA

{
  my ($stacks, $src) = profile('exits', $exits, 'C');
  my $inexit = sub { has($_[0], 'lj_trace_exit') };
  my ($n, $all) = count_stacks($stacks, $inexit);
  cmp_ok($n, '>=', 0.1 * $all, "exits: many samples in lj_trace_exit ($n of $all)");
  my ($unk) = count_stacks($stacks, sub { $inexit->($_[0]) && unknown($_[0]) });
  is($unk, 0, 'exits: no sample in an exit has a Lua frame at "line ?"');
  # host ... lua_pcall ; line 13 ; f at the exit ; the trace ; the reader's
  # [exit] frame naming that trace and its exit ; the exit handler.
  my $order = qr/(^|;)main;(.*;)?lua_pcall;\Q$src\E:13;\Q$src\E:[45];TRACE \[(\d+)\] \Q$src\E:\d+;\[exit\] TRACE \3 exit \d+;lj_vm_exit_handler;lj_trace_exit(;|$)/;
  my ($right) = count_stacks($stacks, sub { $inexit->($_[0]) && join(';', @{ $_[0] }) =~ $order });
  cmp_ok($right, '>=', 0.99 * $n, "exits: from main through the exit's line and the trace to lj_trace_exit ($right of $n)");
  my ($restore) = count_stacks($stacks, sub { join(';', @{ $_[0] }) =~ /;lj_trace_exit;trace_exit_cp;lj_snap_restore(;|$)/ });
  cmp_ok($restore, '>', 0, "exits: the snapshot restore sits above lj_trace_exit ($restore)");
  # On OpenResty's luajit2, 0.5-1% of the samples were once in state LFUNC
  # with the main chunk at "line ?" and no native frame: machine code of a
  # trace run before the trace stores its number (lj_profwalk_state now
  # names the trace from the PC).
  my ($lunk, $lall) = count_stacks($stacks, \&unknown);
  cmp_ok($lunk, '<=', 0.005 * $lall, "exits: line unknown in at most 0.5% of all samples ($lunk)");
  my ($entry) = count_stacks($stacks, sub { $_[0][0] eq '_start' || whole($_[0], $src) });
  cmp_ok($entry, '>=', 0.995 * $all, "exits: 99.5% of stacks reach the program's entry ($entry of $all)");
}

# Mode L: the one Lua frame of a sample in an exit is the exit's line,
# under the trace that exits.
{
  my ($stacks, $src) = profile('exits-leaf', $exits, 'L');
  my ($n) = count_stacks($stacks, sub { has($_[0], 'lj_snap_restore') || has($_[0], 'lj_trace_exit') });
  my ($right) = count_stacks($stacks, sub {
    (has($_[0], 'lj_snap_restore') || has($_[0], 'lj_trace_exit')) &&
      join(';', @{ $_[0] }) =~ /(^|;)\Q$src\E:[45];TRACE \[\d+\]/ });
  cmp_ok($n, '>', 0, "exits, mode L: samples in the exit ($n)");
  cmp_ok($right, '>=', 0.99 * $n, "exits, mode L: the exit's line under its trace ($right of $n)");
}

# -- jit.flush() in a loop: the compiler and the flush ----------------------

my $flush = <<'LUA';
local function work(n) local x = 0 for i = 1, n do x = x + i % 3 end return x end
local s = 0
assert(misc.sysprof.start({ mode = MODE, interval = 1, path = PATH }))
while misc.sysprof.report().samples < 1500 do  -- line 4: the loop's trace starts
  s = s + work(300)                           -- line 5
  jit.flush()                                 -- line 6
end
assert(misc.sysprof.stop())
LUA

{
  my ($stacks, $src) = profile('flush', $flush, 'C');
  my (undef, $all) = count_stacks($stacks, sub { 1 });
  my $flushing = sub { has($_[0], 'lj_trace_flushall') };
  my ($n) = count_stacks($stacks, $flushing);
  cmp_ok($n, '>', 0.02 * $all, "flush: samples in lj_trace_flushall ($n of $all)");
  my ($right) = count_stacks($stacks, sub {
    $flushing->($_[0]) && whole($_[0], $src) &&
      join(';', @{ $_[0] }) =~ /;lua_pcall;\Q$src\E:6;jit\.flush;.*lj_trace_flushall/ });
  cmp_ok($right, '>=', 0.99 * $n, "flush: from main through line 6 and jit.flush ($right of $n)");

  # The compiler runs on the interpreter's stack, from its hot counter or
  # its recording hook: the loop's Lua frames, then the JIT's C code. A
  # trace started in the main chunk's loop records line 5's call of work()
  # before work()'s frame exists: line 5 innermost is right there; it
  # starts at the loop's line 4, where its hot counter ran out. Its last
  # samples, where the compiler puts the interpreter's dispatch back, keep
  # these frames too (patch 0014: they lost them in state INTERP).
  my $compiling = sub { has($_[0], 'trace_state') };
  my ($c) = count_stacks($stacks, $compiling);
  cmp_ok($c, '>', 0.1 * $all, "compiler: samples in trace_state ($c of $all)");
  my ($cright) = count_stacks($stacks, sub {
    my $f = $_[0];
    return 0 unless $compiling->($f) && whole($f, $src);
    my $lua = index_of($f, qr/^\Q$src\E:1$/);
    $lua = index_of($f, qr/^\Q$src\E:[45]$/) if $lua < 0;
    my $jit = index_of($f, qr/^(lj_trace_hot|lj_trace_ins|lj_dispatch_ins|lj_dispatch_call)$/);
    return join(';', @$f) =~ /;lua_pcall;(\Q$src\E:4;|\Q$src\E:5;(\Q$src\E:1;)?)/ &&
      $lua >= 0 && $jit > $lua && $jit < index_of($f, qr/^trace_state$/);
  });
  {
    # Under qemu-aarch64 a CI run gave 185 of 189 (not yet studied: qemu
    # delivers signals where translated blocks end). Counted, not hidden.
    local $TODO = $ENV{LJPROF_CROSS} ? 'ARM64 under qemu: a few compiler samples out of order' : undef;
    cmp_ok($cright, '>=', 0.99 * $c, "compiler: main, line 4 or 5, work()'s loop, then the JIT's entry and trace_state ($cright of $c)");
  }
  my ($unk) = count_stacks($stacks, \&unknown);
  cmp_ok($unk, '<=', 0.005 * $all, "flush: line unknown in at most 0.5% of all samples ($unk)");
  # Most of this run compiles: the few instructions where the compiler's
  # protected call builds or leaves its C frame, or where the state says
  # INTERP (no Lua frames), weigh more than in a real program.
  my ($entry) = count_stacks($stacks, sub { whole($_[0], $src) });
  cmp_ok($entry, '>=', 0.98 * $all, "flush: 98% of stacks reach the program's entry through the main chunk ($entry of $all)");
}

done_testing;
