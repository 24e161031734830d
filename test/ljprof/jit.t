#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# The trace compiler's events in a sysprof stream, hand-made: ljprof
# report --jit joins them to the samples (compiler samples charged to the
# trace being compiled and its outcome, interpreted lines beside the
# reasons given there, exits by trace and line, flushes), the flame
# graph's stacks name the attempt and the exit, and a stream cut at any
# byte still gets its report.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Run;
use LJProf::Stream;

my $dir = scratch_dir();
my ($M, $F) = (0x1000, 0x2000);    # protos: the main chunk, a function
my $head = symtab(sym_lfunc($M, '@m.lua', 0), sym_lfunc($F, '@m.lua', 10));
my @records = (
  sp_config(MODE_C, 1000, 2), sp_jit(1),
  # Trace 1 at m.lua:12 aborts twice (NYI at line 14), then is blacklisted.
  sp_start(1, 0, 0, 0, $M, 12),
  sp_jit_sample(RECORD, 1, 0, f_native(0x500), f_lua($M, 12)),
  sp_jit_sample(RECORD, 1, 0, f_native(0x500), f_lua($M, 12)),
  sp_abort(1, $M, 14, 10, 'NYI: bytecode 51'),
  sp_start(1, 0, 0, 0, $M, 12),
  sp_jit_sample(ASM, 1, 0, f_native(0x500), f_lua($M, 12)),
  sp_abort(1, $M, 14, 10, 'NYI: bytecode 51'),
  sp_blacklist($M, 12),
  # The interpreter runs line 14 then.
  sp_sample(LFUNC, f_lua($M, 14)), sp_sample(LFUNC, f_lua($M, 14)),
  sp_sample(CFUNC, f_native(0x600), f_lua($M, 14)),
  # Trace 2 in f at line 11 is compiled; its exit 3 resumes at line 11.
  sp_start(2, 0, 0, 0, $F, 11),
  sp_jit_sample(OPT, 2, 0, f_native(0x500), f_lua($F, 11), f_lua($M, 20)),
  sp_end(2, 2, 2, 40, 300),
  sp_jit_sample(EXIT, 2, 3, f_native(0x700), f_lua($F, 11), f_lua($M, 20)),
  sp_exits([2, 3, 1000, $F, 11], [2, 1, 10, $F, 12]),
  sp_flush(1),
  sp_exits([2, 3, 500, $F, 11]),
  # A side trace of trace 2 exit 3, started, not finished when it ends.
  sp_start(3, 1, 2, 3, $F, 11),
  sp_jit_sample(RECORD, 3, 0, f_native(0x500), f_lua($F, 11)),
);
my $bin = $head . sysprof(3, @records);
my $file = write_file("$dir/jit.bin", $bin);

my $r = ljprof('report', '--jit', '--format=json', $file);
is($r->{rc}, 0, 'json: exit 0') or diag $r->{err};
my $j = eval { JSON::PP->new->decode($r->{out}) } || {};
is($j->{kind}, 'jit', 'json: kind jit');
ok($j->{events} && $j->{jit_on}, 'json: the stream has events, the compiler was on');
is_deeply([@$j{qw(started compiled aborted blacklisted)}], [4, 1, 2, 1],
          'json: traces started, compiled, aborted, starts blacklisted');
is_deeply($j->{time}, {compiled => 0, interpreted => 2, c => 1, jit_compiler => 5, exits => 1, gc => 0},
          'json: time by what ran');
my %start = map { ("$_->{kind} $_->{location}" => $_) } @{ $j->{starts} };
my $s12 = $start{'trace @m.lua:12'} || {};
is_deeply([@$s12{qw(attempts compiled aborted blacklisted samples samples_aborted)}], [2, 0, 2, 1, 3, 3],
          'json: the start at line 12: two attempts aborted, blacklisted, its three compiler samples lost');
is_deeply($s12->{aborts}, [{reason => 'NYI: bytecode 51', count => 2}], 'json: ... and why');
my $s11 = $start{'trace @m.lua:11'} || {};
is_deeply([@$s11{qw(attempts compiled samples samples_compiled)}], [1, 1, 1, 1],
          'json: the start at line 11 compiled, its sample made a trace');
is(($start{'side trace @m.lua:11'} || {})->{samples}, 1, 'json: a side trace under way at the end keeps its sample');
is($j->{starts}[0]{location}, '@m.lua:12', 'json: starts by compiler samples, most first');
my ($l14) = grep { $_->{location} eq '@m.lua:14' } @{ $j->{lines} };
is_deeply([$l14->{interpreted}, $l14->{aborts}], [3, [{reason => 'NYI: bytecode 51', count => 2}]],
          'json: line 14 interpreted (the C it calls too), where recording stopped, and why');
is($j->{lines}[0]{location}, '@m.lua:14', 'json: interpreted lines, most first');
is_deeply([map { [@$_{qw(trace exit location count start)}] } @{ $j->{exits} }],
          [[2, 3, '@m.lua:11', 1500, '@m.lua:11'], [2, 1, '@m.lua:12', 10, '@m.lua:11']],
          'json: exits summed over their records, most taken first, with where they resume and start');
is_deeply($j->{flushes}, {asked => 0, maxtrace => 1, maxmcode => 0}, 'json: flushes by why');

$r = ljprof('report', '--jit', $file);
my $t = $r->{out};
like($t, qr/^JIT compiler: 5 \(55\.6%\)$/m, 'text: compiler time');
like($t, qr/^- 56% of the time is the JIT compiler; most on the trace at \@m\.lua:12 \(2 attempts, 0 compiled, 2 aborted, blacklisted\): NYI: bytecode 51 \(2\)/m,
     'text: what the JIT says names the start, its outcome and why');
like($t, qr/^trace \@m\.lua:12: 3 samples \(33\.3%\): 2 attempts, 0 compiled, 2 aborted, BLACKLISTED \(1x\)\n    aborts: NYI: bytecode 51 \(2\)$/m,
     'text: compiler time by trace start');
like($t, qr/^TRACE 2 exit 3 to \@m\.lua:11: 1500 \(99\.3%\), trace started at \@m\.lua:11$/m, 'text: the hottest exit first');
like($t, qr/^no trace number left \(raise -Omaxtrace\): 1$/m, 'text: the flush and why');

# The flame graph's stacks: the attempt and its outcome below the Lua line.
$r = ljprof('report', '--format=collapsed', $file);
my %st;    # a stack's VM states and trace tell stacks apart: lines repeat
for (split /\n/, $r->{out}) { $st{$1} += $2 if /^(.*) (\d+)$/ }
is($st{'@m.lua:12;[JIT] trace @m.lua:12: aborted: NYI: bytecode 51;0x500'}, 3,
   'collapsed: compiler samples wait for the outcome, under a [JIT] frame below their Lua line');
is($st{'@m.lua:20;@m.lua:11;[JIT] trace @m.lua:11: compiled;0x500'}, 1, 'collapsed: a compiled trace');
is($st{'@m.lua:11;[JIT] side trace @m.lua:11;0x500'}, 1, 'collapsed: an attempt unfinished at the end: no outcome');
is($st{'@m.lua:20;@m.lua:11;[exit] TRACE 2 exit 3;0x700'}, 1, 'collapsed: an exit sample names the trace and exit');

# The text report opens with what the JIT says; a main chunk is named so.
$r = ljprof('report', $file);
like($r->{out}, qr/^WHAT THE JIT SAYS .*\n- 56% of the time is the JIT compiler/m, 'report: what the JIT says');
like($r->{out}, qr/\nLINES BY SELF\n.*\nFUNCTIONS BY SELF\n/s, 'report: lines before functions');
like($r->{out}, qr/^\@m\.lua \(main chunk\): /m, 'report: the main chunk by name, not :0');

# Refused: --jit of a memory profile, or in another format.
$r = ljprof('report', '--jit', '--format=pprof', $file);
is($r->{rc}, 2, '--jit --format=pprof: usage error');
like($r->{err}, qr/--jit writes text, json or html, not another format/, '... says why');

# A stream without events (older, or v2): time by kind only.
my $old = write_file("$dir/old.bin", $head . sysprof(3, sp_config(MODE_C, 1000, 2), sp_sample(RECORD, f_lua($M, 12))));
$r = ljprof('report', '--jit', $old);
like($r->{out}, qr/none of the compiler's events/, 'no events: said');
like($r->{out}, qr/^JIT compiler: 1 \(100\.0%\)$/m, 'no events: time by kind');
my $off = write_file("$dir/off.bin", $head . sysprof(3, sp_config(MODE_C, 1000, 2), sp_jit(0), sp_sample(LFUNC, f_lua($M, 12))));
like(ljprof('report', '--jit', $off)->{out}, qr/The JIT compiler was off/, 'the JIT off: said');

# Cut at every byte: one clear error, exit 1, a report of what came before.
my $bad = 0;
for my $len (length($head) + 7 .. length($bin) - 1) {
  my $cut = write_file("$dir/cut.bin", substr($bin, 0, $len));
  my $c = ljprof('report', '--jit', '--format=json', $cut);
  my $doc = eval { JSON::PP->new->decode($c->{out}) };
  $bad++, diag("cut at $len: rc=$c->{rc} err=$c->{err}")
    unless $c->{rc} == 1 && $doc && $doc->{error} && $c->{err} =~ /^ljprof: \S+: truncated at offset \d+/;
}
is($bad, 0, 'every cut: exit 1, the error, a JSON report of what came before');

# Damage: an unknown flush reason is kept apart; a huge reason string is refused.
my $hostile = write_file("$dir/hostile.bin", $head . sysprof(3, sp_config(MODE_C, 1000, 2), sp_flush(99), "\x12\x01\x00\x00\x00" . uleb(1 << 40)));
$r = ljprof('report', '--jit', $hostile);
is($r->{rc}, 1, 'hostile: exit 1');
like($r->{out}, qr/^FLUSHES: 1$/m, 'hostile: the flush before the damage is counted');

# A compiler sample without frames, the first its attempt keeps (the
# array of waiting frames still empty): under the outcome's frame alone.
my $frameless = write_file("$dir/frameless.bin", $head . sysprof(3,
  sp_config(MODE_C, 1000, 2), sp_jit(1), sp_start(1, 0, 0, 0, $M, 12),
  sp_jit_sample(RECORD, 1, 0), sp_jit_sample(RECORD, 1, 0, f_lua($M, 12)),
  sp_end(1, 2, 1, 40, 300)));
$r = ljprof('report', '--format=collapsed', $frameless);
is($r->{rc}, 0, 'frameless compiler sample: exit 0') or diag $r->{err};
is($r->{out}, "[JIT] trace \@m.lua:12: compiled 1\n\@m.lua:12;[JIT] trace \@m.lua:12: compiled 1\n",
   'frameless compiler sample: counted under its outcome, before the one with frames');

done_testing();
