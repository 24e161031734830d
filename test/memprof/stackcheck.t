#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# The writer finds most of a stack in the last one it walked: it stops its
# walk on a frame of that stack whose link and frames below are unchanged,
# skips the frames the two share from there out, and looks up the others
# in a memo. The AddressSanitizer VM is built with LJ_MEMPROF_CHECKSTACKS:
# there every stack is walked again, whole (native stacks are not: the
# walk from the allocator is the one there is), and looked up frame by
# frame from the root; the VM aborts if the two differ. Frames of every
# kind run under allocations here: recursion past the cap (allocating on
# the way down past it, and at its bottom over and over), varargs,
# metamethods (continuation frames), C calling Lua (table.sort, gsub),
# coroutines, errors and their handlers, tail calls, finalizers, traces,
# fast functions and C growing the stack
# (an event whose stack is being moved), the collector shrinking the
# stack of a coroutine not running; and one function reached through one
# call site from two callers at the same depth, where only the frames
# below the site's caller differ. While such a profile runs the VM marks
# the lowest frame returned from, and the frames below it are not checked:
# a second program pops frames in a trace and by an error, and returns
# up past the cap, and builds trees, a few calls or returns from one stack
# to the next.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

my $asan = "$ENV{LJPROF_BUILD_DIR}/asan/bin/luajit";
plan skip_all => "no ASan VM built with the stack check ($asan): make asan" unless -x $asan;
$ENV{ASAN_OPTIONS} = 'detect_leaks=0:abort_on_error=1';

my $program = <<'LUA';
jit.JIT()
local path, rounds, kind = arg[1], tonumber(arg[2]), arg[3]
local sink = {}
local function leaf(n) local t = {} for i = 1, n do t[i] = i .. "" end return t end
local function rec(d, n) if d == 0 then return leaf(n) end return { rec(d - 1, n) } end
local function vararg(...) local t = { ... } return leaf(select("#", ...)), t end
local mt = { __index = function(t, k) return { k } end,
             __add = function(a, b) return { a, b } end,
             __tostring = function(t) return "obj" .. #t end,
             __call = function(self, x) return leaf(x) end }
local obj = setmetatable({}, mt)
local function metas(i)
  local a, b = obj[i], obj + i
  return obj(3), a, b, tostring(setmetatable({ i }, mt))
end
local function sorter(n)
  local t = {} for i = 1, n do t[i] = n - i end
  table.sort(t, function(a, b) sink[#sink % 64 + 1] = { a } return a < b end)
  return t
end
local function gsubs(i) return (("abc"):rep(i % 7 + 1):gsub("b", function(c) return c .. i end)) end
local function co(n)
  local c = coroutine.wrap(function(a) for i = 1, n do a = coroutine.yield(leaf(a)) end end)
  for i = 1, n do c(i % 5 + 1) end
end
local function failing(i)
  local ok = pcall(function() local t = leaf(3); if i % 2 == 0 then error({ t }) end end)
  xpcall(function() error("x" .. i) end, function(m) return { m, leaf(2) } end)
  return ok
end
local function deep(d) if d == 0 then return leaf(2) end local r = deep(d - 1) return r end
-- Allocating on the way down past the cap: each stack one frame deeper
-- than the last, which the walk stops on; with varargs, two frames a call.
local function down(d) local t = { d } if d > 0 then return down(d - 1), t end return t end
local function vdown(d, ...) local t = { ... } if d > 0 then local r = vdown(d - 1, d, ...) return r end return t end
local function tail(d) if d == 0 then return leaf(1) end return tail(d - 1) end
-- Allocating at the bottom of a stack past the cap, over and over: the
-- walk stops on the last stack, cut as this one is.
local function deeploop(d, k)
  if d == 0 then for i = 1, k do sink[i % 64 + 1] = leaf(1) end return end
  deeploop(d - 1, k)
end
-- Fast functions that grow the stack they run on: the allocator moves it.
-- And a C function that does (test/cmod).
local cmod = require("cmod")
local function grow(n)
  local t = {} for i = 1, n do t[i] = i end
  return select("#", unpack(t)) + #{ ("x"):rep(n):byte(1, -1) } + cmod.grow(n)
end
local function site() return { 1, 2, 3 } end  -- SITE
local function mid() local r = site() return r end  -- MID
local function left() local r = mid() return r end  -- LEFT
local function right() local r = mid() return r end  -- RIGHT
assert(misc.memprof.start({ path = path, stacks = true, native = kind == "native",
                            sample = kind == "sampled" and 256 or nil }))
for i = 1, rounds do
  sink[i % 64 + 1] = rec(i % 12, 3)
  vararg(i, i, i)
  left()  -- CALLL
  right()  -- CALLR
  metas(i)
  if i % 10 == 0 then sorter(20) end
  gsubs(i)
  co(3)
  failing(i)
  if i % 50 == 0 then deep(80); down(100); vdown(70); deeploop(70, 30) end
  if i % 25 == 0 then grow(1000 + 10 * (i % 300)) end
  tail(i % 20)
  if i % 37 == 0 then collectgarbage() end
  if i % 41 == 0 then setmetatable({}, { __gc = function() sink[2] = leaf(2) end }) end
end
collectgarbage()
assert(misc.memprof.stop())
print("done")
LUA
my %l = map { $_ => line_of($program, "-- $_") } qw(SITE MID LEFT RIGHT CALLL CALLR);

# The bytes of the stacks that hold $frames (native frames may come
# before and after them).
sub through {
  my ($st, $frames) = @_;
  my $sum = 0;
  $sum += $st->{$_} for grep { index($_, $frames) >= 0 } keys %$st;
  return $sum;
}

for my $run (['off', 'lua'], ['on', 'lua'], ['on', 'native'], ['on', 'sampled']) {
  my ($jit, $kind) = @$run;
  my $name = "jit $jit, $kind stacks";
  my $bin = scratch() . "/mix-$jit-$kind.bin";
  (my $code = $program) =~ s/JIT/$jit/;
  my $r = run_lua($code, luajit => $asan, args => [$bin, 1000, $kind],
                  timeout => 300);
  ok($r->{rc} == 0 && $r->{signal} == 0 && $r->{err} !~ /memprof: stack node/,
     "$name: every stack the same as looked up from the root") or diag $r->{err};
  like($r->{out}, qr/^done$/m, "$name: the program ran to its end") or diag explain $r;
  my $st = memprof_stacks($bin, $r->{script});
  my $left = through($st, "\@F:$l{CALLL};\@F:$l{LEFT};\@F:$l{MID};\@F:$l{SITE}");
  my $right = through($st, "\@F:$l{CALLR};\@F:$l{RIGHT};\@F:$l{MID};\@F:$l{SITE}");
  ok($left, "$name: the site through the left caller") or diag explain $st;
  if ($kind eq 'lua') {
    is($right, $left, "$name: and as much through the right one");
  } elsif ($kind eq 'native') {
    # The VM's own events (a trace compiled, a collection step) have the
    # stack they run under: a few KB on either side.
    cmp_ok(abs($right - $left), '<', $left / 20, "$name: and as much through the right one, within 5 % ($left and $right)");
  } else {  # Estimates: about 300 samples each.
    cmp_ok(abs($right - $left), '<', $left / 2, "$name: and about as much through the right one ($left and $right)");
  }
  my $rep = memprof_report($bin);
  cmp_ok($rep->{json}{stacks}{truncated_events} // 0, '>=', 6, "$name: recursion past the cap, counted")
    or diag explain $rep->{json}{stacks};
}

# What pops frames without a return it sees lowers the mark too. Two
# patterns, each of a function reached by one chain of calls from two
# lines, where only the frame that line called differs from one event to
# the next, below frames as they were. A trace's returns (asm_retf): the
# loop in J is a trace, its exit to the allocation another, which returns
# to A, B and the main chunk (three RETF) before the other line calls B.
# An error unwinding: EJ allocates then throws to the pcall of one line,
# the next event is through the other's. The traces that return were
# compiled before the profile started, without the mark: they are flushed.
my $popped = <<'LUA';
jit.JIT()
local keep = {}
local function j(n)
  for k = 1, 40 do n = n + k end
  local t = { n }  -- J
  keep[n % 64 + 1] = t
  return t
end
local function a(n) local r = j(n) return r end  -- A
local function b(n) local r = a(n) return r end  -- B
local function ej(n)
  keep[n % 64 + 1] = { n }  -- EJ
  error("unwound")
end
local function ea(n) local r = ej(n) return r end  -- EA
local function eb(n) local r = ea(n) return r end  -- EB
jit.off(ej) jit.off(ea) jit.off(eb)  -- Real frames, for the error to unwind.
local function returns(n)
  for i = 1, n do
    if i % 2 == 0 then
      b(i)  -- CALL1
    else
      b(i)  -- CALL2
    end
  end
end
returns(2000)  -- Its traces, compiled before the profile: flushed at start.
assert(misc.memprof.start({ path = arg[1], stacks = true }))
returns(20000)
for i = 1, 20000 do
  if i % 2 == 0 then
    pcall(eb, i)  -- PCALL1
  else
    pcall(eb, i)  -- PCALL2
  end
end
do  -- Calls and returns a few frames at a time, as alloc_tree makes
    -- trees: the next stack is mostly the last up to a frame, then up to
    -- four frames called from it.
  local function make(d)
    if d == 0 then return {} end  -- LEAF
    return { make(d - 1), make(d - 1) }  -- NODE
  end
  for _ = 1, 40 do keep[1] = make(8) end  -- TREE
end
do  -- Past the cap, on the way up: one frame fewer above the cut each
    -- time (LuaJIT's opt/sink/nosink.lua).
  local function f(n) if n == 0 then return 42 end local t = f(n - 1) return { t } end
  for _ = 1, 3 do f(100) end
end
assert(misc.memprof.stop())
print("done")
LUA
my %p = map { $_ => line_of($popped, "-- $_") } qw(J A B CALL1 CALL2 EJ EA EB PCALL1 PCALL2 TREE NODE LEAF);
for my $jit ('on', 'off') {
  my $bin = scratch() . "/popped-$jit.bin";
  (my $code = $popped) =~ s/JIT/$jit/;
  my $r = run_lua($code, luajit => $asan, args => [$bin], timeout => 300);
  ok($r->{rc} == 0 && $r->{signal} == 0 && $r->{err} !~ /memprof: stack node/,
     "jit $jit, frames popped without a return: every stack the same as looked up from the root")
    or diag $r->{err};
  my $st = memprof_stacks($bin, $r->{script});
  for my $case (['a trace returning', qw(CALL J A B)], ['an error unwinding', qw(PCALL EJ EA EB)]) {
    my ($what, $call, $top, $mid, $low) = @$case;
    my $chain = "\@F:$p{$low};\@F:$p{$mid};\@F:$p{$top}";  # (pcall's frame before)
    my @via = map { my $from = "\@F:$p{$call . $_};";
                    through({ map { $_ => $st->{$_} } grep { index($_, $from) >= 0 } keys %$st }, $chain) } 1, 2;
    cmp_ok($via[0], '>=', 10000 * 16, "jit $jit, $what: 10000 tables or more through the first line");
    is($via[1], $via[0], "jit $jit, $what: as many through the second") or diag explain $st;
  }
  # 40 trees of depth 8: 256 leaves each, all eight make frames deep; the
  # nodes made j frames deep are half those made j+1 deep.
  my $root = "\@F:$p{TREE}";
  my @leaf = grep { /$root((?:;\@F:$p{NODE})*);\@F:$p{LEAF}$/ } keys %$st;
  is(scalar(@leaf), 1, "jit $jit, trees: one stack makes the leaves") or diag explain \@leaf;
  is(scalar(() = ($leaf[0] // '') =~ /\@F:$p{NODE}/g), 8, "jit $jit, trees: eight frames on line NODE below it");
  my @node = map { my $k = $root . ";\@F:$p{NODE}" x $_;
                   through({ map { $_ => $st->{$_} } grep { /(^|;)\Q$k\E$/ } keys %$st }, $k) } 1 .. 8;
  ok($node[0] > 0 && !grep({ $node[$_] != 2 * $node[$_ - 1] } 1 .. 7),
     "jit $jit, trees: each frame deeper on line NODE makes twice the bytes (@node)")
    or diag explain [ grep { index($_, "\@F:$p{NODE}") >= 0 } sort keys %$st ];
  is(($st->{$leaf[0] // ''} // 0) % (40 * 256), 0, "jit $jit, trees: the leaves, 40 * 256 tables");
}

done_testing();
