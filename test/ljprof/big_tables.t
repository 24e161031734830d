#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Profiles whose tables outgrow 2 MiB, where the reader maps them in huge
# pages and grows its arrays by moving their pages (util.c): every stack,
# count and live block read back as written, alone and merged.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();

# -- A CPU profile of 60000 stacks of ten Lua lines each ----------------
# Its frames (600000, 16 bytes each) and the decoder's copy of them pass
# 2 MiB, then double twice; stack k is sampled (k % 3) + 1 times, the
# repeats in later rounds, so that the decoder's cache meets them again.
my $nstacks = 60000;
my (@rounds, %want);
for my $k (0 .. $nstacks - 1) {
  my $base = $k * 10 + 1;
  my $sample = sp_sample(LFUNC, (map { f_lua(0x100, $base + $_) } 0 .. 9), f_native(0x401050));
  my $times = $k % 3 + 1;
  push @{ $rounds[$_] }, $sample for 0 .. $times - 1;
  my $stack = join(';', 'main', map { '@a.lua:' . ($base + 9 - $_) } 0 .. 9);
  $want{$stack} = $times;
}
my $cpu = write_file("$dir/many-stacks.bin",
  symtab(sym_lfunc(0x100, '@a.lua', 1), sym_cfunc(0x401000, 'main'))
  . sysprof(3, sp_config(MODE_C, 1000, 0), map { @$_ } @rounds));
cmp_ok(-s $cpu, '>', 4 << 20, 'the CPU profile is larger than 4 MiB');

# Stacks by their collapsed line, and whether each line was a stack.
sub collapsed {
  my %got;
  my $bad = 0;
  for (split /\n/, $_[0]) {
    if (/^(\S+) (\d+)$/) { $got{$1} += $2 } else { $bad++ }
  }
  return (\%got, $bad);
}

sub same_stacks {
  my ($r, $times, $what) = @_;
  is($r->{rc}, 0, "$what: exit 0") or diag $r->{err};
  my ($got, $bad) = collapsed($r->{out});
  is($bad, 0, "$what: every line a stack and its count");
  is(scalar keys %$got, $nstacks, "$what: $nstacks stacks");
  my ($missing, $wrong) = (0, 0);
  for my $s (keys %want) {
    if (!exists $got->{$s}) { $missing++ }
    elsif ($got->{$s} != $want{$s} * $times) { $wrong++ }
  }
  is($missing, 0, "$what: none missing");
  is($wrong, 0, "$what: each counted " . ($times == 1 ? 'as written' : "$times times as written"));
}

same_stacks(ljprof('report', '--format=collapsed', $cpu), 1, 'one profile');
{
  local $ENV{LJPROF_JOBS} = '2';
  same_stacks(ljprof('report', '--format=collapsed', $cpu, $cpu, $cpu), 3,
              'merged thrice on threads');
}
{
  local $ENV{LJPROF_JOBS} = '1';
  same_stacks(ljprof('report', '--format=collapsed', $cpu, $cpu), 2, 'merged twice on one thread');
}

# -- A memory profile of 300000 live blocks -----------------------------
# The live table (16 bytes a slot, at most half full) passes 2 MiB.
my @ev;
push @ev, ev_alloc(lua(0x100, 5), 0x10000000 + $_ * 0x40, 32) for 0 .. 199_999;
push @ev, ev_alloc(lua(0x200, 7), 0x40000000 + $_ * 0x20, 16) for 0 .. 99_999;
# Every third block of @test.lua:5 freed, then one realloc'd by a C function.
push @ev, ev_free(internal(), 0x10000000 + $_ * 0xc0, 32) for 0 .. 66_666;
push @ev, ev_realloc(cfunc(0x7000), 0x40000000, 16, 0x70000000, 64);
my $mem = write_file("$dir/many-blocks.bin",
  symtab(sym_lfunc(0x100, '@test.lua', 1), sym_lfunc(0x200, '@a.lua', 3),
         sym_cfunc(0x7000, 'cmod_alloc'))
  . memprof(@ev));

my $r = ljprof_json($mem);
is($r->{rc}, 0, 'memory profile: exit 0') or diag $r->{err};
my %loc = %{ $r->{loc} };
my %expect = (
  '@test.lua:5' => { alloc_events => 200_000, live_blocks => 200_000 - 66_667,
                     live_bytes => (200_000 - 66_667) * 32, allocs_freed => 66_667 },
  '@a.lua:7' => { alloc_events => 100_000, live_blocks => 100_000, live_bytes => 99_999 * 16 + 64 },
  'INTERNAL' => { free_events => 66_667, freed_bytes => 66_667 * 32 },
  'cmod_alloc' => { realloc_events => 1, realloc_new_bytes => 64 },
);
for my $name (sort keys %expect) {
  for my $k (sort keys %{ $expect{$name} }) {
    is($loc{$name}{$k}, $expect{$name}{$k}, "$name: $k = $expect{$name}{$k}");
  }
}

# -- Streams merged one after the other on a thread ---------------------
# The table of live blocks the profile above leaves (233334 blocks in a
# million slots) goes, emptied, to the next stream its thread reads. That
# one is another process: it frees 1000 blocks at addresses the first
# still held (blocks from before its start: nobody's) and holds one of 8
# bytes at the address of one. A table not emptied would give the first
# stream's blocks to it: its frees would be of @test.lua:5's blocks, and
# its live blocks the first's.
my $other = write_file("$dir/other-process.bin",
  symtab(sym_lfunc(0x300, '@b.lua', 1))
  . memprof((map { ev_free(internal(), 0x10000000 + (3 * $_ + 1) * 0x40, 32) } 0 .. 999),
            ev_alloc(lua(0x300, 2), 0x10000000 + 0x80, 8)));

sub reused_table {
  my ($r, $times, $what) = @_;
  is($r->{rc}, 0, "$what: exit 0") or diag $r->{err};
  my %loc = %{ $r->{loc} };
  is($loc{'@test.lua:5'}{live_blocks}, $times * 133_333, "$what: \@test.lua:5 holds its own blocks, no more");
  is($loc{'@test.lua:5'}{allocs_freed}, $times * 66_667, "$what: \@test.lua:5's blocks freed by its own process only");
  is($loc{'@a.lua:7'}{live_blocks}, $times * 100_000, "$what: \@a.lua:7 holds its own blocks");
  is($loc{'@b.lua:2'}{live_bytes}, $times * 8, "$what: \@b.lua:2 holds 8 bytes a process");
  is($loc{'INTERNAL'}{free_events}, $times * 67_667, "$what: every free counted");
}
{
  local $ENV{LJPROF_JOBS} = '1';
  reused_table(ljprof_json($mem, $other), 1, 'merged on one thread');
}
{
  # Each of the two threads reads one of the first two, then one of the others.
  local $ENV{LJPROF_JOBS} = '2';
  reused_table(ljprof_json($mem, $mem, $other, $other), 2, 'merged on two threads');
}

done_testing();
