#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Report options: --leak-only, --sort, --top, --human-readable, -o, stdin.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();
my @ev;
# @big.lua:1: 2 allocs of 3 MiB (one freed); @many.lua:2: 10 allocs of 100 B
# (all live); @mid.lua:3: 4 allocs of 1536 B (all freed).
push @ev, ev_alloc(lua(0x100, 1), 0x100000 * ($_ + 1), 3 << 20) for 0 .. 1;
push @ev, ev_alloc(lua(0x200, 2), 0x10000 + $_ * 0x80, 100) for 0 .. 9;
push @ev, ev_alloc(lua(0x300, 3), 0x20000 + $_ * 0x800, 1536) for 0 .. 3;
push @ev, ev_free(internal(), 0x100000, 3 << 20);
push @ev, ev_free(internal(), 0x20000 + $_ * 0x800, 1536) for 0 .. 3;
my $file = write_file("$dir/opts.bin",
  symtab(sym_lfunc(0x100, '@big.lua', 1), sym_lfunc(0x200, '@many.lua', 1),
         sym_lfunc(0x300, '@mid.lua', 1)) . memprof(@ev));

sub section {
  my ($text, $name) = @_;
  return $text =~ /^\Q$name\E\n(.*?)(?:\n\n|\z)/ms ? $1 : '';
}
sub names { return map { /^(\S+?):? / ? $1 : () } grep { !/^\t/ } split /\n/, $_[0] }

my $text = ljprof('report', $file)->{out};
is_deeply([names(section($text, 'ALLOCATIONS'))], ['@big.lua:1', '@mid.lua:3', '@many.lua:2'],
          'default: sorted by bytes');
$text = ljprof('report', '--sort=events', $file)->{out};
is_deeply([names(section($text, 'ALLOCATIONS'))], ['@many.lua:2', '@mid.lua:3', '@big.lua:1'],
          '--sort=events: sorted by events');
$text = ljprof('report', '--sort', 'bytes', $file)->{out};
is_deeply([names(section($text, 'ALLOCATIONS'))], ['@big.lua:1', '@mid.lua:3', '@many.lua:2'],
          '--sort bytes (separate value)');

$text = ljprof('report', '--top', '1', $file)->{out};
is(section($text, 'ALLOCATIONS'),
   "\@big.lua:1: 2 events (12.5%)  Allocated: 6291456 bytes (99.9%)  Freed: 0 bytes\n... 2 more locations",
   '--top 1: one line per section and a count of the rest');
my $heap = section($text, 'HEAP SUMMARY');
is(scalar(() = $heap =~ /holds/g), 1, '--top 1 limits HEAP SUMMARY too');

$text = ljprof('report', '--human-readable', $file)->{out};
like($text, qr/^\@big\.lua:1: 2 events \(12\.5%\)  Allocated: 6\.0 MiB \(99\.9%\)  Freed: 0 B$/m,
     '--human-readable: MiB, and B for zero');
like($text, qr/^\@mid\.lua:3: 4 events \(25\.0%\)  Allocated: 6\.0 KiB /m, '--human-readable: KiB');
like($text, qr/^\@many\.lua:2 holds 1000 B \(/m, '--human-readable: B under 1 KiB');
like($text, qr/^\@big\.lua:1 holds 3\.0 MiB /m, '--human-readable: HEAP SUMMARY');

my $r = ljprof('report', '--leak-only', $file);
is($r->{rc}, 0, '--leak-only: exit 0');
is($r->{out},
   "HEAP SUMMARY\n"
 . "\@big.lua:1 holds 3145728 bytes (100.0%) in 1 block: 2 allocs, 1 free\n"
 . "\@many.lua:2 holds 1000 bytes (0.0%) in 10 blocks: 10 allocs, 0 frees\n",
   '--leak-only: only the sites that still hold memory, nothing else');

$r = ljprof_json('--leak-only', $file);
is_deeply([map { $_->{location} } @{ $r->{json}{locations} }], ['@big.lua:1', '@many.lua:2'],
          'JSON --leak-only: only live sites, by live bytes');
$r = ljprof_json('--top=2', '--sort=events', $file);
is_deeply([map { $_->{location} } @{ $r->{json}{locations} }], ['@many.lua:2', 'INTERNAL'],
          'JSON --top 2 --sort=events');

$r = ljprof('report', '-o', "$dir/out.txt", $file);
is($r->{rc}, 0, '-o: exit 0');
is($r->{out}, '', '-o: nothing on stdout');
open my $fh, '<', "$dir/out.txt" or die;
my $written = do { local $/; <$fh> };
is($written, ljprof('report', $file)->{out}, '-o: the file holds the report');
$r = ljprof('report', '--format=json', "--output=$dir/out.json", $file);
ok(-s "$dir/out.json" && $r->{rc} == 0, '--output= with JSON');

$r = ljprof({ stdin => $file }, 'report', '-');
is($r->{rc}, 0, 'stdin: exit 0');
like($r->{out}, qr/^MEMPROF REPORT: <stdin>$/m, 'stdin: named <stdin>');
like($r->{out}, qr/^\@many\.lua:2: 10 events/m, 'stdin: decoded');

done_testing();
