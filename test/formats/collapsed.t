#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Collapsed stacks of memory profiles: one line per allocation site, its
# bytes (or, with --count=events, blocks) allocated, or in use at the end
# with --leak-only; most first; totals as in the JSON report. Names on one
# line. CPU profiles: as before (test/ljprof/sysprof.t), totals checked here.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use List::Util qw(sum0);
use Test::More;
use LJProf::Lua ();
use LJProf::Profiles;
use LJProf::Stream;

sub collapsed_lines {
  my ($bin, @opts) = @_;
  my ($rc, $out, $err) = ljprof_out('report', '--format=collapsed', @opts, $bin);
  is($rc, 0, "collapsed @opts: exit 0") or diag $err;
  return map { /^(.*) (\d+)$/ ? [$1, $2] : ['?', 0] } split /\n/, $out;
}

{ # A hand-made stream: exact names and counts.
  my $dir = LJProf::Lua::scratch();
  my $chunk = "return\n1";
  my $bin = write_file("$dir/sites.bin",
    symtab(sym_lfunc(0x100, '@a.lua', 1), sym_lfunc(0x200, $chunk, 0), sym_cfunc(0x500, 'cmalloc'))
    . memprof(ev_alloc(lua(0x100, 3), 0x1000, 100), ev_alloc(lua(0x100, 3), 0x2000, 50),
	      ev_alloc(lua(0x100, 7), 0x3000, 400), ev_free(internal(), 0x3000, 400),
	      ev_alloc(lua(0x200, 2), 0x4000, 10), ev_alloc(cfunc(0x500), 0x5000, 20),
	      ev_realloc(cfunc(0x500), 0x1000, 100, 0x6000, 300)));
  my @l = collapsed_lines($bin);
  is_deeply(\@l, [['@a.lua:7', 400], ['cmalloc', 320], ['@a.lua:3', 150], ['return\n1:2', 10]],
	    'bytes allocated (and reallocated) per site, most first, names on one line');
  @l = collapsed_lines($bin, '--count=events');
  is_deeply(\@l, [['@a.lua:3', 2], ['cmalloc', 2], ['@a.lua:7', 1], ['return\n1:2', 1]],
	    '--count=events: blocks allocated per site');
  @l = collapsed_lines($bin, '--leak-only');
  # The realloc of 0x1000 keeps its owner, a.lua:3.
  is_deeply(\@l, [['@a.lua:3', 350], ['cmalloc', 20], ['return\n1:2', 10]],
	    '--leak-only: bytes in use at the end by owner; sites holding nothing left out');
  @l = collapsed_lines($bin, '--leak-only', '--count=events');
  is_deeply(\@l, [['@a.lua:3', 2], ['return\n1:2', 1], ['cmalloc', 1]],
	    '--leak-only --count=events: blocks in use, ties in order of first sight');
}

{ # A real memory profile: totals.
  my $mem = memory_profile();
  my $t = json_report($mem->{bin})->{totals};
  is(sum0(map { $_->[1] } collapsed_lines($mem->{bin})), $t->{alloc_bytes} + $t->{realloc_new_bytes},
     'memory round trip: bytes allocated');
  is(sum0(map { $_->[1] } collapsed_lines($mem->{bin}, '--count=events')), $t->{alloc_events} + $t->{realloc_events},
     'memory round trip: blocks allocated');
  is(sum0(map { $_->[1] } collapsed_lines($mem->{bin}, '--leak-only')), $t->{live_bytes}, 'memory round trip: bytes in use');
  my @l = collapsed_lines($mem->{bin});
  is($l[0][0], "$mem->{name}:$mem->{garbage_line}", 'memory: the site allocating the most first');
}

{ # A real CPU profile: totals.
  my $cpu = cpu_profile();
  my $json = json_report($cpu->{bin});
  my @l = collapsed_lines($cpu->{bin});
  is(sum0(map { $_->[1] } @l), $json->{samples_with_stacks}, 'cpu round trip: samples');
  like($l[0][0], qr/^_start;.*;\Q$cpu->{name}\E:$cpu->{hot_line}$/, 'cpu: the hot stack first, root first');
}

done_testing();
