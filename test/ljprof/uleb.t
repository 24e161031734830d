#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# ULEB128 fields of every length (1 to 10 bytes) and malformed ones, read
# alike in the middle of a long stream (where events are decoded from a
# window of buffered bytes, with one bounds check per event) and at its end
# (where they are read byte by byte). With x86-64's PEXT where the CPU has
# it, and without (LJPROF_PEXT=0): the same.
use strict;
use warnings;
no warnings 'portable';    # 64-bit values
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();
my $sym = symtab(sym_lfunc(0x100, '@u.lua', 1));

# Values at both ends of every ULEB128 length, up to 2^64-1 (10 bytes).
my @values = (0, 1);
push @values, (1 << (7 * $_)) - 1, 1 << (7 * $_) for 1 .. 9;
push @values, ~0;

# Each value is the size, the address and the line of one alloc, freed by
# the VM; the proto is named by a value too.
my @events;
for my $i (0 .. $#values) {
  my $v = $values[$i];
  push @events, ev_alloc(lua(0x100, $i + 1), $v, $v),
                ev_realloc(internal(), $v, $v, $v, $v), ev_free(cfunc($v), $v, $v);
}
# Enough small events after them that every one above is in the middle.
my @padding = map { ev_alloc(internal(), 0x9000 + 16 * $_, 8) } 1 .. 20;

# Each length of ULEB128 read the way this CPU reads it, and the portable
# way (this CPU's may be it already).
for my $pext ('', '0') {
  local $ENV{LJPROF_PEXT} = $pext;
  my $how = $pext eq '' ? '' : ' (LJPROF_PEXT=0)';
  for my $case (['middle', @events, @padding], ['end', @padding, @events]) {
    my ($where, @evs) = @$case;
    my $r = ljprof_json(write_file("$dir/uleb-$where.bin", $sym . memprof(@evs)));
    $where .= $how;
    is($r->{rc}, 0, "$where: exit 0") or diag($r->{err});
    my %realloced = map { $_->{location} => $_->{bytes} } @{ $r->{loc}{INTERNAL}{realloc_overrides} };
    my $ok = 1;
    for my $i (0 .. $#values) {
      my $name = '@u.lua:' . ($i + 1);
      my $loc = $r->{loc}{$name};
      $ok &&= $loc && $loc->{alloc_bytes} == $values[$i] && $loc->{alloc_events} == 1;
      $ok &&= defined $realloced{$name} && $realloced{$name} == $values[$i];
      # (Addresses of blocks would match if misread alike; a C function's
      # is in the location's name.)
      my $freer = $r->{loc}{sprintf 'CFUNC 0x%x', $values[$i]};
      $ok &&= $freer && $freer->{free_events} == 1;
      diag("$name: wrong"), last unless $ok;
    }
    ok($ok, "$where: every length of ULEB128 decoded");
    my $t = $r->{json}{totals};
    is($t->{free_events}, scalar @values, "$where: every free");
    is($t->{alloc_events}, scalar(@values) + 20, "$where: every alloc");
  }
}

# Malformed ULEB128s: the same error, at the same offset, in the middle of
# a stream and at its end.
my $three = join '', map { ev_alloc(lua(0x100, 1), 0x1000 + $_ * 16, 8) } 0 .. 2;
my @bad = (
  ['11 bytes', "\x05" . uleb(0x10) . ("\xff" x 10) . "\x01"],
  ['above 64 bits', "\x05" . uleb(0x10) . ("\xff" x 9) . "\x02"],
  ['10 bytes, the last above 64 bits, in a location', "\x09" . ("\xff" x 9) . "\x03" . uleb(1) . uleb(0x10) . uleb(8)],
);
for my $c (@bad) {
  my ($what, $event) = @$c;
  my $at = length($sym) + 7 + length($three);
  my %err;
  for my $tail ('', join '', @padding) {
    my $r = ljprof_json(write_file("$dir/bad.bin", $sym . memprof($three, $event, $tail)));
    is($r->{rc}, 1, "$what: exit 1");
    is($r->{json}{totals}{alloc_events}, 3, "$what: the 3 events before it are reported");
    $err{$tail eq '' ? 'end' : 'middle'} = $r->{err};
  }
  like($err{end}, qr/corrupt at offset \d+: ULEB128 longer than 10 bytes or above 64 bits/, "$what: named");
  is($err{middle}, $err{end}, "$what: the same error in the middle of a stream");
}

done_testing();
