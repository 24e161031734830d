#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Damaged sysprof streams: a small v3 stream cut at every byte offset, and
# corrupt values. Each gets one line on stderr naming the offset and what
# was expected, exit 1, and the report of every sample complete before it.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();
my $head = symtab(sym_lfunc(0x5612ab000100, '@t.lua', 1), sym_cfunc(0x401000, 'main')) . prologue('ljp', 3);
# A trace with a frame inlined into the one it was entered in (tag 6).
my $inlined_head = chr(TRACE) . f_native(0x7f0000001010) . substr(f_trace_lua(2, 0x5612ab000100, 9, 2), 0, -1);
my $inlined = $inlined_head . uleb(2) . f_lua(0x5612ab000200, 5) . f_lua(0x5612ab000100, 3) . f_native(0x401010) . "\x80";
my @records = (
  [sp_config(MODE_C, 1000, 0), 0],
  [sp_ffname(1, 'assert'), 0],
  [sp_sample(LFUNC, f_lua(0x5612ab000100, 3), f_native(0x401010)), 1],
  [sp_upd_lfunc(0x5612ab000200, '@u.lua', 4), 0],
  [sp_sample(FFUNC, f_ffunc(1), f_lua(0x5612ab000200, 5), f_native(0x401010)), 1],
  [sp_upd_cfunc(0x7f0000001000, 'late'), 0],
  [sp_sample(TRACE, f_trace(2, 0x5612ab000200, 4), f_native(0x7f0000001010)), 1],
  [sp_sample(CFUNC, f_cfunc(0x7f0000001000), f_native(0x401010)), 1],
  [sp_upd_trace(2, 0x5612ab000100, 9), 0],
  [sp_sample(GC), 1],
  [$inlined, 1],
  [sp_stats(6, [0, 1, 1, 1, 1, 0, 0, 0, 0, 2], 0, 0, 6_000_000), 0],
);
my @complete;    # [end offset, samples so far]
my ($bin, $count) = ($head, 0);
for my $rec (@records) {
  $bin .= $rec->[0];
  $count += $rec->[1];
  push @complete, [length $bin, $count];
}
$bin .= "\x80";
is(ljprof('report', write_file("$dir/full.bin", $bin))->{rc}, 0, 'the whole stream is clean');

my $bad = check_every_cut($bin, length $head, \@complete, sub {
  my $stacks = 0;
  $stacks += $_->{count} for @{ $_[0]{stacks} };
  # Every complete sample counted, and each with its stack.
  return $_[0]{samples_with_stacks} == $stacks ? $stacks : -1;
});
is($bad, 0, 'cut at every offset (' . length($bin) . '): one clear line, exit 1, every complete sample reported');

# A cut in the middle of the trace sample: the text report warns and shows
# the samples before it; collapsed shows them too.
my $cut_at = $complete[5][0] + 4;
my $cut = write_file("$dir/cut.bin", substr($bin, 0, $cut_at));
my $r = ljprof('report', $cut);
is($r->{rc}, 1, 'cut text report: exit 1');
like($r->{out}, qr/^WARNING: damaged stream, .*truncated at offset \d+: expected ULEB128 \(trace: start proto address\)/m,
     'cut text report: warns inside the report');
like($r->{out}, qr/^Samples: 2 \(no statistics recorded\)$/m, 'cut text report: the two samples before');
is($r->{err}, "ljprof: $cut: truncated at offset " . ($complete[5][0] + 3)
   . ": expected ULEB128 (trace: start proto address); the stream ends at offset $cut_at\n",
   'cut: names the offset of the field and what was expected');
$r = ljprof('report', '--format=collapsed', $cut);
is_deeply([$r->{rc}, $r->{out}], [1, "main;\@t.lua:3 1\nmain;\@u.lua:5;assert 1\n"], 'cut collapsed: exit 1, the stacks before');

# A cut before the count of a trace's Lua frames: named as what is missing.
$cut_at = $complete[9][0] + length $inlined_head;
$r = ljprof('report', write_file("$dir/cut.bin", substr($bin, 0, $cut_at)));
like($r->{err}, qr/: truncated at offset $cut_at: expected ULEB128 \(trace: Lua frames it runs\); the stream ends at offset $cut_at$/,
     'cut in a tag 6 frame: names its count as what was expected');

# Corrupt values.
my $ok_sample = sp_sample(LFUNC, f_lua(0x5612ab000100, 3), f_native(0x401010));
my $pre = $head . sp_config(MODE_C, 1000, 0) . $ok_sample . $ok_sample;
my @corrupt = (
  ['unknown frame tag', $pre . "\x01\x07\x80\x80", qr/corrupt at offset \d+: unknown frame tag 0x07/],
  ['unknown record', $pre . "\x1F\x80", qr/corrupt at offset \d+: unknown sysprof record 0x1f/],
  ['unknown mode', $pre . sp_config(3, 1000, 0) . "\x80", qr/unknown profiling mode 3 in the config record/],
  ['unknown clock', $pre . sp_config(2, 1000, 7) . "\x80", qr/unknown clock 7 in the config record/],
  ['too deep a sample', $pre . sp_sample(LFUNC, (f_native(0x401010)) x 4097),
   qr/corrupt at offset \d+: a sample of more than 4096 frames/],
  ['a 2^60-byte fast function name', $pre . "\x0D\x01" . uleb(1 << 60) . "abc",
   qr/fast function name: name is 1152921504606846976 bytes long \(the limit is 1048576\)/],
  ['an 11-byte ULEB128', $pre . "\x01\x04" . ("\xff" x 10) . "\x01\x80\x80",
   qr/ULEB128 longer than 10 bytes or above 64 bits \(native frame: address\)/],
  ['data after the end', $pre . "\x80junk", qr/data after the end of the sysprof stream/],
);
for my $c (@corrupt) {
  my ($what, $bytes, $msg) = @$c;
  my $r = ljprof_json(write_file("$dir/corrupt.bin", $bytes));
  is($r->{rc}, 1, "$what: exit 1");
  like($r->{err}, qr/\Aljprof: \S+: [^\n]*$msg[^\n]*\n\z/, "$what: one clear line");
  is($r->{json} && $r->{json}{samples_with_stacks}, 2, "$what: the 2 samples before it are reported");
  like($r->{json} && $r->{json}{error}{message}, $msg, "$what: the JSON report has the error");
}

# 4096 frames are fine.
$r = ljprof_json(write_file("$dir/deep.bin", $head . sp_sample(LFUNC, (f_native(0x401010)) x 4096) . "\x80"));
is_deeply([$r->{rc}, scalar @{ $r->{json}{stacks}[0]{frames} }], [0, 4096], '4096 frames: read');

done_testing();
