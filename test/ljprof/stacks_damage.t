#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Memprof v5 streams as the reader meets them: stacks and sampled weights
# decoded into the profile; a stream cut at every offset (inside stack
# records too) gets one clear line and the report of every event before
# the cut; stack records and flags that no writer makes are corrupt.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();
my ($pa, $pb) = (0x5612ab000100, 0x5612ab000200);
my $head = symtab(sym_lfunc($pa, '@a.lua', 1), sym_lfunc($pb, '@b.lua', 1),
                  sym_cfunc(0x7f0012340000, 'cfn'))
         . prologue('ljm', 5) . info_config(1, 0);
my @items = (
  upd_stack(1, sf_lua($pa, 3), sf_lua($pb, 7), sf_cfunc(0x7f0012340000)),
  ev_stack(1, lua($pa, 3), 1, 0x7f00aa000010, 100),
  upd_stack(2, sf_lua($pa, 3), sf_lua($pb, 9), sf_trunc()),
  ev_stack(1, lua($pa, 3), 2, 0x7f00aa000100, 300),
  ev_stack(3, lua($pa, 3), 2, 0x7f00aa000100, 300, 0x7f00aa000200, 600),
  ev_free(internal(), 0x7f00aa000010, 100),
  ev_alloc(internal(), 0x7f00aa000300, 8),
  ev_stack(1, lua($pa, 3), 0, 0x7f00aa000400, 50),
  info_stats(2, 1, 1, 0, 0),
);
my ($bin, $complete) = memprof_items($head, @items);
my $full = write_file("$dir/full.bin", $bin);
my $r = ljprof('report', '--format=collapsed', $full);
is($r->{rc}, 0, 'whole: clean') or diag $r->{err};
is($r->{out}, join('', map { "$_\n" }
   '[more frames];@b.lua:9;@a.lua:3 900', 'cfn;@b.lua:7;@a.lua:3 100', '[stack table full];@a.lua:3 50', 'INTERNAL 8'),
   'whole: a stack per (site, stack), the truncation and table-full pseudo-frames, the stackless event alone');
$r = ljprof('report', '--format=collapsed', '--leak-only', $full);
is($r->{out}, "[more frames];\@b.lua:9;\@a.lua:3 600\n[stack table full];\@a.lua:3 50\nINTERNAL 8\n",
   'whole, in use: the reallocated block stays with its first stack');
$r = ljprof('report', $full);
like($r->{out}, qr/^Call stacks: 2 distinct; 1 event with a stack cut at 64 frames; 1 event without one \(the stack tables' budget reached: stack_budget\)$/m,
     'whole: the stats record reported');

# (The report starts with the prologue, before the config record.)
my $bad = check_every_cut($bin, length($head) - length(info_config(1, 0)), [[length $head, 0], @$complete], sub {
  my $t = $_[0]{totals};
  return $t ? $t->{alloc_events} + $t->{realloc_events} + $t->{free_events} : -1;
});
is($bad, 0, 'cut at every offset (' . length($bin) . '): one clear line, exit 1, every complete event reported');

# A sampled stream: weights scale the figures, through a realloc to a free.
my $sampled = $head =~ s/\x1C\x00\x01\x00$/info_config(1, 65536)/er;
$sampled .= upd_stack(1, sf_lua($pa, 3));
$sampled .= ev_sampled(lua($pa, 3), 1, 0x7f00aa000010, 64, 65600);
$sampled .= ev_sampled(lua($pa, 3), 1, 0x7f00aa000020, 64, 65600);
$sampled .= ev_stack(3, lua($pa, 3), 1, 0x7f00aa000020, 64, 0x7f00aa000080, 128);
$sampled .= ev_free(internal(), 0x7f00aa000010, 64) . "\x80";
$r = ljprof_json(write_file("$dir/sampled.bin", $sampled));
is($r->{rc}, 0, 'sampled: clean') or diag $r->{out};
my $site = $r->{loc}{'@a.lua:3'};
is($site->{alloc_bytes}, 131200, 'sampled: allocated bytes are the weights');
is($site->{alloc_events}, 2050, 'sampled: allocations, weight / size each');
is($site->{realloc_new_bytes}, 131200, 'sampled: a realloc keeps the scale of its block');
is($site->{live_bytes}, 131200, 'sampled: in use, the reallocated block at its scale');
is($r->{json}{totals}{freed_bytes}, 65600, 'sampled: a free takes off what the block stood for');
is($r->{json}{estimates}, JSON::PP::true, 'sampled: the report says estimates');

# The same events where the decoder's fast path takes them (a longest
# event's bytes after each): allocations at another line follow them.
{
  my $padded = $sampled =~ s/\x80$//r;
  $padded .= ev_sampled(lua($pa, 4), 1, 0x7f00ab000000 + 16 * $_, 64, 65600) for 1 .. 20;
  my $r = ljprof_json(write_file("$dir/sampled_fast.bin", $padded . "\x80"));
  is($r->{rc}, 0, 'sampled, fast path: clean') or diag $r->{out};
  my $site = $r->{loc}{'@a.lua:3'};
  is($site->{realloc_new_bytes}, 131200, 'sampled, fast path: a realloc keeps the scale of its block');
  is($site->{live_bytes}, 131200, 'sampled, fast path: in use, the reallocated block at its scale');
  is($r->{json}{totals}{freed_bytes}, 65600, 'sampled, fast path: a free takes off what the block stood for');
  is($r->{loc}{'@a.lua:4'}{alloc_bytes}, 20 * 65600, 'sampled, fast path: the allocations after, at their weights');
}

# Native frames (tag 4, config flag 2): named by the C symbol that holds
# the address, as sysprof's; the report says the stacks have them.
{
  my $native = $head =~ s/\x1C\x00\x01\x00$/info_config(3, 0)/er;
  $native .= upd_stack(1, sf_native(0x7f0012340010), sf_lua($pa, 3), sf_lua($pb, 7))
           . ev_stack(1, lua($pa, 3), 1, 0x7f00aa000010, 100) . info_stats(1, 0, 0, 0, 0) . "\x80";
  my $f = write_file("$dir/native.bin", $native);
  my $r = ljprof('report', '--format=collapsed', $f);
  is($r->{rc}, 0, 'native frame: clean') or diag $r->{err};
  like($r->{out}, qr/^\@b\.lua:7;\@a\.lua:3;cfn(?:;\@a\.lua:3)? 100$/m,
       'native frame: named by its symbol, innermost, above the Lua frames') or diag $r->{out};
  like(ljprof('report', $f)->{out}, qr/^Call stacks: 1 distinct, with native frames;/m,
       'native frame: the report says the stacks have native frames');
}

# Corrupt stack records and flags.
my @corrupt = (
  ['a stack out of order', upd_stack(2, sf_lua($pa, 1)), qr/stack record: announced out of order, id \(2\)/],
  ['a stack of no frames', upd_stack(1), qr/stack record: impossible depth \(0\)/],
  ['an unknown frame tag', "\x18\x01\x01\x07", qr/stack record: unknown frame tag \(7\)/],
  ['a marker not last', upd_stack(1, sf_trunc(), sf_lua($pa, 1)), qr/stack record: unknown frame tag \(3\)/],
  ['an unannounced stack', ev_stack(1, lua($pa, 3), 5, 0x10, 8), qr/event names stack 5, not announced before/],
  ['a weight on a free', "\x4A" . uleb($pa) . uleb(3) . uleb(0x10) . uleb(8) . uleb(9), qr/unknown flags in event header 0x4a/],
  ['an unknown info record', "\x1C\x05", qr/unknown info record 5/],
);
for my $c (@corrupt) {
  my ($name, $item, $want) = @$c;
  my $f = write_file("$dir/corrupt.bin", $head . ev_stack(1, internal(), 0, 0x99, 1) . $item . "\x80");
  my $r = ljprof_json($f);
  is($r->{rc}, 1, "$name: exit 1");
  like($r->{err}, qr/^ljprof: \S+: corrupt at offset \d+: .*$want/, "$name: says what") or diag $r->{err};
  is($r->{json} && $r->{json}{totals}{alloc_events}, 1, "$name: the event before it reported");
}
my $v4 = write_file("$dir/v4flags.bin", symtab() . prologue('ljm', 4) . ev_stack(1, internal(), 0, 0x10, 8) . "\x80");
like(ljprof('report', $v4)->{err}, qr/unknown flags in event header 0x25/, 'a v4 stream with a stack flag: corrupt');

done_testing;
