#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# A heap of 600000 tables: the snapshot's objects and edges, and the
# graph's arrays by object (4 bytes each), outgrow 2 MiB, where the reader
# maps them in huge pages and grows the first by moving pages (util.c).
# Each table read back, and each retained by the list.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Lua;
use LJProf::Run;

my $dir = scratch();
my $run = run_lua(<<"LUA");
t = {}
for i = 1, 600000 do t[i] = { i } end
assert(misc.heapsnapshot("$dir/big.bin"))
print("done")
LUA
is($run->{rc}, 0, 'the script ran') or diag $run->{err};
my $r = ljprof('heap', '--format=json', "$dir/big.bin");
is($r->{rc}, 0, 'ljprof heap: exit 0') or diag $r->{err};
my $doc = eval { decode_json($r->{out}) };
ok($doc && $doc->{objects} > 600000, 'more than 600000 objects read');
my ($entries) = grep { $_->{pattern} eq '_G.t[*]' } @{ $doc ? $doc->{patterns} : [] };
is($entries && $entries->{objects}, 600000, "t's 600000 entries, by their path");
my ($list) = grep { ($_->{path} // '') eq '_G.t' } @{ $doc ? $doc->{retainers} : [] };
ok($list && $entries && $list->{retained} == $list->{size} + $entries->{bytes},
   't retains itself and its entries, no more, no less');
done_testing();
