#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Stack tables that grow: a program that allocates from a million distinct
# call stacks (three levels of 100 call lines each, a table made at the
# last) keeps every one, in the interpreter and in traces. Before the tables grew, the 65 537th stack and
# all after it were lost ("stack table full").
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

# level(name, callee, n): a function whose n branches each sit on a line of
# their own, so that each reaches the callee (or makes a table) from its
# own line. No tail calls: each level keeps its frame.
sub level {
  my ($name, $callee, $n) = @_;
  my $code = "local function $name(i, j, k)\n";
  for my $b (1 .. $n) {
    my $arg = $name eq 'A' ? 'i' : $name eq 'B' ? 'j' : 'k';
    my $body = $callee ? "local t = $callee(i, j, k) return t" : "return { i }";
    $code .= ($b == 1 ? "  if" : "  elseif") . " $arg == $b then $body  -- $name$b\n";
  }
  return $code . "  end\nend\n";
}

# Runs $code, which profiles into $bin; checks that every one of $want
# stacks is kept; the report and the script's chunk name.
sub all_kept {
  my ($what, $code, $bin, $want) = @_;
  my $run = run_lua($code, timeout => 300);
  is($run->{rc}, 0, "$what: the program ran") or diag $run->{err};
  my $r = memprof_report($bin);
  is($r->{rc}, 0, "$what: the stream reads back complete") or diag $r->{err};
  my $st = $r->{json} && $r->{json}{stacks} || {};
  is($st->{table_full_events}, 0, "$what: no event lost its stack");
  cmp_ok($st->{distinct} // 0, '>=', $want, "$what: $want distinct stacks or more ($st->{distinct})");
  return ($r, '@' . $run->{script});
}

my $n = 100;
for my $jit ('off', 'on') {
  my $bin = scratch() . "/many-$jit.bin";
  my $code = "jit.$jit()\n" . level('C', undef, $n) . level('B', 'C', $n) . level('A', 'B', $n) . <<LUA;
local keep = {}
assert(misc.memprof.start({ path = "$bin", stacks = true }))
for i = 1, $n do
  for j = 1, $n do
    for k = 1, $n do
      keep[k] = A(i, j, k)  -- LOOP
    end
  end
end
assert(misc.memprof.stop())
LUA

  my ($r, $src) = all_kept("jit $jit", $code, $bin, $n ** 3);

  # Each of C's lines made 10 000 tables, from 10 000 stacks of its own.
  for my $b (1, 57, $n) {
    my $line = line_of($code, "-- C$b");
    is(location($r, "$src:$line")->{alloc_events}, $n * $n, "jit $jit: C's line $b made $n x $n tables");
  }
}

# A fork while the tables grow: half of the stacks made, the process
# forks; the child, whose profile is forgotten, walks every stack again
# on a line of its own (its copy of the tables never grows), and the
# parent goes on growing its tables with the other half. The parent's
# stream keeps all its stacks and none of the child's events.
{
  my $m = 50;
  my $bin = scratch() . "/many-fork.bin";
  my $code = "jit.off()\n" . level('C', undef, $m) . level('B', 'C', $m) . level('A', 'B', $m) . <<LUA;
local ffi = require("ffi")
ffi.cdef("int fork(void); int waitpid(int pid, int *status, int options);")
local keep = {}
local function run(from, to)
  for i = from, to do
    for j = 1, $m do
      for k = 1, $m do
        keep[k] = A(i, j, k)  -- LOOP
      end
    end
  end
end
assert(misc.memprof.start({ path = "$bin", stacks = true }))
run(1, $m / 2)
local pid = ffi.C.fork()
if pid == 0 then
  for _ = 1, 2 do run(1, $m) end  -- CHILD
  os.exit(0)
end
run($m / 2 + 1, $m)
local status = ffi.new("int[1]")
assert(ffi.C.waitpid(pid, status, 0) == pid and status[0] == 0, "the child failed")
assert(misc.memprof.stop())
LUA
  my ($r, $src) = all_kept('fork', $code, $bin, $m ** 3);
  my $line = line_of($code, "-- C1");
  is(location($r, "$src:$line")->{alloc_events}, $m * $m, "fork: C's line 1 made $m x $m tables, the parent's only");
}

done_testing();
