#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# A long input, or one from a pipe, is aggregated on a second thread (the
# event pipe), unless LJPROF_JOBS=1: its reports are those of one thread,
# damaged or not.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();
my $GiB = 1 << 30;

# Ownership across reallocations, memory from before the profile, blocks
# of 4 GiB and more (kept apart by the live-block table), a rebinding.
my @ev;
push @ev, ev_alloc(lua(0x100, 5), 0x10000 + $_ * 0x40, 32 + $_) for 0 .. 199;
push @ev, ev_free(internal(), 0x10000 + $_ * 0x40, 32 + $_) for 0 .. 49;
push @ev, ev_realloc(lua(0x100, 9), 0x10000 + $_ * 0x40, 32 + $_, 0x90000 + $_ * 0x40, 64) for 50 .. 79;
push @ev, ev_free(cfunc(0x7000), 0xdead00, 100);
push @ev, ev_alloc(cfunc(0x7000), 0x100000, 5 * $GiB);
push @ev, ev_alloc(trace(1), 0x200000, 4 * $GiB - 1);
push @ev, ev_realloc(trace(1), 0x200000, 4 * $GiB - 1, 0x300000, 4 * $GiB);
push @ev, ev_alloc(internal(), 0x100000, 7);   # replaces the 5 GiB block
push @ev, upd_lfunc(0x100, '@other.lua', 1);
push @ev, ev_alloc(lua(0x100, 5), 0x400000, 8);
my $stream = symtab(sym_lfunc(0x100, '@test.lua', 1), sym_cfunc(0x7000, 'cmod_alloc'),
                    sym_trace(1, 0x100, 10)) . memprof(@ev);

# The same report from a file (one thread: it is short) and from a pipe.
sub from_file_and_pipe {
  my ($name, $bin, @opts) = @_;
  my $file = "$dir/$name.bin";
  open my $fh, '>:raw', $file or die; print $fh $bin; close $fh;
  my $direct = ljprof('report', @opts, $file);
  my $piped = `cat '$file' | ljprof report @opts - 2>'$dir/$name.err'`;
  my $rc = $? >> 8;
  s/^(MEMPROF REPORT: .*|  "source": .*)\n//m for $direct->{out}, $piped;
  is($piped, $direct->{out}, "$name @opts: the same report from a pipe");
  is($rc, $direct->{rc}, "$name @opts: the same exit status");
  return $direct;
}

my $r = from_file_and_pipe('whole', $stream);
is($r->{rc}, 0, 'whole: exit 0');
unlike($r->{out}, qr/^cmod_alloc holds/m, 'a replaced 5 GiB block is gone');
like($r->{out}, qr/^TRACE \[1\] started at \@test\.lua:10 holds 4294967296 bytes \(.*\) in 1 block/m,
     'a 4 GiB block keeps its size and owner');
from_file_and_pipe('whole', $stream, '--format=json');
from_file_and_pipe('whole', $stream, '--leak-only', '--human-readable');

# Cut inside an event: the report of what came before, exit 1.
$r = from_file_and_pipe('cut', substr($stream, 0, length($stream) - 3));
is($r->{rc}, 1, 'cut: exit 1');
like($r->{err}, qr/truncated at offset \d+/, 'cut: the offset of the damage');

# A long stream (8 MiB): a second thread even from a file. Every block of
# 24 bytes allocated at @long.lua:3 is freed by the VM but the last 1000.
my $n = 500_000;
my $long = join('', map { ev_alloc(lua(0x500, 3), 0x7f0000000000 + $_ * 32, 24) } 0 .. $n - 1)
         . join('', map { ev_free(internal(), 0x7f0000000000 + $_ * 32, 24) } 0 .. $n - 1001);
my $file = "$dir/long.bin";
open my $fh, '>:raw', $file or die;
print $fh symtab(sym_lfunc(0x500, '@long.lua', 1)) . memprof($long);
close $fh;
cmp_ok(-s $file, '>', 4 << 20, 'the long stream is over 4 MiB');
$r = ljprof('report', $file);
is($r->{rc}, 0, 'long: exit 0');
like($r->{out}, qr/^Totals: $n allocations \(@{[24 * $n]} bytes\), 0 reallocations \(\+0 bytes \/ -0 bytes\), @{[$n - 1000]} frees \(@{[24 * ($n - 1000)]} bytes\); live at the end: 24000 bytes in 1000 blocks$/m,
     'long: totals');
like($r->{out}, qr/^\@long\.lua:3 holds 24000 bytes \(100\.0%\) in 1000 blocks: $n allocs, @{[$n - 1000]} frees$/m,
     'long: the heap summary');

# LJPROF_JOBS=1: one thread in all, the long stream counted on the thread
# that decodes it (strace counts the threads started), the report the same.
SKIP: {
  skip 'strace cannot trace here (none, or ptrace refused)', 4
    unless system('strace -f -qq -e trace=none -o /dev/null true >/dev/null 2>&1') == 0;
  my %threads;
  for my $jobs ('', 1) {
    local $ENV{LJPROF_JOBS} = $jobs;
    my $trace = "$dir/trace-$jobs";
    my $t = run_program('strace', '-f', '-qq', '-e', 'trace=clone,clone3', '-o', $trace,
                        'ljprof', 'report', $file);
    is($t->{out}, $r->{out}, "LJPROF_JOBS='$jobs': the long stream's report");
    $threads{$jobs} = () = LJProf::Run::slurp($trace) =~ /^\d+\s+clone3?\(/mg;
  }
  is($threads{''}, 1, 'the long stream: one thread started, to count');
  is($threads{1}, 0, 'LJPROF_JOBS=1: no thread started');
}

done_testing();
