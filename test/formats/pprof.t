#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# pprof output, read by the real `go tool pprof`: the hot Lua line of a CPU
# workload comes first with -lines, and its function (`@file:FIRSTLINE`)
# without; frames a trace runs inlined are one location with a line each,
# the inlined callee's line above its caller's call line; memory profiles
# carry allocated and in-use objects and bytes, the largest live site first
# under inuse_space; every value sums to the JSON report's totals; CPU
# samples carry their VM state and trace as labels (-tags, -tagfocus).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Temp qw(tempdir);
use Test::More;
use LJProf::Lua;
use LJProf::Profiles;
use LJProf::Stream;

my $go = `sh -c 'command -v go' 2>/dev/null`;
plan skip_all => 'go is not installed (Debian golang-go)' unless $go;

# go tool pprof without network or a writable home.
my $gohome = tempdir(CLEANUP => 1);
$ENV{$_->[0]} = "$gohome/$_->[1]" for [HOME => 'home'], [GOCACHE => 'cache'],
  [GOPATH => 'gopath'], [PPROF_TMPDIR => 'pprof'];
mkdir "$gohome/$_" for qw(home cache gopath pprof);
$ENV{GOTOOLCHAIN} = 'local';
$ENV{GOPROXY} = 'off';
$ENV{GOFLAGS} = '';

sub pprof {
  my @args = @_;
  my $out = `go tool pprof @args 2>&1`;
  return ($? >> 8, $out);
}

# The rows of -top: [flat, name, cum], in order.
sub top_rows {
  my ($out) = @_;
  return map { /^\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.*)$/ ? [$1, $3, $2] : () } split /\n/, $out;
}

# -raw: the sample values, summed per sample type.
sub raw_totals {
  my ($out) = @_;
  my ($types) = $out =~ /^Samples:\n(.*)$/m or return {};
  my @names = map { (split m{/})[0] } split ' ', $types =~ s/\[dflt\]//gr;
  my ($samples) = $out =~ /^Samples:\n.*?\n(.*?)^\S/ms;
  my %sum;
  for (split /\n/, $samples // '') {
    next unless /^\s+(\d+(?:\s+\d+)*):/;
    my @v = split ' ', $1;
    $sum{$names[$_]} += $v[$_] for 0 .. $#names;
  }
  return \%sum;
}

# -raw: the samples as { "LOCATION | LOCATION ..." => count }, leaf first,
# each location its lines joined by " + " (a line: its function, then
# file:line), and how many locations there are.
sub raw_stacks {
  my ($out) = @_;
  my ($locations) = $out =~ /^Locations\n(.*?)^Mappings/ms;
  my (%lines, $id);
  for (split /\n/, $locations // '') {
    $id = $1 if s/^\s*(\d+): 0x\S+ M=\d+ //;
    s/^\s+//;
    s/ s=\d+$//;
    push @{ $lines{$id} }, $_;
  }
  my ($samples) = $out =~ /^Samples:\n.*?\n(.*?)^\S/ms;
  my %stacks;
  for (split /\n/, $samples // '') {
    next unless /^\s+(\d+)\s[^:]*:\s*([\d ]+?)\s*$/;
    $stacks{join ' | ', map { join ' + ', @{ $lines{$_} } } split ' ', $2} += $1;
  }
  return (\%stacks, scalar keys %lines);
}

{ # CPU
  my $cpu = cpu_profile();
  my $file = scratch() . '/cpu.pb.gz';
  my ($rc, undef, $err) = ljprof_out('report', '--format=pprof', '-o', $file, $cpu->{bin});
  is($rc, 0, 'cpu: pprof written') or diag $err;
  is(substr(file_text($file), 0, 2), "\x1f\x8b", 'cpu: gzip');

  my $base = quotemeta((split m{/}, $cpu->{script})[-1]);
  my ($prc, $out) = pprof('-top', '-lines', $file);
  is($prc, 0, 'cpu: go tool pprof reads it') or diag $out;
  like($out, qr/^Type: cpu$/m, 'cpu: CPU time is the default sample type');
  my @rows = top_rows($out);
  like($rows[0][1], qr/^\@\S*$base:$cpu->{hot_first_line} \S*$base:$cpu->{hot_line}$/,
       "cpu -lines: the hot line, file.lua:$cpu->{hot_line}, in its function, first") or diag $out;

  ($prc, $out) = pprof('-top', $file);
  @rows = top_rows($out);
  like($rows[0][1], qr/^\@\S*$base:$cpu->{hot_first_line}$/, 'cpu: functions are @file.lua:FIRSTLINE') or diag $out;
  like($out, qr/^\s.*\smain$/m, 'cpu: native frames by symbol');
  like($out, qr/^\s.*\slua_pcall$/m, 'cpu: lua_pcall among them');

  ($prc, $out) = pprof('-raw', $file);
  like($out, qr/^PeriodType: cpu nanoseconds$/m, 'cpu: period type cpu/nanoseconds');
  like($out, qr/^Period: 1000000$/m, 'cpu: period, the 1 ms interval');
  like($out, qr{^Samples:\nsamples/count cpu/nanoseconds\[dflt\]$}m, 'cpu: sample types samples/count, cpu/nanoseconds');
  my $json = json_report($cpu->{bin});
  my $sum = raw_totals($out);
  is($sum->{samples}, $json->{samples_with_stacks}, "cpu round trip: $sum->{samples} samples as in the JSON report");
  is($sum->{cpu}, $json->{samples_with_stacks} * 1_000_000, 'cpu round trip: cpu = samples x the interval');
  like($out, qr/^Mappings\n\s*1: .*luajit/m, 'cpu: the catch-all mapping');
}

{ # Inlined frames, hand-made: one location per run of them, its lines
  # innermost first, shared by equal runs; the trace its own location.
  my $file = scratch() . '/inlined-stream.pb.gz';
  my ($rc, undef, $err) = ljprof_out('report', '--format=pprof', '-o', $file,
                                     inlined_stream(scratch() . '/inlined-stream.bin'));
  is($rc, 0, 'inlined stream: pprof written') or diag $err;
  my ($prc, $out) = pprof('-raw', $file);
  my ($stacks, $nlocations) = raw_stacks($out);
  my $trace = 'TRACE [1] @m.lua:10 m.lua:10';
  my ($main11, $main12, $main13) = map { "\@m.lua (main chunk) m.lua:$_" } 11, 12, 13;
  my ($fill5, $fill6, $fill7, $put21) = ('@m.lua:4 m.lua:5', '@m.lua:4 m.lua:6', '@m.lua:4 m.lua:7', '@m.lua:20 m.lua:21');
  is_deeply($stacks, {
    "memset :0 | $trace | $put21 + $fill6 + $main11 | main :0" => 3,
    "$trace | $fill5 + $main11 | main :0" => 4,
    "$trace | $fill5 | memset :0 | $main11 | main :0" => 1,
    "$trace | $main12 | main :0" => 1,
    "$trace | $fill5" => 1,
    "$fill5 | $main11 | main :0" => 1,
    "$trace | $fill7 | $main13 | main :0" => 2,
  }, 'inlined stream: two and three frames in one location, innermost first; a count above the Lua frames '
     . 'that follow stops at the last; a native frame, a count of 0 or 1, tag 5 and the interpreter inline nothing')
    or diag $out;
  is($nlocations, 10, 'inlined stream: a location per distinct run of frames, shared');
}

SKIP: { # Inlined frames, JIT on: fill() inlined into the loop's trace.
  my $prof = inlined_profile() or skip 'no JIT in this build', 7;
  my $file = scratch() . '/inlined.pb.gz';
  my ($rc, undef, $err) = ljprof_out('report', '--format=pprof', '-o', $file, $prof->{bin});
  is($rc, 0, 'inlined: pprof written') or diag $err;
  my $script = $prof->{script};
  my ($prc, $out) = pprof('-raw', $file);
  my ($stacks) = raw_stacks($out);
  my ($inlined, $all, $mixed) = (0, 0, 0);
  my $run = "\@$script:$prof->{callee_first_line} $script:$prof->{callee_line} + \@$script (main chunk) $script:$prof->{call_line}";
  for my $st (keys %$stacks) {
    $all += $stacks->{$st};
    $inlined += $stacks->{$st} if index(" | $st | ", " | $run | ") >= 0;
    $mixed += $stacks->{$st} if grep { / \+ / && grep { !/^\@/ } split / \+ / } split / \| /, $st;
  }
  cmp_ok($inlined, '>', $all / 2, "inlined -raw: most samples ($inlined of $all) have a location of two lines, "
         . "fill's memset line $prof->{callee_line}, then the loop's call line $prof->{call_line}") or diag $out;
  is($mixed, 0, 'inlined -raw: only Lua lines share a location (the trace and native frames stand alone)');
  my $json = json_report($prof->{bin});
  is(raw_totals($out)->{samples}, $json->{samples_with_stacks}, 'inlined round trip: every sample');

  # Lua frames only: the samples of each line where it runs.
  ($prc, $out) = pprof('-top', '-lines', '-show=^@', '-sample_index=samples', $file);
  my @rows = top_rows($out);
  my $base = quotemeta((split m{/}, $script)[-1]);
  like($rows[0][1], qr/^\@\S*$base:$prof->{callee_first_line} \S*$base:$prof->{callee_line} \(inline\)$/,
       "inlined -lines: the inlined callee's line $prof->{callee_line} first, marked inline") or diag $out;
  like($rows[1][1], qr/^\@\S*$base \(main chunk\) \S*$base:$prof->{caller_line}$/,
       "inlined -lines: then the loop's own memset, line $prof->{caller_line}") or diag $out;
  my ($call) = grep { $_->[1] =~ /^\@\S*$base \(main chunk\) \S*$base:$prof->{call_line}$/ } @rows;
  cmp_ok($call && $call->[2], '>=', $rows[0][2],
         "inlined -lines: the call line $prof->{call_line} has the callee's samples in its total") or diag $out;
}

{ # memory
  my $mem = memory_profile();
  my $file = scratch() . '/mem.pb.gz';
  my ($rc, undef, $err) = ljprof_out('report', '--format=pprof', '-o', $file, $mem->{bin});
  is($rc, 0, 'memory: pprof written') or diag $err;
  my $base = quotemeta((split m{/}, $mem->{script})[-1]);

  my ($prc, $out) = pprof('-top', '-lines', '-sample_index=inuse_space', $file);
  is($prc, 0, 'memory: go tool pprof reads it') or diag $out;
  my @rows = top_rows($out);
  like($rows[0][1], qr/$base:$mem->{live_line}$/, "memory inuse_space: the live site, line $mem->{live_line}, first") or diag $out;
  ($prc, $out) = pprof('-top', '-lines', '-sample_index=alloc_space', $file);
  @rows = top_rows($out);
  like($rows[0][1], qr/$base:$mem->{garbage_line}$/, "memory alloc_space: the site allocating the most, line $mem->{garbage_line}, first") or diag $out;
  ($prc, $out) = pprof('-top', '-sample_index=inuse_objects', $file);
  like($out, qr/^Type: inuse_objects$/m, 'memory: inuse_objects');

  ($prc, $out) = pprof('-raw', $file);
  like($out, qr{^Samples:\nalloc_objects/count alloc_space/bytes\[dflt\] inuse_objects/count inuse_space/bytes$}m,
       'memory: the four sample types');
  my $t = json_report($mem->{bin})->{totals};
  my $sum = raw_totals($out);
  is($sum->{alloc_objects}, $t->{alloc_events} + $t->{realloc_events}, 'memory round trip: objects allocated (allocs + reallocs)');
  is($sum->{alloc_space}, $t->{alloc_bytes} + $t->{realloc_new_bytes}, 'memory round trip: bytes allocated');
  is($sum->{inuse_objects}, $t->{live_blocks}, 'memory round trip: blocks in use');
  is($sum->{inuse_space}, $t->{live_bytes}, 'memory round trip: bytes in use');

  ($prc, $out) = pprof('-top', '-sample_index=alloc_space', $file);
  like($out, qr/^Type: alloc_space$/m, 'memory: alloc_space is the default sample type');
  ($rc) = ljprof_out('report', '--format=pprof', '--leak-only', '-o', $file, $mem->{bin});
  ($prc, $out) = pprof('-top', $file);
  like($out, qr/^Type: inuse_space$/m, 'memory --leak-only: inuse_space is the default');

  # A damaged stream: the profile of what came before, and a comment.
  my $cut = scratch() . '/mem-cut.bin';
  open my $fh, '>:raw', $cut or die $!;
  my $whole = file_text($mem->{bin});
  print $fh substr($whole, 0, int(length($whole) * 0.7));
  close $fh;
  ($rc, undef, $err) = ljprof_out('report', '--format=pprof', '-o', $file, $cut);
  is($rc, 1, 'damaged: exit 1');
  ($prc, $out) = pprof('-comments', $file);
  like($out, qr/damaged stream, profile of what came before: .*offset \d+/, 'damaged: the comment says where') or diag $out;
}

{ # Labels: a loop compiled again after every jit.flush(), so that most
  # samples are in the compiler, each at work on trace 1.
  my $file = scratch() . '/labels.pb.gz';
  my ($rc, undef, $err) = ljprof_out('report', '--format=pprof', '-o', $file, compiler_profile()->{bin});
  is($rc, 0, 'labels: pprof written') or diag $err;
  my ($prc, $out) = pprof('-tags', $file);
  is($prc, 0, 'labels: go tool pprof -tags reads them') or diag $out;
  # A tag's values in milliseconds: { value => ms } and the total.
  my $ms = sub { my ($n, $u) = $_[0] =~ /^([\d.]+)(ms|s)$/ or return 0; $u eq 's' ? 1000 * $n : $n };
  my $tag = sub {
    my ($key) = @_;
    my ($total, $rows) = $out =~ /^ \Q$key\E: Total (\S+)\n(.*?)(?:\n\n|\z)/ms or return ({}, 0);
    return ({ map { /^\s+(\S+) \(.*\): (\S+)$/ ? ($2 => $ms->($1)) : () } split /\n/, $rows }, $ms->($total));
  };
  my ($by, $vm) = $tag->('vmstate');
  my ($trace) = $tag->('trace');
  my $compiler = ($by->{RECORD} // 0) + ($by->{OPT} // 0) + ($by->{ASM} // 0);
  cmp_ok($compiler, '>', 0.5 * $vm, "labels: most samples are the compiler's ($compiler of $vm ms)") or diag $out;
  # Among the compiler's samples alone (those of its trace's exits carry
  # the label too), including those after the trace is saved, while the
  # profilers are told of it.
  ($prc, $out) = pprof('-tags', "'-tagfocus=vmstate=RECORD|OPT|ASM'", $file);
  my ($in_compiler) = $tag->('trace');
  cmp_ok($in_compiler->{1} // 0, '==', $compiler, "labels: every compiler sample is labelled trace 1 ($compiler ms)") or diag $out;
  ($prc, $out) = pprof('-tagfocus=vmstate=ASM', '-nodefraction=0', '-top', $file);
  my ($kept) = $out =~ /^Showing nodes accounting for (\S+),/m;
  cmp_ok($ms->($kept // ''), '==', $by->{ASM}, "labels: -tagfocus=vmstate=ASM keeps the $by->{ASM} ms in the assembler") or diag $out;
  like($out, qr/\slj_asm_trace$/m, 'labels: ... and lj_asm_trace is among them') or diag $out;
}

{ # Application labels (sysprof v4): string labels on each sample, the
  # values escaped as the reports write them; -tags counts them, and
  # -tagfocus keeps one route's samples.
  my $head = symtab(sym_lfunc(0x100, '@app.lua', 1), sym_lfunc(0x200, '@costly.lua', 1));
  my $bin = scratch() . '/routes.bin';
  open my $fh, '>:raw', $bin or die $!;
  print $fh $head . sysprof(4, sp_config(MODE_C, 1000, 0),
    sp_labelset(1, ['route', '/costly']), sp_labelset(2, ['plugin', 'auth'], ['route', '/api']),
    sp_labelset(3, ['route', "a;b\n=c\xff"]),
    sp_labels(1), (sp_sample(LFUNC, f_lua(0x200, 3), f_lua(0x100, 10))) x 75,
    sp_labels(2), (sp_sample(LFUNC, f_lua(0x100, 5))) x 20,
    sp_labels(3), (sp_sample(LFUNC, f_lua(0x100, 7))) x 5,
    sp_stats(100, [0, 100], 0, 0, 100_000_000, 0));
  close $fh;
  my $file = scratch() . '/routes.pb.gz';
  my ($rc, undef, $err) = ljprof_out('report', '--format=pprof', '-o', $file, $bin);
  is($rc, 0, 'app labels: pprof written') or diag $err;
  my ($prc, $out) = pprof('-tags', $file);
  is($prc, 0, 'app labels: go tool pprof -tags reads them') or diag $out;
  my ($routes) = $out =~ /^ route: Total 100.0ms\n(.*?)(?:\n\n|\z)/ms;
  my %route = map { /^\s+(\S+)ms \(.*\): (\S+)$/ ? ($2 => $1) : () } split /\n/, $routes // '';
  is_deeply(\%route, {'/costly' => '75.0', '/api' => '20.0', 'a%3Bb%0A%3Dc%FF' => '5.0'},
            'app labels: -tags lists each route with its time, an odd value escaped') or diag $out;
  like($out, qr/^ plugin: Total 20.0ms\n\s+20.0ms \(\s*100%\): auth$/m, 'app labels: a second key on the samples that carry it');
  ($prc, $out) = pprof('-tagfocus=route=/api', '-nodefraction=0', '-top', $file);
  my ($kept) = $out =~ /^Showing nodes accounting for (\S+),/m;
  is($kept, '20ms', 'app labels: -tagfocus=route=/api keeps its 20 ms') or diag $out;
  like($out, qr/\s\@app.lua:1$/m, 'app labels: ... in its function') or diag $out;
  unlike($out, qr/costly/, 'app labels: ... and none of /costly') or diag $out;
}

done_testing();
