#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Every frame true where a trace stitches to a function it cannot compile
# (string.find with a pattern): the interpreter calls it and comes back
# through a continuation. A fast or C function is named only while its
# own frame is live (not once it has returned, not while the VM is yet to
# enter it), and the Lua frame under a trace that has left has its line.
# Issue #40's shapes, from dkjson's decoder and encoder, on payloads of
# our own; the JIT on and off.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

my $has_jit = `luajit -e 'io.write(jit and jit.status() and 1 or 0)'` eq '1';
my @jit = $has_jit ? ('on', 'off') : ('off');

# Runs $code with JIT (on, off), PATH and MODE filled in; the collapsed
# stacks as [frames, count] pairs, frames outermost first, and '@script'.
sub profile {
  my ($name, $code, $jit) = @_;
  $code =~ s/JIT/jit.$jit()/;
  my ($stacks, undef, $script, $rc) = sysprof_stacks($name, $code, 'C');
  is($rc, 0, "$name: the stream reads back complete");
  return ($stacks, '@' . $script);
}

sub unknown { my ($f) = @_; return scalar grep { /\(line \?\)$/ } @$f }

# At most 0.5% of the samples with a line unknown (the gap `left` was made
# for took 2.5%); the first few shown. OpenResty's tree has a few of
# esc()'s samples at "line ?", entered by lua_call from string.gsub with
# the JIT off: 0 or 1 of 2000 on an idle machine, 3 once under CI's load,
# past the 0.1% this took before.
sub lines_known {
  my ($name, $stacks, $all) = @_;
  my @lost;
  my ($u) = count_stacks($stacks, sub {
    my $bad = unknown($_[0]);
    push @lost, join(';', @{$_[0]}) if $bad;
    return $bad });
  cmp_ok($u, '<=', 0.005 * $all, "$name: line unknown in at most 0.5% ($u of $all)")
    or diag(join "\n", @lost[0 .. ($#lost < 4 ? $#lost : 4)]);
}

# Does frame $a come right before (outside of) frame $b, both matching?
sub adjacent {
  my ($f, $a, $b) = @_;
  for my $i (0 .. $#$f - 1) {
    return 1 if $f->[$i] =~ $a && $f->[$i + 1] =~ $b;
  }
  return 0;
}

# Samples until the profile has $n of them (a generous deadline: a slow
# machine only takes longer).
my $loop = <<'LUA';
local t0 = os.clock()
assert(misc.sysprof.start({ mode = MODE, interval = 1, path = PATH }))
while misc.sysprof.report().samples < 2000 and os.clock() - t0 < 60 do
  BODY
end
assert(misc.sysprof.stop())
LUA

# -- A fast function that returned through a continuation -------------------

# The trace through quote() stitches at string.find (a pattern: not
# compiled); the trace that would go on after it aborts at once (FNEW,
# not compiled), which blacklists the stitch: every call returns from
# string.find through the continuation into the interpreter, which makes
# the closure (lj_func_newL_gc) and concatenates (lj_meta_cat) in quote.
# Checked by hand with -jdump: traces "stop -> stitch", then "abort ...
# NYI: bytecode FNEW"; before the VM published its base on that return,
# 5% of the samples had string.find above quote's allocations.
my $returned = <<'LUA' . $loop;
JIT
local strfind = string.find
local function quote(v)
  local hit = strfind(v, "[\"\\]")
  local f = function() return hit end            -- line 5: FNEW
  return "\"" .. v .. "\"" .. (f() and "!" or "")
end
local words, n = {}, 0
for i = 1, 50 do words[i] = ("word %d "):format(i):rep(i % 7 + 1) end
LUA
$returned =~ s/BODY/for i = 1, #words do n = n + #quote(words[i]) end/;

for my $jit (@jit) {
  my ($stacks, $src) = profile("returned-$jit", $returned, $jit);
  my ($closure, $all) = count_stacks($stacks, sub {
    adjacent($_[0], qr/^\Q$src\E:5$/, qr/^lj_func_newL/) });
  cmp_ok($closure, '>=', 10, "returned, JIT $jit: samples in line 5's closure ($closure of $all)");
  my @stale;
  my ($n) = count_stacks($stacks, sub {
    my $bad = adjacent($_[0], qr/^string\.find$/, qr/^lj_(func_newL|meta_cat)/);
    push @stale, join(';', @{$_[0]}) if $bad;
    return $bad });
  is($n, 0, "returned, JIT $jit: string.find is never named once it returned")
    or diag(join "\n", @stale[0 .. ($#stale < 4 ? $#stale : 4)]);
  my ($u) = count_stacks($stacks, sub { unknown($_[0]) });
  cmp_ok($u, '<=', 0.001 * $all, "returned, JIT $jit: line unknown in at most 0.1% ($u of $all)");
}

# -- A trace that left at a stitch ------------------------------------------

# fsub() is dkjson's: string.find, then string.gsub in tail position. The
# trace that starts after fsub's string.find (stitched) returns below its
# start into quote() and stitches again at the next string.find: it
# leaves through lj_vm_exit_interp, the state still the trace's, the
# interpreter's BASE that of string.find's frame, which the VM has yet to
# enter. Checked by hand with -jdump: "start N/stitch", RETF, "stop ->
# stitch"; before the walk knew that frame, 2.5% of the samples had
# quote() at "line ?" under the trace.
my $left = <<'LUA' . $loop;
JIT
local strfind, gsub = string.find, string.gsub
local function esc(c) return "\\" .. c end
local function fsub(str, pat, repl)
  if strfind(str, pat) then return gsub(str, pat, repl) end
  return str
end
local function quote(v)
  v = fsub(v, "[%z\1-\31\"\\]", esc)
  if strfind(v, "[\194\216]") then v = fsub(v, "\194[\128-\159]", esc) end
  return "\"" .. v .. "\""
end
local words, n = {}, 0
for i = 1, 50 do words[i] = ("word%d"):format(i) .. (i % 5 == 0 and "\n" or "") end
LUA
$left =~ s/BODY/for i = 1, #words do n = n + #quote(words[i]) end/;

for my $jit (@jit) {
  my ($stacks, $src) = profile("left-$jit", $left, $jit);
  my ($q, $all) = count_stacks($stacks, sub { grep { /^\Q$src\E:(9|10|11)$/ } @{$_[0]} });
  cmp_ok($q, '>=', 0.3 * $all, "left, JIT $jit: quote's lines in the samples ($q of $all)");
  lines_known("left, JIT $jit", $stacks, $all);
}

# -- A tail call inside a trace ---------------------------------------------

# dkjson's scanvalue(): the whitespace loop's trace exits at a word; the
# side trace from that exit returns below its start into scanvalue(),
# tail-calls scanstring() and allocates its table (lj_tab_new1) from the
# trace. The trace has not written scanstring() to the frame's slot,
# which still holds scanvalue(): the walk takes the function from the
# trace's map. Checked by hand with -jv: "(1/3) ... -> 1" and the stacks
# under it; before, the frame was scanvalue's at "line ?".
my $tail = <<'LUA' . $loop;
JIT
local byte, sub = string.byte, string.sub
local function scanwhite(s, pos)
  while true do
    if byte(s, pos) ~= 32 then return pos end
    pos = pos + 1
  end
end
local function scanstring(s, pos)
  local buf = { sub(s, pos, pos + 3) }            -- line 10: TNEW
  return buf, pos + 4
end
local function scanvalue(s, pos)
  pos = scanwhite(s, pos)
  return scanstring(s, pos)
end
local s, n = ((" "):rep(12) .. "word"):rep(100), 0
LUA
$tail =~ s/BODY/for _ = 1, 20 do
    local pos, t = 1
    while pos < #s - 8 do t, pos = scanvalue(s, pos); n = n + #t[1] end
  end/;

for my $jit (@jit) {
  my ($stacks, $src) = profile("tail-$jit", $tail, $jit);
  my (@wrong, $right);
  my ($new, $all) = count_stacks($stacks, sub {
    my @f = @{$_[0]};
    my ($i) = grep { $f[$_] =~ /^lj_tab_new/ } 0 .. $#f;
    return 0 unless defined $i && !grep { /^sysprof_report$/ } @f;
    my ($lua) = grep { /^\@/ } reverse @f[0 .. $i];
    push @wrong, join(';', @f) unless defined $lua && $lua eq "$src:10";
    return 1 });
  ($right) = count_stacks($stacks, sub {
    my @f = @{$_[0]};
    my ($i) = grep { $f[$_] =~ /^lj_tab_new/ } 0 .. $#f;
    return 0 unless defined $i && !grep { /^sysprof_report$/ } @f;
    my ($lua) = grep { /^\@/ } reverse @f[0 .. $i];
    return defined $lua && $lua eq "$src:10" });
  cmp_ok($new, '>=', 10, "tail, JIT $jit: samples in the table's allocation ($new of $all)");
  {
    # ARM64 (qemu): traces of other shapes, 89 of 452 right, the rest
    # under scanwhite's line 4 or scanstring's header (not yet studied).
    local $TODO = $ENV{LJPROF_CROSS} && $jit eq 'on' ?
      'ARM64: allocations from the trace at other lines' : undef;
    is($right // 0, $new, "tail, JIT $jit: each of them under line 10")
      or diag(join "\n", @wrong[0 .. ($#wrong < 4 ? $#wrong : 4)]);
  }
  lines_known("tail, JIT $jit", $stacks, $all);
}

done_testing();
