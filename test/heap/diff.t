#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# ljprof heap --diff: two snapshots around a leaking loop (tables appended
# to _G.sessions[id].history) give that structure's pattern as the top
# growth, with the count the loop made and the bytes those objects take
# (summed here from NEW's graph, apart from the diff's grouping); what was
# dropped in between shrinks; objects of NEW at addresses OLD did not
# hold are counted as fresh. A damaged NEW: one clear line, exit 1, and
# the diff of what came. With --memprof, one stream that ran through both
# snapshots, each joined at its own mark: the leaking loop's line is the
# top growth by allocation site with the count it made, and a line whose
# objects were freed in between shrinks to nothing.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Lua;
use LJProf::Run;

my $dir = scratch();
my ($old, $new) = ("$dir/old.bin", "$dir/new.bin");
my $run = run_lua(<<"LUA");
sessions = {}
for id = 1, 20 do sessions[tostring(id)] = { history = {} } end
junk = {}
for i = 1, 1000 do junk[i] = { i } end
local function handle(id, n)
  local h = sessions[tostring(id)].history
  for i = 1, n do h[#h + 1] = { at = i, data = {} } end
end
collectgarbage()
assert(misc.heapsnapshot("$old"))
junk = nil
collectgarbage()
for id = 1, 20 do handle(id, 500) end
assert(misc.heapsnapshot("$new"))
LUA
is($run->{rc}, 0, 'the script ran') or diag $run->{err};

my $r = ljprof('heap', '--diff', '--format=json', '--top=100000', $old, $new);
is($r->{rc}, 0, 'the diff reads both cleanly') or diag $r->{err};
my $doc = eval { decode_json($r->{out}) } || {};
my @pats = @{ $doc->{patterns} || [] };
my %pat = map { ($_->{pattern} => $_) } @pats;

# What the loop made, from NEW's graph alone: the objects the 20 history
# tables hold by index, and the tables those hold by the key data.
my $gtext = `ljprof heap --format=json --graph --top=100000 '$new'`;
diag "ljprof heap $new: status $?" if $?;
my $g = decode_json($gtext);
my @obj = @{ $g->{graph}{objects} };
my %history = map { ($_->{id} => 1) } grep { $_->{path} =~ /^_G\.sessions\["\d+"\]\.history$/ } @{ $g->{retainers} };
is(scalar(keys %history), 20, 'NEW: the 20 history tables by their paths');
my (%entry, %data);
$entry{ $_->[1] } = 1 for grep { $history{ $_->[0] } } @{ $g->{graph}{edges} };
my $entry_bytes = 0;
$entry_bytes += $obj[$_]{size} for keys %entry;
is(scalar(keys %entry), 10000, 'NEW: they hold the 10000 entries the loop appended');

is($pats[0]{pattern}, '_G.sessions[*].history[*]', 'the top growth is the loop\'s structure');
is($pats[0]{objects}{growth}, 10000, 'grown by the 10000 entries');
is($pats[0]{objects}{old}, 0, 'none of which OLD had');
is($pats[0]{bytes}{growth}, $entry_bytes, "by the $entry_bytes bytes those entries take");
cmp_ok($entry_bytes, '>', 10000 * 32, 'which are more than 32 bytes each');
is($pat{'_G.sessions[*].history[*].data'}{objects}{growth}, 10000, 'their data tables: one line more, +10000');
is($pat{'_G.sessions[*].history'}{objects}{growth}, 0, 'the history tables: as many as before');
cmp_ok($pat{'_G.sessions[*].history'}{bytes}{growth}, '>', 20 * 500 * 8, 'but larger (their array parts)');
is($pat{'_G.junk[*]'}{objects}{growth}, -1000, 'what was dropped shrinks: _G.junk[*] -1000');
is($pat{'_G.junk[*]'}{objects}{new}, 0, 'to nothing');
is($pats[-1]{pattern}, '_G.junk[*]', 'the largest shrink comes last');

# Fresh: at an address where OLD had no table. The 1000 junk tables
# freed in between are the only tables whose addresses the GC could reuse.
my $fresh = $pats[0]{fresh};
ok($fresh <= 10000 && $fresh >= 10000 - 1000 - 20,
   "fresh entries: $fresh of 10000, less at most those reusing a freed table's address");
is($pat{'_G.sessions[*].history'}{fresh}, 0, 'the 20 history tables grew but lived through: none is fresh');
my ($tables) = grep { $_->{type} eq 'table' } @{ $doc->{types} };
is($tables->{objects}{growth}, 20000 - 1000 - 1, 'by type: tables +20000 -1000 (junk) -1 (junk itself)');
is($doc->{total}{objects}{growth}, $doc->{new}{objects} - $doc->{old}{objects}, 'the total growth is NEW less OLD');

# The text says the same.
my $text = ljprof('heap', '--diff', $old, $new)->{out};
like($text, qr/^GROWTH BY PATH.*\n\s+\+\S+ \S+\s+\+10000\s+\d+  _G\.sessions\[\*\]\.history\[\*\]$/m,
     'text: the loop\'s structure heads GROWTH BY PATH with +10000');
like($text, qr/^\s+-\S+ \S+\s+-1000\s+0  _G\.junk\[\*\]$/m, 'text: _G.junk[*] -1000, none fresh');

# A damaged NEW: the diff of what came before the damage.
my $bin = do { open my $fh, '<:raw', $new or die; local $/; <$fh> };
my $cut = "$dir/cut.bin";
{ open my $fh, '>:raw', $cut or die; print $fh substr($bin, 0, int(length($bin) * 0.6)); }
$r = ljprof('heap', '--diff', $old, $cut);
is($r->{rc}, 1, 'a cut NEW: exit 1');
like($r->{err}, qr/^ljprof: \S+cut\.bin: truncated at offset \d+: .*\n\z/, 'one line on stderr says which file and where');
like($r->{out}, qr/^WARNING: \S+cut\.bin is damaged, the diff covers what came before the damage: truncated/m,
     'the report warns');
like($r->{out}, qr/^\s+\+\S+ \S+\s+\+\d+\s+\d+  _G\.sessions\[\*\]\.history\[\*\]$/m, 'and still shows the growth that came');
$r = ljprof('heap', '--diff', '--format=json', $old, $cut);
$doc = eval { decode_json($r->{out}) } || {};
ok($doc->{new}{error} && !$doc->{old}{error}, 'JSON: the error is NEW\'s');

$r = ljprof('heap', '--diff', $old);
is($r->{rc}, 2, '--diff with one file: a usage error');
$r = ljprof('heap', '--diff', '--format=html', $old, $new);
is($r->{rc}, 2, '--diff --format=html: a usage error');

# -- By allocation site: one memprof stream through both snapshots ---------

my ($mem, $mold, $mnew) = ("$dir/site.mem", "$dir/site-old.bin", "$dir/site-new.bin");
my $script = <<"LUA";
assert(misc.memprof.start{path = "$mem", stacks = true})
keep = {}
local tmp = {}
for i = 1, 700 do tmp[i] = { i } end  -- FREED
collectgarbage()
assert(misc.heapsnapshot("$mold"))
tmp = nil
collectgarbage()
local function leak(n)
  for i = 1, n do keep[#keep + 1] = { i } end  -- LEAK
end
leak(1500)
collectgarbage()
assert(misc.heapsnapshot("$mnew"))
misc.memprof.stop()
LUA
my @lines = split /\n/, $script;
my ($leak_line) = grep { $lines[$_ - 1] =~ /-- LEAK$/ } 1 .. @lines;
my ($freed_line) = grep { $lines[$_ - 1] =~ /-- FREED$/ } 1 .. @lines;
$run = run_lua($script);
is($run->{rc}, 0, 'the memprof script ran') or diag $run->{err};
$r = ljprof('heap', '--diff', '--format=json', '--top=100000', "--memprof=$mem", $mold, $mnew);
is($r->{rc}, 0, '--diff --memprof joins both snapshots') or diag $r->{err};
$doc = eval { decode_json($r->{out}) } || {};
my @sites = @{ $doc->{memprof}{sites} || [] };
# The rows of a line: its site, on any stack (the interpreter's or a trace's).
my $at = sub {
  my ($line) = @_;
  my %t;
  for my $s (grep { $_->{allocation} =~ /^\@\S*:$line( <- |$)/ } @sites) {
    $t{$_} += $s->{objects}{$_} for qw(old new growth);
  }
  return \%t;
};
like($sites[0]{allocation}, qr/^\@\S*:$leak_line <- \@\S*:\d+/,
     "the top growth by site: the loop's line $leak_line, with its stack");
is($at->($leak_line)->{growth}, 1500, 'grown by the 1500 tables the loop made');
is($at->($leak_line)->{old}, 0, 'none of which OLD had');
is($at->($freed_line)->{old}, 700, "line $freed_line: OLD held its 700 tables");
is($at->($freed_line)->{new}, 0, 'freed before NEW: none left');
ok(!grep({ $_->{allocation} =~ /^\@\S*:$freed_line( <- |$)/ && $_->{objects}{growth} > 0 } @sites),
   'so it is no growth');
is($doc->{memprof}{source}, $mem, 'JSON names the stream');
$text = ljprof('heap', '--diff', "--memprof=$mem", $mold, $mnew)->{out};
like($text, qr/^GROWTH BY ALLOCATION SITE .*\n\s+\+\S+ \S+\s+\+1500\s+\d+  \@\S*:$leak_line <- /m,
     'text: the loop\'s line heads GROWTH BY ALLOCATION SITE with +1500');
like($text, qr/^\s+-\S+ \S+\s+-700\s+0  \@\S*:$freed_line <- /m, "text: line $freed_line -700");
unlike(ljprof('heap', '--diff', $mold, $mnew)->{out}, qr/ALLOCATION SITE/, 'without --memprof: no such section');
# The first diff's snapshots ran without memprof: no mark to join at.
$r = ljprof('heap', '--diff', "--memprof=$mem", $old, $new);
is($r->{rc}, 1, 'snapshots the stream did not run through: exit 1');
like($r->{err}, qr/^ljprof: \Q$mem\E: cannot join \Q$old\E: the snapshot was taken while no memprof stream/, 'saying which snapshot and why');
like($r->{out}, qr/^GROWTH BY PATH/m, 'and the diff without sites');
unlike($r->{out}, qr/ALLOCATION SITE/, 'no site section');

done_testing();
