#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Damaged streams: a stream cut at every byte offset, and corrupt values.
# Each gets one clear line on stderr naming the offset and what was
# expected, exit 1, and the report of every event complete before it.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();

# A small stream with every kind of entry and event; remember where each
# event ends.
my $head = symtab(sym_lfunc(0x5612ab000100, '@t.lua', NO_LINE),
                  sym_cfunc(0x7f0012340000, 'cfn'), sym_trace(3, 0x5612ab000100, 7))
         . prologue('ljm', 3);
my @events = (
  ev_alloc(lua(0x5612ab000100, 5), 0x7f00aa000010, 32),
  upd_lfunc(0x5612ab000200, "x = 1\nreturn x", 0),
  ev_alloc(lua(0x5612ab000200, 2), 0x7f00aa000040, 300),
  ev_realloc(cfunc(0x7f0012340000), 0x7f00aa000010, 32, 0x7f00aa000100, 64),
  upd_cfunc(0x7f0012350000, 'cfn2'),
  ev_alloc(trace(3), 0x7f00aa000200, 16),
  upd_trace(4, 0x5612ab000200, 1),
  ev_free(internal(), 0x7f00aa000100, 64),
  ev_alloc(trace(4), 0x7f00aa000300, 20000),
);
my @complete;    # [end offset, events so far]
my ($bin, $count) = ($head, 0);
for my $e (@events) {
  $bin .= $e;
  $count++ if ord($e) & 3;    # symtab updates are not counted events
  push @complete, [length $bin, $count];
}
$bin .= "\x80";
my $full = write_file("$dir/full.bin", $bin);
is(ljprof('report', $full)->{rc}, 0, 'the whole stream is clean');

my $bad = check_every_cut($bin, length $head, \@complete, sub {
  my $t = $_[0]{totals};
  return $t ? $t->{alloc_events} + $t->{realloc_events} + $t->{free_events} : -1;
});
is($bad, 0, 'cut at every offset (' . length($bin) . '): one clear line, exit 1, every complete event reported');

# The text report of a cut stream says it is damaged and shows what came.
# The realloc: header, C address (7 bytes), old address (7), old size (1),
# then the new address (7): cut 2 bytes into the new address.
my $realloc_at = $complete[2][0];
my $cut_at = $realloc_at + 1 + 7 + 7 + 1 + 2;
my $r = ljprof('report', write_file("$dir/cut.bin", substr($bin, 0, $cut_at)));
is($r->{rc}, 1, 'cut text report: exit 1');
like($r->{out}, qr/^WARNING: damaged stream, .*truncated at offset \d+: expected ULEB128 \(realloc: new address\)/m,
     'cut text report: warns inside the report');
like($r->{out}, qr/^\@t\.lua:5: 1 event /m, 'cut text report: the first alloc');
like($r->{out}, qr/^CHUNK 1:2: 1 event .*Allocated: 300 bytes/m, 'cut text report: the second alloc');
like($r->{out}, qr/^REALLOCATIONS\n\(none\)/m, 'cut text report: not the cut realloc');
my $field_at = $realloc_at + 16;
is($r->{err}, "ljprof: $dir/cut.bin: truncated at offset $field_at: expected ULEB128 (realloc: new address); the stream ends at offset $cut_at\n",
   'cut text report: names the offset of the field and what was expected');

# Corrupt values.
my $sym = symtab(sym_lfunc(0x100, '@c.lua', 1));
my $three = join '', map { ev_alloc(lua(0x100, 1), 0x1000 + $_ * 16, 8) } 0 .. 2;
my @corrupt = (
  ['11-byte ULEB128', $sym . prologue('ljm', 3) . $three . "\x05" . uleb(0x10) . ("\xff" x 10) . "\x01\x80",
   qr/corrupt at offset \d+: ULEB128 longer than 10 bytes or above 64 bits \(alloc: new size\)/, 3],
  ['ULEB128 above 64 bits', $sym . prologue('ljm', 3) . $three . "\x05" . uleb(0x10) . ("\xff" x 9) . "\x02\x80",
   qr/ULEB128 longer than 10 bytes or above 64 bits \(alloc: new size\)/, 3],
  ['a 2^60-byte name', prologue('ljs', 3) . "\x00" . uleb(0x100) . uleb(1 << 60) . "abc",
   qr/corrupt at offset \d+: symtab: chunk name is 1152921504606846976 bytes long \(the limit is 1048576\)/, undef],
  ['a 2^60-byte name in an update', $sym . prologue('ljm', 3) . $three . "\x0C" . uleb(0x100) . uleb(1 << 60),
   qr/symtab: C symbol name is 1152921504606846976 bytes long/, 3],
  ['unknown event source', $sym . prologue('ljm', 3) . $three . "\x1D\x80",
   qr/corrupt at offset \d+: unknown event source in event header 0x1d/, 3],
  ['the VM\'s own event in v3', $sym . prologue('ljm', 3) . $three . ev_alloc(vm(VM_GC), 0x2000, 8) . "\x80",
   qr/corrupt at offset \d+: unknown event source in event header 0x19/, 3],
  ['unknown kind of the VM\'s own event', $sym . prologue('ljm', 4) . $three . ev_alloc(vm(9), 0x2000, 8) . "\x80",
   qr/corrupt at offset \d+: unknown kind 9 of the VM's own event/, 3],
  ['a cut compiler\'s event', $sym . prologue('ljm', 4) . $three . substr(ev_alloc(jit(VM_ASM, 2, 0x100, 7), 0x2000, 8), 0, 5),
   qr/truncated at offset \d+: expected ULEB128 \(location: compiler's start line\)/, 3],
  ['unknown symtab update', $sym . prologue('ljm', 3) . $three . "\x04\x80",
   qr/unknown symtab update kind in event header 0x04/, 3],
  ['unknown symtab entry type', prologue('ljs', 3) . "\x03" . memprof(),
   qr/corrupt at offset 7: unknown symtab entry type 3 \(header byte 0x03\)/, undef],
  ['data after the end', $sym . memprof($three) . "junk",
   qr/data after the end of the memprof stream/, 3],
  ['two symtabs', $sym . $sym . memprof(),
   qr/a second symtab where a profiler stream should start/, undef],
);
for my $c (@corrupt) {
  my ($what, $bytes, $msg, $events) = @$c;
  my $r = ljprof_json(write_file("$dir/corrupt.bin", $bytes));
  is($r->{rc}, 1, "$what: exit 1");
  like($r->{err}, qr/\Aljprof: \S+: [^\n]*$msg[^\n]*\n\z/, "$what: one clear line");
  if (defined $events) {
    is($r->{json}{totals}{alloc_events}, $events, "$what: the $events events before it are reported");
    like($r->{json}{error}{message}, $msg, "$what: the JSON report has the error");
  } else {
    is($r->{out}, '', "$what: no report before a profiler stream began");
  }
}

done_testing();
