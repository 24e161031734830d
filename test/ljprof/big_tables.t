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

done_testing();
