#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Damaged label records (docs/formats.md, "Labels"): a sysprof v4 and a
# memprof v6 stream cut at every byte offset (inside label sets too) give
# the usual truncated partial report; each rule's breach (a set out of
# order or past 1024, a set not announced, a set out of bounds, samples
# by set outside mode D) one clear line, exit 1, and the report of what
# came before; older versions know no label records.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();
my $head = symtab(sym_lfunc(0x100, '@t.lua', 1)) . prologue('ljp', 4);
my @records = (
  [sp_config(MODE_C, 1000, 0), 0],
  [sp_labelset(1, ['plugin', 'auth'], ['route', '/api']), 0],
  [sp_labels(1), 0],
  [sp_sample(LFUNC, f_lua(0x100, 3)), 1],
  [sp_labelset(2, ['route', "a;b\xff"]), 0],
  [sp_labels(2), 0],
  [sp_sample(LFUNC, f_lua(0x100, 4)), 1],
  [sp_labels(0), 0],
  [sp_sample(LFUNC, f_lua(0x100, 5)), 1],
  [sp_stats(3, [0, 3], 0, 0, 3_000_000, 0), 0],
);
my ($bin, $complete) = sysprof_items($head, @records);
my @complete = @$complete;
is(ljprof('report', write_file("$dir/full.bin", $bin))->{rc}, 0, 'sysprof v4: the whole stream is clean');
my $bad = check_every_cut($bin, length $head, \@complete, sub {
  my $n = 0;
  $n += $_->{count} for @{ $_[0]{stacks} };
  return $_[0]{samples_with_stacks} == $n ? $n : -1;
});
is($bad, 0, 'sysprof v4 cut at every offset (' . length($bin) . '), inside label sets too: truncated, every complete sample reported');

# Cut inside the second set: its samples' labels are the first set's.
my $cut = write_file("$dir/cut.bin", substr($bin, 0, $complete[3][0] + 5));
my $r = ljprof('report', $cut);
is($r->{rc}, 1, 'cut inside a label set: exit 1');
like($r->{err}, qr/truncated at offset \d+: expected .* \(label set: (key|value|number of labels)\)/, 'cut inside a label set: truncated, what was expected');
like($r->{out}, qr/^route=\/api: 1 \(100.0%\)$/m, 'cut inside a label set: the sample before it, with its labels');

# Memprof v6: the same, events with stacks under a set.
my $mhead = symtab(sym_lfunc(0x100, '@m.lua', 1)) . prologue('ljm', 6);
my ($mbin, $mcomplete) = memprof_items($mhead,
  info_config(1, 0), info_labelset(1, ['route', '/a']), upd_stack(1, sf_lua(0x100, 5)),
  info_labels(1), ev_stack(1, lua(0x100, 5), 1, 0x1000, 64),
  info_labelset(2, ['route', '/b'], ['tenant', 't1']), info_labels(2),
  ev_stack(1, lua(0x100, 5), 1, 0x2000, 32), ev_free(internal(), 0x1000, 64),
  info_stats(1, 0, 0, 0, 0, 0));
is(ljprof('report', write_file("$dir/mfull.bin", $mbin))->{rc}, 0, 'memprof v6: the whole stream is clean');
$bad = check_every_cut($mbin, length $mhead, $mcomplete, sub {
  my $t = $_[0]{totals};
  return $t->{alloc_events} + $t->{free_events} + $t->{realloc_events};
});
is($bad, 0, 'memprof v6 cut at every offset (' . length($mbin) . '): truncated, every complete event reported');

# Each rule broken: one line, exit 1, what came before reported.
my $ok = sp_config(MODE_C, 1000, 0) . sp_labelset(1, ['route', '/a']) . sp_labels(1) . sp_sample(LFUNC, f_lua(0x100, 3));
my $over = join('', map { sp_labelset($_, ['k', "v$_"]) } 2 .. 1024);
my @cases = (
  ['a set out of order', sp_labelset(3, ['k', 'v']), qr/label set: announced out of order, number \(3\)/],
  ['a set past 1024', $over . sp_labelset(1025, ['k', 'v']), qr/label set: past the sets a stream names, number \(1025\)/],
  ['a set not announced', sp_labels(2), qr/label set: names a set not announced, number \(2\)/],
  ['no labels', sp_labelset(2), qr/number of labels out of bounds \(0\)/],
  ['17 labels', sp_labelset(2, map { [sprintf('k%02d', $_), 'v'] } 1 .. 17), qr/number of labels out of bounds \(17\)/],
  ['an empty key', sp_labelset(2, ['', 'v']), qr/empty key, label \(1\)/],
  ['a key of 65 bytes', sp_labelset(2, ['k' x 65, 'v']), qr/label set: key is 65 bytes long \(the limit is 64\)/],
  ['a value of 256 bytes', sp_labelset(2, ['k', 'v' x 256]), qr/label set: value is 256 bytes long \(the limit is 255\)/],
  ['keys not sorted', sp_labelset(2, ['b', '1'], ['a', '2']), qr/keys not sorted or repeated, label \(2\)/],
  ['a key repeated', sp_labelset(2, ['a', '1'], ['a', '2']), qr/keys not sorted or repeated, label \(2\)/],
  ['samples by set in mode C', sp_labelcounts([1, 3]), qr/samples by label set outside mode D, record 0x1a/],
);
for my $c (@cases) {
  my ($what, $rec, $msg) = @$c;
  my $f = write_file("$dir/bad.bin", $head . $ok . $rec . sp_sample(LFUNC, f_lua(0x100, 9)) . "\x80");
  $r = ljprof('report', $f);
  is($r->{rc}, 1, "$what: exit 1");
  my @lines = split /\n/, $r->{err};
  ok(@lines == 1 && $lines[0] =~ /corrupt at offset \d+: / && $lines[0] =~ $msg, "$what: one clear line") or diag $r->{err};
  like($r->{out}, qr/^route=\/a: 1 \(100.0%\)$/m, "$what: the sample before, with its labels");
}
# A longer key: 64 bytes is the limit, and is read.
$r = ljprof('report', write_file("$dir/k64.bin", $head . $ok . sp_labelset(2, ['k' x 64, 'v' x 255]) . "\x80"));
is($r->{rc}, 0, 'a key of 64 bytes and a value of 255: read') or diag $r->{err};

# Memprof: a labels record naming no set, a set over the bounds.
$r = ljprof('report', write_file("$dir/mbad.bin", $mhead . info_config(1, 0) . info_labels(4) . "\x80"));
like($r->{err}, qr/label set: names a set not announced, number \(4\)/, 'memprof: a set not announced');
is($r->{rc}, 1, 'memprof: a set not announced: exit 1');

# Versions before labels know none of their records.
my $v3 = write_file("$dir/v3.bin", symtab() . prologue('ljp', 3) . sp_labelset(1, ['k', 'v']) . "\x80");
like(ljprof('report', $v3)->{err}, qr/unknown sysprof record 0x18/, 'sysprof v3: a label set is an unknown record');
my $v5 = write_file("$dir/v5.bin", symtab() . prologue('ljm', 5) . info_labelset(1, ['k', 'v']) . "\x80");
like(ljprof('report', $v5)->{err}, qr/unknown info record 5/, 'memprof v5: a label set is an unknown info record');
my $v5s = write_file("$dir/v5s.bin", symtab() . prologue('ljm', 5) . info_stats(0, 0, 0, 0, 0, 0) . "\x80");
like(ljprof('report', $v5s)->{err}, qr/unknown (info record|event)|corrupt/, 'memprof v5: stats with a folded count are not v5\'s');

done_testing();
