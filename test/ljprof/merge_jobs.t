#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Memory profiles merged on several threads (LJPROF_JOBS, default the
# processors online) give what reading them one after the other gives
# (LJPROF_JOBS=1), byte for byte, in every format, with the same
# messages and exit status: streams of processes at other addresses, with
# stacks, labels, sampling, time marks; damaged and truncated ones, a file
# missing, a stream of another kind, CPU profiles (read in order); and a
# bad LJPROF_JOBS is refused, saying why.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();
my $corpus = "$FindBin::Bin/../../tools/ljprof/fuzz/corpus";

# A process of the same program (its code at $base): allocations from
# several lines and C functions, reallocations and frees of its own blocks
# and of some from before the start, under two label sets, with stacks;
# $damage, if any, written after the first half of the events.
sub process_stream {
  my ($base, $pid, $events, $damage) = @_;
  my @syms = map { sym_lfunc($base + 0x100 * $_, "\@mod$_.lua", 10 * $_) } 1 .. 6;
  my @ev = (info_config(1, 0), info_process($pid, "host-$pid", 1_700_000_000_000_000_000 + $pid),
            info_labelset(1, ['route', '/a']), info_labelset(2, ['route', "/p$pid"]),
            upd_stack(1, sf_lua($base + 0x100, 11), sf_cfunc($base + 0x9000)),
            upd_stack(2, sf_lua($base + 0x300, 31), sf_lua($base + 0x100, 12)));
  my @live;
  for my $i (1 .. $events) {
    my $proto = $base + 0x100 * (1 + $i % 6);
    my $line = 10 * (1 + $i % 6) + $i % 3;
    push @ev, info_labels(1 + $i % 3 % 2) if $i % 7 == 0;
    push @ev, info_mark(1000 * $i) if $i % 50 == 0;
    push @ev, $damage if $damage && $i == int($events / 2);
    if ($i % 5 == 4 && @live) {
      my $a = shift @live;
      push @ev, ev_free(lua($proto, $line), $a, 16);
    } elsif ($i % 11 == 3 && @live) {
      my $a = shift @live;
      push @ev, ev_stack(3, lua($proto, $line), $i % 2 + 1, $a, 16, 0x7f0000000000 + 16 * $i, 16);
      push @live, 0x7f0000000000 + 16 * $i;
    } elsif ($i % 13 == 0) {
      push @ev, ev_free(cfunc($base + 0x9000), 0x6000 + $i, 8);    # from before the start
    } else {
      push @ev, ev_stack(1, $i % 9 ? lua($proto, $line) : cfunc($base + 0x9000 + 0x40 * ($i % 4)),
                         $i % 2 + 1, 0x7f0000000000 + 16 * $i, 16);
      push @live, 0x7f0000000000 + 16 * $i;
    }
  }
  my @cfuncs = map { sym_cfunc($base + 0x9000 + 0x40 * $_, "cfn$_") } 0 .. 2;
  return symtab(@syms, @cfuncs) . memprof_v6(@ev, info_stats(2, 0, 0, 0, 0, 0));
}

# A CPU profile of a process of that program (v4): samples in the
# interpreter, C and traces under two label sets, the compiler's attempts
# (compiled, aborted, one under way at the end), exits, a flush; with
# $blacklist_only, the line its others blacklist has no attempt of its own
# there (started before the profile), so a merge counts that
# blacklisting on the start the streams before saw.
sub cpu_stream {
  my ($base, $pid, $samples, $blacklist_only) = @_;
  my ($M, $F) = ($base + 0x100, $base + 0x200);
  my @r = (sp_config(MODE_C, 1000, 2), sp_process($pid, "host-$pid", 1_700_000_000_000_000_000 + $pid), sp_jit(1),
           sp_labelset(1, ['route', '/a']), sp_labelset(2, ['route', "/p$pid"]));
  push @r, sp_start(1, 0, 0, 0, $M, 12), sp_jit_sample(RECORD, 1, 0, f_native($base + 0x500), f_lua($M, 12)),
           sp_abort(1, $M, 14, 10, "NYI: bytecode $pid") unless $blacklist_only;
  push @r, sp_blacklist($M, 12);
  for my $i (1 .. $samples) {
    push @r, sp_labels(1 + $i % 3 % 2) if $i % 7 == 0;
    push @r, $i % 5 == 0 ? sp_sample(CFUNC, f_native($base + 0x600 + 0x10 * ($i % 3)), f_lua($F, 11 + $i % 4), f_lua($M, 20))
           : $i % 3 == 0 ? sp_sample(TRACE, f_trace(2, $F, 11), f_lua($M, 20 + $i % 2))
           : sp_sample(LFUNC, f_lua($F, 10 + $i % 6), f_lua($M, 20 + $i % 3));
    push @r, sp_start(2 + $i, 0, 0, 0, $F, 11 + $i % 3), sp_jit_sample(OPT, 2 + $i, 0, f_native($base + 0x500), f_lua($F, 11)),
             $i % 80 ? sp_abort(2 + $i, $F, 13, 10, 'NYI: FastFunc') : sp_end(2 + $i, 2, 2, 40, 300) if $i % 40 == 0;
    push @r, sp_exits([2, 3, $i, $F, 11], [2, 1, 1, $F, 12 + $pid % 2]) if $i % 25 == 0;
  }
  push @r, sp_flush(1), sp_start(999, 1, 2, 3, $F, 11), sp_jit_sample(RECORD, 999, 0, f_native($base + 0x500), f_lua($F, 11));
  return symtab(sym_lfunc($M, '@m.lua', 0), sym_lfunc($F, '@m.lua', 10), sym_cfunc($base + 0x600, 'cfn')) .
         sysprof(4, @r);
}

my @cpus = map { write_file("$dir/cpu$_.bin", cpu_stream(0x5500000000 * $_, 200 + $_, 300 + 41 * $_, $_ % 2 == 0)) } 1 .. 4;
my $cpu_cut = write_file("$dir/cpu-cut.bin", substr(cpu_stream(0x5500000000 * 5, 205, 400), 0, 3000));

my @procs = map { write_file("$dir/proc$_.bin", process_stream(0x5500000000 * $_, 100 + $_, 400 + 37 * $_)) } 1 .. 5;
my $whole = process_stream(0x5500000000 * 6, 106, 500);
my $cut = write_file("$dir/cut.bin", substr($whole, 0, int(length($whole) * 2 / 3)));
my $corrupt = write_file("$dir/corrupt.bin", process_stream(0x5500000000 * 7, 107, 500, "\x1C\x63"));
my $missing = "$dir/missing.bin";
my $c = sub { map { "$corpus/$_.bin" } @_ };

my %sets = (
  'five processes' => [@procs],
  'with a truncated and a corrupt one' => [$procs[0], $cut, $procs[1], $corrupt, $procs[2]],
  'a truncated one first' => [$cut, @procs[0, 1]],
  'a file missing first' => [$missing, @procs[0, 1]],
  'a file missing between' => [$procs[0], $missing, $procs[1]],
  'v3 and v4 of the corpus' => [$c->(qw(alloc-each-source realloc-free symtab-updates line-minus-one
                                        truncated bare-memprof empty memprof-v4 memprof-v4-vm))],
  'v5 and v6 of the corpus' => [$c->(qw(memprof-v5-stacks memprof-v5-marks memprof-v5-cut-stack
                                        memprof-v5-mark-back memprof-v6-labels)), $procs[3]],
  'sampled ones' => [$c->(qw(memprof-v5-sampled memprof-v5-sampled-marks memprof-v5-sampled))],
  'a CPU profile among them' => [@procs[0, 1], $c->('sysprof-v3'), $procs[2]],
  'CPU profiles' => [$c->(qw(sysprof-v3 sysprof-inline sysprof-truncated sysprof-line-unknown))],
  'CPU profiles of the corpus' => [$c->(qw(sysprof sysprof-v2 sysprof-mode-d sysprof-repeated sysprof-v4-labels
                                          sysprof-v4-mode-d))],
  'CPU profiles of four processes' => [@cpus],
  'CPU profiles, a cut one, a memory one' => [@cpus[0, 1], $cpu_cut, $cpus[2], $procs[0]],
  'a heap snapshot, then CPU profiles' => [$c->('heap-snapshot'), @cpus[1, 0]],
  'a heap snapshot first' => [$c->('heap-snapshot'), @procs[0, 1]],
  'not a profile, then memory ones' => [$c->('empty'), "$corpus/../gen-corpus", @procs[0, 1]],
  'v3 then v5' => [$c->('realloc-free'), $procs[0]],
);

my @formats = (['--format=text'], ['--format=json'], ['--format=collapsed'], ['--format=pprof'],
               ['--format=speedscope'], ['--leak-only', '--format=text'], ['--by=route'],
               ['--sort=events', '--format=json'], ['--format=collapsed', '--root=process'],
               ['--jit'], ['--jit', '--format=json']);
for my $name (sort keys %sets) {
  for my $args (@formats) {
    my %r;
    for my $jobs (1, 2, 3) {
      local $ENV{LJPROF_JOBS} = $jobs;
      $r{$jobs} = ljprof('report', @$args, @{ $sets{$name} });
    }
    my $what = "$name, @$args";
    is_deeply($r{2}, $r{1}, "$what: two threads as one");
    is_deeply($r{3}, $r{1}, "$what: three threads as one");
  }
}

# What the sets hold, so that the comparisons above compare something.
{
  local $ENV{LJPROF_JOBS} = 2;
  my $r = ljprof_json(@procs);
  is(scalar @{ $r->{json}{streams} }, 5, 'five processes: five streams');
  $r = ljprof('report', $procs[0], $cut, $procs[1], $corrupt, $procs[2]);
  is($r->{rc}, 1, 'damaged ones: exit 1');
  like($r->{err}, qr/^ljprof: \Q$cut\E: truncated/m, 'the truncated one: said');
  like($r->{err}, qr/^ljprof: \Q$corrupt\E: corrupt/m, 'the corrupt one: said');
  like($r->{out}, qr/^MEMPROF REPORT: /, 'damaged ones: a report still');
  $r = ljprof('report', $missing, @procs[0, 1]);
  like($r->{err}, qr/^ljprof: \Q$missing\E: No such file/m, 'a file missing: said');
  $r = ljprof('report', @procs[0, 1], "$corpus/sysprof-v3.bin", $procs[2]);
  is($r->{rc}, 2, 'a CPU profile among memory ones: exit 2');
  like($r->{err}, qr/only streams of one kind merge/, 'a CPU profile among memory ones: said');
  $r = ljprof('report', $c->(qw(sysprof-v3 sysprof-line-unknown)));
  like($r->{out}, qr/^SYSPROF REPORT: /, 'CPU profiles: reported');
  my %one = map { $_ => ljprof_json('--jit', $_)->{json} } @cpus;
  my $all = ljprof_json('--jit', @cpus)->{json};
  my $sum = sub { my $k = shift; my $n = 0; $n += $one{$_}{$k} for @cpus; $n };
  is($all->{samples}, $sum->('samples'), 'four CPU profiles: their samples summed');
  is($all->{compiled}, $sum->('compiled'), 'four CPU profiles: their traces compiled summed');
  ok($all->{compiled} > 0 && $all->{aborted} > 0, 'four CPU profiles: traces compiled and aborted');
  is($all->{exits_taken}, $sum->('exits_taken'), 'four CPU profiles: their exits summed');
  my ($start) = grep { $_->{location} eq '@m.lua:12' && $_->{kind} eq 'trace' } @{ $all->{starts} };
  is($start->{blacklisted}, 4, 'four CPU profiles: the start at line 12 blacklisted in each, '
     . 'where two saw no attempt of their own');
  is($all->{blacklisted}, 4, 'four CPU profiles: four blacklistings');
}

for my $jobs ('0', 'two', '-1', '257', '') {
  local $ENV{LJPROF_JOBS} = $jobs;
  my $r = ljprof('report', @procs[0, 1]);
  if ($jobs eq '') {
    is($r->{rc}, 0, 'LJPROF_JOBS empty: the processors online');
    next;
  }
  is($r->{rc}, 2, "LJPROF_JOBS=$jobs: exit 2");
  like($r->{err}, qr/^ljprof: LJPROF_JOBS=\Q$jobs\E: not a number of threads from 1 to 256$/m,
       "LJPROF_JOBS=$jobs: said");
}

done_testing();
