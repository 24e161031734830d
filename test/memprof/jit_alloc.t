#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# The trace compiler's own memory (stream v4 and v5): what the recorder,
# optimiser and assembler allocate is charged to the trace they compile,
# named by its number and its start line as -jv prints them for the same
# run, also a trace that is then aborted; the VM's own work of a known kind
# (a coroutine's stack moved, a trace exit restoring what it sank) says
# which. The reference's v3 keeps all of it INTERNAL: the same events.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use IO::Uncompress::Gunzip qw(gunzip $GunzipError);
use Test::More;
use LJProf::Lua;

my $jit = run_lua('io.write(jit.status() and "on" or "off")');
plan skip_all => 'this VM has no JIT compiler' unless $jit->{out} eq 'on';

my $dir = scratch();

# A long loop body recorded first (the IR buffer grows while it is
# recorded), aborted at its closure (FNEW is not compiled) each time it is
# hot again; then 40 small loops, a trace each; a deep recursion (the
# stack moves); a loop whose table the trace sinks, restored on exit.
# What the VM allocates must not change from one run to the next: the
# long loop runs once, for it is hot again after a penalty with random
# bits, and a recording begun as a loop ends would abort elsewhere; the
# GC is stopped, for its pace follows the string hash's random seed, and
# with it where it shrinks the stack and which strings it frees and the
# next run makes anew.
my $code = qq{collectgarbage("stop")\n}
  . qq{local jv = require("jit.v") jv.on(arg[1])\n}
  . qq{local fmt, path = arg[2], arg[3]\n}
  . qq{local opt = { path = path, stacks = fmt == "v5" } -- the same heap for each\n}
  . qq{assert(misc.memprof.start(fmt == "v3" and path or opt))\n}
  . qq{local function aborted(n) local x, y = 0, 1\n}
  . qq{  for i = 1, n do -- ABORTED\n}
  . join('', map { "    x = x + i * $_ y = y + x % $_\n" } 1 .. 150)
  . qq{    local f = function() return i end\n  end\n  return x + y\nend\n}
  . qq{aborted(2000)\n}
  . join('', map { "local function f$_(n) local x = 0 for i = 1, n do x = x + i % $_ end return x end\n" } 1 .. 40)
  . qq{local s = 0\n}
  . join('', map { "s = s + f$_(200)\n" } 1 .. 40)
  . qq{local function deep(n) if n == 0 then return 0 end return 1 + deep(n - 1) end\n}
  . qq{s = s + deep(20000)\n}
  . qq{local keep\n}
  . qq{for i = 1, 300 do local t = { i, i + 1 } if i > 250 then keep = t end s = s + t[1] end\n}
  . qq{assert(misc.memprof.stop())\n};
my $aborted = line_of($code, '-- ABORTED');

# Runs the payload writing stream $fmt: its report, -jv's lines, the
# script's chunk name and file name (each run has a script of its own).
sub profile {
  my ($fmt) = @_;
  my $run = run_lua($code, args => ["$dir/$fmt.jv", $fmt, "$dir/$fmt.bin"]);
  is($run->{rc}, 0, "$fmt: payload ran") or diag $run->{err};
  my $r = memprof_report("$dir/$fmt.bin");
  is($r->{rc}, 0, "$fmt: the stream reads back complete") or diag $r->{err};
  my $jv = do { local $/; open my $fh, '<', "$dir/$fmt.jv" or die $!; <$fh> };
  (my $base = $run->{script}) =~ s{.*/}{};
  return ($r, $jv, '@' . $run->{script}, $base);
}

# -jv's traces that were made: number => start line, in the script.
sub jv_traces {
  my ($jv, $base) = @_;
  my %t;
  $t{$1} = $2 while $jv =~ /^\[TRACE\s+(\d+) (?:\(\d+\/\d+\) )?\Q$base\E:(\d+) /mg;
  return \%t;
}
# Ours: the trace numbers and start lines the assembler's allocations name.
sub asm_traces {
  my ($r, $src) = @_;
  my %t;
  for (loc_matching($r, qr/^JIT compiler \(asm\): trace \d+ at \Q$src\E:\d+$/)) {
    my ($n, $l) = $_->{location} =~ /trace (\d+) at .*:(\d+)$/;
    $t{$n} = $l if $_->{alloc_events} > 0;
  }
  return \%t;
}

my ($r4, $jv4, $src, $base) = profile('v4');
my $jvt = jv_traces($jv4, $base);
cmp_ok(scalar(keys %$jvt), '>=', 40, 'v4: -jv made a trace of each small loop (' . scalar(keys %$jvt) . ')');
is_deeply(asm_traces($r4, $src), $jvt,
  'v4: every trace -jv made, and no other, has the assembler\'s allocations under its number and start line');

my @starts = $jv4 =~ /^\[TRACE --- \Q$base\E:$aborted -- /mg;
cmp_ok(scalar @starts, '>', 0, "v4: -jv aborts the trace at line $aborted (" . scalar(@starts) . ' times)');
ok(!grep({ $_ == $aborted } values %$jvt), "v4: -jv made no trace at line $aborted");
my @rec = loc_matching($r4, qr/^JIT compiler \(record\): trace \d+ at \Q$src\E:$aborted$/);
my $recbytes = 0;
$recbytes += $_->{alloc_bytes} + $_->{realloc_new_bytes} for @rec;
cmp_ok($recbytes, '>', 4096,
  "v4: the aborted trace's recording is charged its allocations ($recbytes bytes), by its start line");

my $stack = location($r4, 'INTERNAL (stack moved)');
cmp_ok($stack->{realloc_events}, '>', 3, "v4: the deep recursion's stack moves are named ($stack->{realloc_events})");
cmp_ok(location($r4, 'INTERNAL (trace exit)')->{alloc_events}, '>', 0,
  'v4: the table a trace sank, made on its exit, is named so');

# v3: the same events, all INTERNAL.
my ($r3, $jv3, $src3, $base3) = profile('v3');
is_deeply(jv_traces($jv3, $base3), $jvt, 'v3: -jv made the same traces');
ok(!loc_matching($r3, qr/^(?:JIT compiler|INTERNAL \()/), 'v3: no location of the compiler or of a kind of VM work');
# What the VM allocates is the same in both runs; what the GC frees, when,
# is not (the heap's addresses differ).
my @fields = qw(alloc_events alloc_bytes realloc_events realloc_new_bytes realloc_old_bytes);
my %v4sum;
for my $l (loc_matching($r4, qr/^(?:JIT compiler|INTERNAL)/)) {
  $v4sum{$_} += $l->{$_} for @fields;
}
my $int3 = location($r3, 'INTERNAL');
is_deeply({ map { $_ => $int3->{$_} // 0 } @fields }, \%v4sum,
  'v3: INTERNAL holds exactly the allocations v4 charges to the compiler, to the VM\'s kinds and to INTERNAL');

# v5 (stacks): the same names.
my ($r5, $jv5, $src5, $base5) = profile('v5');
is_deeply(asm_traces($r5, $src5), jv_traces($jv5, $base5), 'v5: the assembler\'s allocations name -jv\'s traces');
ok(scalar(loc_matching($r5, qr/^JIT compiler \(record\): trace \d+ at \Q$src5\E:$aborted$/)),
  'v5: the aborted trace\'s recording is named');

# Every output names them.
my $jitbytes = 0;
$jitbytes += $_->{alloc_bytes} + $_->{realloc_new_bytes} for loc_matching($r4, qr/^JIT compiler /);
my $text = `ljprof report '$dir/v4.bin'`;
like($text, qr/^JIT compiler \(record\): trace \d+ at \Q$src\E:$aborted: \d+ events/m, 'text: the aborted trace\'s recording');
my ($jittext) = $text =~ /^JIT compiler: (\d+) bytes allocated /m;
is($jittext, $jitbytes, "text: the compiler's total, what its sites allocated and grew ($jitbytes)");
my ($stacks) = collapsed("$dir/v5.bin");
ok(scalar(grep { /^JIT compiler;JIT compiler: trace at \Q$src5\E:$aborted;JIT compiler \(record\): trace \d+ at \Q$src5\E:$aborted$/ } keys %$stacks),
  'collapsed: the aborted trace\'s recording, under its start, under the compiler');
my ($flat) = collapsed("$dir/v4.bin");
my $under = 0;
$under += $flat->{$_} for grep { /^JIT compiler;/ } keys %$flat;
is($under, $jitbytes, "collapsed: the compiler's box holds every byte it allocated ($jitbytes)");
system('ljprof', 'report', '--format=pprof', '-o', "$dir/v4.pb", "$dir/v4.bin") == 0 or die 'pprof report failed';
gunzip("$dir/v4.pb" => \my $pb) or die $GunzipError;
like($pb, qr/JIT compiler \(record\): trace \d+ at \Q$src\E:$aborted/, 'pprof: a function of the aborted trace\'s recording');
my $html = `ljprof report --format=html '$dir/v4.bin'`;
like($html, qr/JIT compiler \(asm\): trace \d+ at \Q$src\E:\d+/, 'HTML flame graph: the assembler\'s frames');

done_testing;
