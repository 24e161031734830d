#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Names: how each kind of location is printed, and that an event is named by
# the binding in force when it happened (symtab updates rebind addresses).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();
my $chunk = "local t = {}\nfor i = 1, 10 do t[i] = i end\nreturn t";

my $bin = symtab(
  sym_lfunc(0x100, '@old.lua', 1),
  sym_lfunc(0x300, '=stdin', NO_LINE),   # first line -1: a 10-byte ULEB128
  sym_lfunc(0x500, $chunk, 0),
  sym_cfunc(0x7000, 'first_c'),
) . memprof(
  ev_alloc(lua(0x100, 3), 0x1000, 10),
  upd_lfunc(0x100, '@new.lua', 1),        # the address now names a new proto
  ev_alloc(lua(0x100, 3), 0x1100, 20),
  ev_alloc(lua(0x100, 3), 0x1200, 20),
  upd_trace(5, 0x100, 8),                 # a trace starting in @new.lua
  ev_alloc(trace(5), 0x1300, 30),
  upd_lfunc(0x100, '@third.lua', 1),      # the trace keeps its start name
  ev_alloc(trace(5), 0x1400, 30),
  upd_trace(5, 0x100, 12),                # trace number reused
  ev_alloc(trace(5), 0x1500, 40),
  ev_alloc(cfunc(0x7000), 0x1600, 50),
  upd_cfunc(0x7000, 'second_c'),
  ev_alloc(cfunc(0x7000), 0x1700, 60),
  ev_alloc(lua(0x400, 1), 0x1800, 70),    # not in the symtab yet
  upd_lfunc(0x400, '@late.lua', 1),
  ev_alloc(lua(0x400, 1), 0x1900, 80),
  ev_alloc(lua(0x300, 2), 0x2000, 90),
  ev_alloc(lua(0x100, NO_LINE), 0x2100, 100),  # line -1 while recording
  ev_alloc(lua(0x500, 2), 0x2200, 110),
  ev_alloc(lua(0x500, 3), 0x2300, 120),
  ev_alloc(trace(6), 0x2400, 130),
  upd_trace(7, 0x999, 4),                 # starts in an unknown proto
  ev_alloc(trace(7), 0x2500, 140),
);
my $file = write_file("$dir/symbols.bin", $bin);

my $r = ljprof_json($file);
is($r->{rc}, 0, 'exit 0');
my %loc = %{ $r->{loc} };
my %want = (
  '@old.lua:3' => [1, 10],
  '@new.lua:3' => [2, 40],
  'TRACE [5] started at @new.lua:8' => [2, 60],
  'TRACE [5] started at @third.lua:12' => [1, 40],
  'first_c' => [1, 50],
  'second_c' => [1, 60],
  '@<unknown proto 0x400>:1' => [1, 70],
  '@late.lua:1' => [1, 80],
  '=stdin:2' => [1, 90],
  '@third.lua:-1' => [1, 100],
  "$chunk:2" => [1, 110],
  "$chunk:3" => [1, 120],
  'TRACE [6]' => [1, 130],
  'TRACE [7] started at @<unknown proto 0x999>:4' => [1, 140],
);
for my $name (sort keys %want) {
  my $l = $loc{$name};
  (my $shown = $name) =~ s/\n/\\n/g;
  ok($l, "JSON names '$shown'") or next;
  is_deeply([$l->{alloc_events}, $l->{alloc_bytes}], $want{$name},
            "'$shown': $want{$name}[0] events, $want{$name}[1] bytes");
}
is(scalar keys %loc, scalar keys %want, 'no other locations');

my $text = ljprof('report', $file)->{out};
like($text, qr/^CHUNK 1:3: 1 event .*Allocated: 120 bytes/m, 'text: a multi-line chunk gets an alias');
like($text, qr/^CHUNK 1:2: 1 event .*Allocated: 110 bytes/m, 'text: same alias for the same chunk');
like($text, qr/^ALIASES\nCHUNK 1: \Q$chunk\E$/m, 'text: ALIASES lists the source text');
unlike($text, qr/^local t = \{\}:/m, 'text: the source text is not a location');
like($text, qr/^TRACE \[5\] started at \@new\.lua:8: 2 events/m, 'text: trace names');
like($text, qr/^\@<unknown proto 0x400>:1: 1 event/m, 'text: a proto missing from the symtab');

done_testing();
