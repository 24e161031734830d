#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# ljprof heap --format=html: the dominator tree as the project's flame
# graph (flamegraph.html's data model: stacks of frames with values). A
# frame is an object named by its shortest path, as wide as what it
# retains, above its immediate dominator: checked against ljprof's JSON
# graph. Then in headless Chromium a search for the leak's retainer
# selects what it retains, and lists it by its path; zoomed into a frame
# (what a click does), the page names its path.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Lua;
use LJProf::Run;
use LJProf::Chromium;

my $dir = scratch();
my ($snap, $html) = ("$dir/heap.bin", "$dir/heap.html");
my $run = run_lua(<<"LUA");
sessions = {}
for user = 1, 10 do
  sessions[user] = { history = {} }
  for n = 1, 300 do table.insert(sessions[user].history, { n, data = { n } }) end
end
local worker = coroutine.wrap(function()
  local pending = {}
  while true do pending[#pending + 1] = { coroutine.yield() } end
end)
for n = 1, 2001 do worker(n) end
assert(misc.heapsnapshot("$snap"))
LUA
is($run->{rc}, 0, 'the script ran') or diag $run->{err};
my $r = ljprof('heap', '--format=html', '-o', $html, $snap);
is($r->{rc}, 0, 'the page is written') or diag $r->{err};
self_contained($html, 'heap');
my $data = embedded($html);
my $g = decode_json(ljprof('heap', '--format=json', '--graph', '--top=100000', $snap)->{out});
my @obj = @{ $g->{graph}{objects} };
my %by_path = map { ($_->{path} => $_) } @{ $g->{retainers} };

my $strong = 0;
$strong += $_->{size} for grep { defined $_->{idom} } @obj;
is($data->{unit}, 'bytes', 'in bytes');
like($data->{what}, qr/retained.*dominator tree/, 'it says what a frame is');
is($data->{total}, $strong, "all it draws: the $strong bytes strongly reachable");
my $sum = 0;
$sum += $_ for @{ $data->{values} };
is($sum, $strong, 'which the stacks add up to');

# A frame's name: path (type address). Its stack: its dominators' frames.
my %frame_of = map { ($data->{frames}[$_] => $_) } 0 .. $#{ $data->{frames} };
my %addr = map { (sprintf('0x%x', $_->{address}) => $_) } @obj;
sub frame_object {
  my ($name) = @_;
  my ($addr) = $name =~ / \(\w[\w ]* (0x[0-9a-f]+)\)$/ or return undef;
  return $addr{$addr};
}
my ($wrong_chain, $checked) = (0, 0);
for my $stack (@{ $data->{stacks} }) {
  my @o = map { frame_object($data->{frames}[$_]) } @$stack;
  next if grep { !defined } @o;   # the roots' small objects
  $checked++;
  my $ok = $o[0]{idom} eq 'root';
  $ok &&= $o[$_]{idom} eq $o[$_ - 1]{id} for 1 .. $#o;
  $wrong_chain++ unless $ok;
}
cmp_ok($checked, '>', 100, "$checked stacks of objects");
is($wrong_chain, 0, 'each is the chain of immediate dominators from a root down');

my $leak = $by_path{'_G.sessions'};
my $name = sprintf '_G.sessions (table 0x%x)', $leak->{address};
ok(exists $frame_of{$name}, "the leak's retainer has a frame: $name");
my $under = 0;
for my $i (0 .. $#{ $data->{stacks} }) {
  $under += $data->{values}[$i] if grep { $_ == $frame_of{$name} } @{ $data->{stacks}[$i] };
}
is($under, $leak->{retained}, "as wide as it retains: $leak->{retained} bytes");
my ($pending) = grep { /^<local "pending" of function \S+payload\d+\.lua:6 at line 8 in coroutine 0x[0-9a-f]+>$/ } keys %by_path;
ok($pending && grep({ index($_, "$pending (table ") == 0 } @{ $data->{frames} }),
   'a coroutine\'s local too: ' . ($pending // 'none'));
cmp_ok(scalar @{ $data->{frames} }, '<=', 2001, 'at most 2000 objects drawn, and the rest\'s frame');

# A cut snapshot: the page of what came says so.
my $bin = LJProf::Lua::slurp($snap);
{ open my $fh, '>:raw', "$dir/cut.bin" or die; print $fh substr($bin, 0, int(length($bin) * 0.6)); }
$r = ljprof('heap', '--format=html', '-o', "$dir/cut.html", "$dir/cut.bin");
is($r->{rc}, 1, 'a cut snapshot: exit 1');
like(embedded("$dir/cut.html")->{damaged} // '', qr/^truncated at offset \d+/, 'its page says where it was cut');

SKIP: {
  skip 'chromium is not installed (Debian chromium)', 5 unless chromium_path();
  my $dom = dom($html, '_G.sessions (');
  my ($value) = $dom =~ /data-matched-value="(\d+)"/;
  is($value, $leak->{retained}, 'chromium: a search for _G.sessions selects what it retains');
  my @matches = map { unescape_html($_) } $dom =~ m{<li class="match">(.*?) — }g;
  is_deeply(\@matches, [$name], 'chromium: the match listed by its path');
  my $history = sprintf '_G.sessions[3].history (table 0x%x)', $by_path{'_G.sessions[3].history'}{address};
  $dom = dom($html, undef, $history);
  my ($zoomed) = $dom =~ m{<span id="zoom-info">(.*?)</span>};
  like(unescape_html($zoomed // ''), qr/^Zoomed into \Q$history\E \([\d.]+%\)$/,
       'chromium: zoomed into a frame (a click), the page names its path');
}

done_testing();
