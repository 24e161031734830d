#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# A heap snapshot joined to a memprof v6 stream: each held object shows
# the labels of the allocation that made it (text and JSON), an object
# made under no labels none. The snapshot is built by hand (ljh v1: two
# tables from the globals and the registry), the stream with
# LJProf::Stream, both carrying mark 7.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();
sub zigzag { my ($d) = @_; return $d >= 0 ? 2 * $d : -2 * $d - 1 }
my $table = sub { my ($addr, $size) = @_; return chr(9) . uleb(zigzag($addr)) . uleb($size) . uleb(0) . uleb(0) . "\x00" };
my $snap = write_file("$dir/snap.bin", prologue('ljh', 1) . uleb(0) . uleb(0) . uleb(24) . "\x14" . uleb(7)
  . "\x10" . chr(18) . uleb(1) . uleb(0) . uleb(1) . chr(18) . uleb(2) . uleb(0) . uleb(1) . chr(18) . uleb(3) . uleb(0) . uleb(1) . "\x00"
  . $table->(0x1000, 64) . $table->(0x1000, 32) . $table->(0x1000, 16)
  . "\x12" . uleb(1000) . uleb(3) . uleb(3) . uleb(112) . "\x80");
my $mem = write_file("$dir/mem.bin", symtab(sym_lfunc(0x100, '@m.lua', 1)) . memprof_v6(info_config(1, 0),
  info_labelset(1, ['route', '/a']), info_labelset(2, ['plugin', "a;b"], ['route', '/b']),
  upd_stack(1, sf_lua(0x100, 5)), upd_stack(2, sf_lua(0x100, 6)), upd_stack(3, sf_lua(0x100, 7)),
  info_labels(1), ev_stack(1, lua(0x100, 5), 1, 0x1000, 64),
  info_labels(2), ev_stack(1, lua(0x100, 6), 2, 0x2000, 32),
  info_labels(0), ev_stack(1, lua(0x100, 7), 3, 0x3000, 16),
  "\x1C\x03" . uleb(7) . uleb(1000)));

my $out = `ljprof heap --memprof '$mem' '$snap' 2>&1`;
is($? >> 8, 0, 'heap --memprof of a v6 stream: exit 0') or diag $out;
like($out, qr/^\s+allocated at \@m.lua:5, labels route=\/a$/m, 'text: the object made under route=/a says so');
like($out, qr/^\s+allocated at \@m.lua:6, labels plugin=a%3Bb route=\/b$/m, 'text: every label, escaped');
like($out, qr/^\s+allocated at \@m.lua:7$/m, 'text: an object made under no labels: none');
like($out, qr/\@m.lua:5, labels route=\/a: held at /m, 'text: by allocation site, with its labels');

my $doc = eval { decode_json(scalar `ljprof heap --format=json --memprof '$mem' '$snap' 2>/dev/null`) };
my %labels = map { ($_->{allocated}{site} => $_->{allocated}{labels}) } @{ $doc->{retainers} // [] };
is_deeply(\%labels, {'@m.lua:5' => {route => '/a'}, '@m.lua:6' => {route => '/b', plugin => 'a;b'}, '@m.lua:7' => undef},
          'json: each object\'s allocation with its labels');

done_testing();
