#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# With the JIT on: what compiled code allocates is charged to its trace,
# named by the line it starts at; what runs while a trace is recorded is
# reported too, and nothing is lost between the two.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

my $bin = scratch() . '/jit.bin';
my $payload = <<'LUA';
local keep = {}
for i = 1, 3000 do keep[i] = false end
collectgarbage() collectgarbage("stop")
assert(misc.memprof.start(START))
for i = 1, 3000 do keep[i] = { i } end
local s = {}
for i = 1, 2000 do s[i % 100 + 1] = "k" .. i end
assert(misc.memprof.stop())
LUA
my $run = run_lua($payload =~ s/START/"$bin"/r);
is($run->{rc}, 0, 'payload ran') or diag $run->{err};
my $r = memprof_report($bin);
is($r->{rc}, 0, 'the stream reads back complete') or diag $r->{err};
my $src = '@' . $run->{script};

my @t5 = loc_matching($r, qr/^TRACE \[\d+\] started at \Q$src\E:5$/);
is(scalar(@t5), 1, 'the hot loop of line 5 became a trace named by its start line');
my $traced = $t5[0] ? $t5[0]{alloc_events} : 0;
my $interp = location($r, "$src:5")->{alloc_events};
cmp_ok($traced, '>', 2500, "most of its tables were made by the trace ($traced)");
cmp_ok($interp, '>', 0, "the first iterations ran in the interpreter ($interp)");
is($traced + $interp, 3000, 'trace + interpreter made exactly 3000 tables: none lost or doubled');

my @t7 = loc_matching($r, qr/^TRACE \[\d+\] started at \Q$src\E:7$/);
my $strings = location($r, "$src:7")->{alloc_events};
$strings += $_->{alloc_events} for @t7;
cmp_ok($strings, '>=', 2000, 'the string loop (line 7) is charged at least its 2000 strings');
ok(!loc_matching($r, qr/^TRACE \[\d+\]$/), 'every trace an event names was announced first');

# Recording allocates (IR, snapshots, machine code bookkeeping, the trace
# maps): never a line 0 of the function being recorded; internal in the
# reference's stream (v3, this payload), the compiler's in ours (v4,
# jit_alloc.t says whose).
cmp_ok(location($r, 'INTERNAL')->{alloc_events} + location($r, 'INTERNAL')->{realloc_events},
  '>', 0, 'allocations while recording and compiling are reported as internal');
is(scalar(loc_matching($r, qr/:0$/)), 0, 'v3: no event is charged to a line 0');
my $run4 = run_lua($payload =~ s/START/{ path = "$bin" }/r);
is($run4->{rc}, 0, 'v4 payload ran') or diag $run4->{err};
my $r4 = memprof_report($bin);
is($r4->{rc}, 0, 'v4: the stream reads back complete') or diag $r4->{err};
is(scalar(loc_matching($r4, qr/:0$/)), 0, 'v4: no event is charged to a line 0');
my ($jit4, $src4) = (0, "\@$run4->{script}");
$jit4 += $_->{alloc_events} for loc_matching($r4, qr/^JIT compiler \((?:record|opt|asm)\): trace \d+ at \Q$src4\E:[57]$/);
cmp_ok($jit4, '>', 0, 'v4: recording allocates, charged to the compiler at work on the trace of line 5 or 7');

done_testing;
