#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# ljprof heap --diff OLD... -- NEW...: the snapshots of two processes (a
# server's workers) on each side, each leaking into the same structure,
# one three times the other: the merged diff is the sum of each
# process's own diff, pattern by pattern, type by type, fresh objects
# counted within each process's pair; sides of different sizes and a
# damaged snapshot among several still give the diff of what there is;
# --memprof, which joins one stream, is refused with several a side.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Lua;
use LJProf::Run;
use LJProf::Stream qw(write_file);

my $dir = scratch();
my (@old, @new);
for my $w (1, 2) {
  my ($old, $new) = ("$dir/old-$w.bin", "$dir/new-$w.bin");
  my $n = $w == 1 ? 300 : 100;
  my $run = run_lua(<<"LUA");
sessions = {}
for id = 1, 20 do sessions[tostring(id)] = { history = {} } end
collectgarbage()
assert(misc.heapsnapshot("$old"))
for id = 1, 20 do
  local h = sessions[tostring(id)].history
  for i = 1, $n do h[#h + 1] = { at = i } end
end
assert(misc.heapsnapshot("$new"))
LUA
  is($run->{rc}, 0, "worker $w ran") or diag $run->{err};
  push @old, $old;
  push @new, $new;
}

sub diff_json {
  my $r = ljprof('heap', '--diff', '--format=json', '--top=100000', @_);
  my $doc = eval { decode_json($r->{out}) } || {};
  return ($r, $doc);
}
sub by_pattern { return { map { ($_->{pattern} => $_) } @{ $_[0]{patterns} || [] } } }

my ($r, $all) = diff_json(@old, '--', @new);
is($r->{rc}, 0, 'two workers a side: exit 0') or diag $r->{err};
my @one = map { (diff_json($old[$_], $new[$_]))[1] } 0, 1;
my $pat = by_pattern($all);
my $row = $pat->{'_G.sessions[*].history[*]'};
is($row->{objects}{growth}, 8000, 'the leak of both workers: 20 x 300 + 20 x 100 entries');
for my $key ([objects => 'growth'], [bytes => 'growth'], [objects => 'new']) {
  my $sum = 0;
  $sum += by_pattern($_)->{'_G.sessions[*].history[*]'}{ $key->[0] }{ $key->[1] } for @one;
  is($row->{ $key->[0] }{ $key->[1] }, $sum, "the leak's $key->[0] $key->[1]: the sum of each worker's ($sum)");
}
my $fresh = 0;
$fresh += by_pattern($_)->{'_G.sessions[*].history[*]'}{fresh} for @one;
is($row->{fresh}, $fresh, "fresh: counted within each worker's pair ($fresh)");
is($all->{total}{objects}{growth}, $one[0]{total}{objects}{growth} + $one[1]{total}{objects}{growth},
   'the total: the sum of both');
my ($tables) = grep { $_->{type} eq 'table' } @{ $all->{types} };
is($tables->{objects}{growth}, 8000, 'by type: tables +8000');

my $text = ljprof('heap', '--diff', @old, '--', @new)->{out};
like($text, qr/^HEAP DIFF \Q$old[0]\E, \Q$old[1]\E -> \Q$new[0]\E, \Q$new[1]\E\n/, 'text: each side\'s snapshots named');

# One OLD, two NEW: the second NEW alone, its objects all new, none fresh.
($r, my $lopsided) = diff_json($old[0], '--', @new);
is($r->{rc}, 0, 'sides of different sizes: exit 0') or diag $r->{err};
is(by_pattern($lopsided)->{'_G.sessions[*].history[*]'}{objects}{new}, 8000, 'sides of different sizes: NEW summed');

# A damaged snapshot among several: said, exit 1, the rest diffed.
my $whole = do { local $/; open my $fh, '<:raw', $new[1] or die; <$fh> };
my $cut = write_file("$dir/cut.bin", substr($whole, 0, int(length($whole) / 2)));
($r, my $damaged) = diff_json(@old, '--', $new[0], $cut);
is($r->{rc}, 1, 'a damaged NEW among two: exit 1');
like($r->{err}, qr/^ljprof: \Q$cut\E: /m, 'a damaged NEW: its name said');
cmp_ok(by_pattern($damaged)->{'_G.sessions[*].history[*]'}{objects}{growth}, '>=', 6000,
       'a damaged NEW: the other worker\'s leak still there');

$r = ljprof('heap', '--diff', "--memprof=$dir/none.bin", @old, '--', @new);
is($r->{rc}, 2, '--memprof with several a side: exit 2');
like($r->{err}, qr/--memprof joins one stream: not with several snapshots a side/, '--memprof: why');
$r = ljprof('heap', '--diff', @old, '--');
is($r->{rc}, 2, 'nothing after --: exit 2');

done_testing();
