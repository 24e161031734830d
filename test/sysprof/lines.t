#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# The line of every Lua frame is one the program has: where the sample
# lands in C code the interpreter calls directly (libm's pow for `^`), in
# a call or return sequence, or in a collector step taken by a trace, the
# innermost Lua frame names the line that runs, never line 0, and "line
# unknown" stays rare and says so.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Lua;

my $has_jit = `luajit -e 'io.write(jit.status() and 1 or 0)'` eq '1';

# Runs $code (PATH and MODE filled in) and returns the collapsed stacks
# as [frames, count] pairs, frames outermost first, plus the JSON report.
sub profile {
  my ($stacks, $bin, $script) = sysprof_stacks(@_);
  my $doc = eval { JSON::PP->new->decode(scalar `ljprof report --format=json '$bin' 2>/dev/null`) };
  return ($stacks, $doc, $script);
}

# The innermost Lua frame of a stack, or undef.
sub innermost_lua {
  my ($frames) = @_;
  my ($lua) = grep { /^\@/ } reverse @$frames;
  return $lua;
}

# Counts over the stacks: all, line 0, line unknown, innermost at $want.
sub line_counts {
  my ($stacks, $want) = @_;
  my %n = (all => 0, zero => 0, unknown => 0, want => 0);
  for (@$stacks) {
    my ($frames, $count) = @$_;
    $n{all} += $count;
    $n{zero} += $count if grep { /^\@.*:0$/ } @$frames;
    $n{unknown} += $count if grep { /\(line \?\)$/ } @$frames;
    my $lua = innermost_lua($frames);
    $n{want} += $count if defined $lua && $lua eq $want;
  }
  return \%n;
}

# -- `^` calls libm's pow from the interpreter, JIT off ---------------------

my $pow = <<'LUA';
jit.off()
local x = 0
assert(misc.sysprof.start({ mode = MODE, interval = 1, path = PATH }))
while misc.sysprof.report().samples < 1000 do
  for i = 1, 10000 do x = x + (i + 0.5) ^ 1.37 end  -- line 5
end
assert(misc.sysprof.stop())
LUA

for my $mode ('C', 'L') {
  my ($stacks, $doc, $script) = profile("pow-$mode", $pow, $mode);
  my $n = line_counts($stacks, "\@$script:5");
  is($n->{zero}, 0, "pow, mode $mode: no Lua frame at line 0");
  cmp_ok($n->{unknown}, '<=', 0.005 * $n->{all}, "pow, mode $mode: line unknown in at most 0.5% ($n->{unknown} of $n->{all})");
  cmp_ok($n->{want}, '>=', 0.9 * $n->{all}, "pow, mode $mode: the loop's line is innermost in 90% ($n->{want})");
  # Samples in libm: the Lua frame right above the C code is line 5.
  my ($inpow, $right, @wrong) = (0, 0);
  for (@$stacks) {
    my ($frames, $count) = @$_;
    my @f = @$frames;
    # The loop's condition (the profile's report, line 4), and its own start
    # and stop (lines 3 and 7): under qemu a start that reads the symbols
    # of every object takes samples of its own.
    next if grep { /sysprof/ } @f;
    my ($i) = grep { $f[$_] =~ /^\@/ } reverse 0 .. $#f;
    next unless defined $i;
    # Mode C: frames below the innermost Lua one; mode L: the one native
    # frame, outside the interpreter's own code.
    my @c = $mode eq 'C' ? @f[$i + 1 .. $#f] : grep { !/^\@/ } @f;
    next unless @c && $c[0] !~ /^(\@|TRACE|lj_(BC|vm|ff|fff)_)/;
    $inpow += $count;
    if ($f[$i] eq "\@$script:5") { $right += $count }
    else { push @wrong, "$count: @f" }
  }
  cmp_ok($inpow, '>', 10, "pow, mode $mode: samples landed in C code under the loop ($inpow)");
  is($right, $inpow, "pow, mode $mode: each of them names line 5 above the C code")
    or diag(join "\n", @wrong);
  is($doc && $doc->{samples_line_unknown}, $n->{unknown},
     "pow, mode $mode: the report counts the samples with a line unknown");
}

# -- Calls and returns of small functions, JIT off --------------------------

my $calls = <<'LUA';
jit.off()
local function id(v) return v end              -- line 2
local function pair(a, b) return a, b end      -- line 3
local x = 0
assert(misc.sysprof.start({ mode = MODE, interval = 1, path = PATH }))
while misc.sysprof.report().samples < 1000 do
  for i = 1, 10000 do x = x + id(i) + select(2, pair(i, x)) + math.abs(-i) end  -- line 7
end
assert(misc.sysprof.stop())
LUA

{
  my ($stacks, $doc, $script) = profile('calls', $calls, 'C');
  my $n = line_counts($stacks, "\@$script:7");
  cmp_ok($n->{all}, '>=', 100, "calls: samples in the profile ($n->{all})");
  is($n->{zero}, 0, 'calls: no Lua frame at line 0');
  cmp_ok($n->{unknown}, '<=', 0.005 * $n->{all}, "calls: line unknown in at most 0.5% ($n->{unknown} of $n->{all})");
  my $callee = 0;
  for (@$stacks) {
    my ($frames, $count) = @$_;
    my $lua = innermost_lua($frames) // '';
    $callee += $count if $lua =~ /:(2|3)$/;
    # Lines 5 and 9 too: a first start may take over 1 ms (the symbols of
    # every object read), and the timer is armed before start() returns;
    # under qemu a stop may take a sample.
    ok(0, "calls: a sample outside lines 2, 3, 5, 7, 9 and the loop: @$frames")
      if $lua =~ /\Q$script\E:(\d+)/ && $1 !~ /^(2|3|5|6|7|9)$/;
  }
  cmp_ok($n->{want} + $callee, '>=', 0.9 * $n->{all},
         "calls: the loop's line or a callee's is innermost in 90% ($n->{want} + $callee)");
}

# -- A collector step taken by a trace, JIT on ---------------------------------

my $gc = <<'LUA';
local keep = {}
assert(misc.sysprof.start({ mode = MODE, interval = 1, path = PATH }))
while misc.sysprof.report().samples < 1000 do
  for i = 1, 100000 do keep[i % 1000 + 1] = { i, i } end  -- line 4
end
assert(misc.sysprof.stop())
LUA

SKIP: {
  skip 'no JIT in this build', 4 unless $has_jit;
  my ($stacks, $doc, $script) = profile('gc-trace', $gc, 'C');
  my $n = line_counts($stacks, "\@$script:4");
  is($n->{zero}, 0, 'gc under a trace: no Lua frame at line 0');
  cmp_ok($n->{unknown}, '<=', 0.005 * $n->{all}, "gc under a trace: line unknown in at most 0.5% ($n->{unknown} of $n->{all})");
  my ($steps, $named) = (0, 0);
  for (@$stacks) {
    my ($frames, $count) = @$_;
    next unless grep { $_ eq 'lj_gc_step_jit' } @$frames;
    $steps += $count;
    my $s = join ';', @$frames;
    $named += $count if index($s, "\@$script:4;TRACE [") >= 0
                        && $s =~ /;TRACE \[\d+\] [^;]*;lj_gc_step_jit(;|$)/;
  }
  cmp_ok($steps, '>', 5, "gc under a trace: samples in lj_gc_step_jit ($steps)");
  is($named, $steps, 'gc under a trace: each names line 4 and the trace above the collector');
}

# -- Inside traces: the snapshot in force names the line, and the frames
# the trace inlined sit above the line that called them; also when the
# call is by pcall, which the trace inlines too --------------------------

my $inlined = <<'LUA';
local function callee(x)
  if x % 3 == 0 then return math.sqrt(x) * 1.5 end   -- line 2
  return x * 0.5                                       -- line 3
end
local s = 0
assert(misc.sysprof.start({ mode = MODE, interval = 1, path = PATH }))
while misc.sysprof.report().samples < 1000 do
  for i = 1, 1e6 do s = s + CALL end  -- line 8
end
assert(misc.sysprof.stop())
LUA

for my $case (['inlined', 'callee(i)'], ['inlined by pcall', 'select(2, pcall(callee, i))']) {
  my ($name, $call) = @$case;
  (my $code = $inlined) =~ s/CALL/$call/;
  SKIP: {
    skip 'no JIT in this build', 6 unless $has_jit;
    my ($stacks, $doc, $script) = profile($name =~ tr/ /_/r, $code, 'C');
    my ($traced, $callee, $under_call, $unknown) = (0, 0, 0, 0);
    for (@$stacks) {
      my ($frames, $count) = @$_;
      my $st = join ';', @$frames;
      next unless $st =~ /TRACE \[/;
      $traced += $count;
      $unknown += $count if $st =~ /\(line \?\)/;
      next unless $st =~ /\Q$script\E:[23];TRACE/;
      $callee += $count;
      $under_call += $count if index($st, "\@$script:8;\@$script:") >= 0;
    }
    cmp_ok($traced, '>', 100, "$name: most samples are in traces ($traced)");
    is($unknown, 0, "$name: no line unknown in a trace");
    cmp_ok($callee, '>', 0.1 * $traced, "$name: the inlined callee's lines have samples ($callee)");
    is($under_call, $callee, "$name: each sits above the caller's line 8")
      or diag join "\n", grep { /\Q$script\E:[23];TRACE/ && index($_, "\@$script:8;\@$script:") < 0 }
                         map { join(';', @{ $_->[0] }) . " $_->[1]" } @$stacks;
    my $n = line_counts($stacks, '');
    is($n->{zero}, 0, "$name: no Lua frame at line 0");
  }
}

# -- Inside traces, the line each piece of machine code runs: shares of
# lines of very different cost as with the JIT off ----------------------

# Each line's cost is a memset of a known size (8:2:1), so that it is the
# same compiled or interpreted; the middle one runs in an inlined callee.
my $costs = <<'LUA';
local ffi = require("ffi")
ffi.cdef("void *memset(void *s, int c, size_t n);")
local C, buf = ffi.C, ffi.new("uint8_t[1048576]")
local function fill(n)
  C.memset(buf, n, 262144)                                  -- line 5
  return n
end
if arg[1] == "off" then jit.off() end
local s = 0
assert(misc.sysprof.start({ mode = MODE, interval = 1, path = PATH }))
while misc.sysprof.report().samples < 1500 do
  for i = 1, 50 do
    C.memset(buf, i, 1048576)                               -- line 13
    s = s + fill(i)                                         -- line 14
    C.memset(buf, i, 131072)                                -- line 15
  end
end
assert(misc.sysprof.stop())
LUA

# Share of the samples whose innermost Lua frame is at each line.
sub line_shares {
  my ($stacks, $script) = @_;
  my (%n, $all);
  for (@$stacks) {
    my ($frames, $count) = @$_;
    $all += $count;
    my $lua = innermost_lua($frames) // next;
    $n{$1} += $count if $lua =~ /^\@\Q$script\E:(\d+)$/;
  }
  return { map { $_ => 100 * ($n{$_} // 0) / $all } 5, 13, 15 };
}

SKIP: {
  skip 'no JIT in this build', 11 unless $has_jit;
  my %share;
  for my $jit ('on', 'off') {
    (my $code = $costs) =~ s/arg\[1\]/"$jit"/;
    my ($stacks, $doc, $script) = profile("costs-$jit", $code, 'C');
    $share{$jit} = line_shares($stacks, $script);
    next unless $jit eq 'on';
    my ($calls, $under) = (0, 0);
    for (@$stacks) {
      my ($frames, $count) = @$_;
      my $st = join ';', @$frames;
      next unless $st =~ /:5;TRACE \[/;
      $calls += $count;
      $under += $count if index($st, "\@$script:14;\@$script:5;TRACE [") >= 0;
    }
    cmp_ok($calls, '>', 0, "costs, JIT on: the inlined callee's line 5 has samples ($calls)");
    is($under, $calls, "costs, JIT on: each sits right above its call, line 14");
  }
  my ($on, $off) = @share{'on', 'off'};
  my $shares = join ', ', map { sprintf "%d: %.1f%% on, %.1f%% off", $_, $on->{$_}, $off->{$_} } 13, 5, 15;
  cmp_ok($on->{13}, '>', $on->{5}, "costs, JIT on: the costly line ranks first ($shares)");
  cmp_ok($on->{5}, '>', $on->{15}, 'costs, JIT on: then the callee, then the cheap line');
  for my $line (13, 5, 15) {
    cmp_ok(abs($on->{$line} - $off->{$line}), '<=', 10, "costs: line ${line}'s share is within 10 points of the JIT-off one");
  }
  cmp_ok($on->{13} + $on->{5} + $on->{15}, '>=', 90, 'costs, JIT on: the three lines hold 90% of the samples');
}

# -- The issue's loop: libm's sin and cos on one line, an inlined small
# function, a cheap line; side traces; a call the JIT does not compile
# (os.time: the trace stops there, another is stitched after it);
# traces flushed while sampled ------------------------------------------

my $mixed = <<'LUA';
local function small(x)
  return x * 0.5 + 1
end
local a, b, c, s = 0, 0, 0, 0
assert(misc.sysprof.start({ mode = MODE, interval = 1, path = PATH }))
while misc.sysprof.report().samples < 1000 do
  for i = 1, 100000 do
    a = a + math.sin(i) * math.cos(i)                       -- line 8
    c = c + small(i)                                        -- line 9
    if i % 4 == 0 then b = b + math.sqrt(i) * 1.5           -- line 10
    else b = b - math.exp(i % 7) end                        -- line 11
    if i % 1000 == 0 then s = os.time() end                 -- line 12
  end
  if FLUSH then jit.flush() end
end
assert(misc.sysprof.stop())
LUA

SKIP: {
  skip 'no JIT in this build', 10 unless $has_jit;
  for my $flush (0, 1) {
    (my $code = $mixed) =~ s/FLUSH/$flush ? 'true' : 'false'/e;
    my $what = $flush ? 'mixed, flushed each round' : 'mixed';
    my ($stacks, $doc, $script) = profile($flush ? 'mixed-flush' : 'mixed', $code, 'C');
    my (%self, $all, $stray);
    for (@$stacks) {
      my ($frames, $count) = @$_;
      $all += $count;
      my $lua = innermost_lua($frames) // next;
      next unless $lua =~ /^\@\Q$script\E:(\d+)$/;
      $self{$1} += $count;
      # Line 1 is small()'s header: its prologue (FUNCF) when a sample
      # lands as the interpreter enters it, after a flush. Line 16 is
      # where the last exit from the loop's trace leads, and stop() runs.
      $stray .= "$lua " if $1 !~ /^([1-9]|1[0-4]|16)$/;
    }
    my ($top) = sort { $self{$b} <=> $self{$a} } keys %self;
    is($top, 8, "$what: the sin/cos line ranks first (" . join(', ', map { "$_: $self{$_}" } sort { $a <=> $b } keys %self) . ")");
    cmp_ok(($self{10} // 0) + ($self{11} // 0), '>', 0, "$what: the branches of the side trace have samples");
    is($stray, undef, "$what: every line named is one the loop runs");
    my $n = line_counts($stacks, '');
    is($n->{zero}, 0, "$what: no Lua frame at line 0");
    cmp_ok($n->{unknown}, '<=', 0.01 * $n->{all}, "$what: line unknown in at most 1% ($n->{unknown} of $n->{all})");
  }
}

done_testing;
