#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Heap snapshots: a Lua script builds a known heap, misc.heapsnapshot()
# writes it, ljprof heap reads it. The dominators and retained sizes are
# checked against an independent computation (iterative dataflow over
# the JSON graph); each leak is named by its path; weak references never
# retain; cycles; a cut or unwritable snapshot.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Lua;
use LJProf::Run;

my $dir = scratch();
my $snap = "$dir/heap.bin";
my $run = run_lua(<<"LUA");
cache = {}
for i = 1, 200 do cache[i] = { id = i, blob = string.rep("x", 1000) .. i } end
local function make()
  local memo = {}
  return function(k) memo[k] = { k } end
end
handler = make()
for i = 1, 400 do handler(i) end
local co = coroutine.create(function()
  local buf = {}
  for i = 1, 300 do buf[i] = { i } end
  coroutine.yield()
end)
assert(coroutine.resume(co))
weakv = setmetatable({}, { __mode = "v" })
weakv[1] = { "only weakly held" }
weakk = setmetatable({}, { __mode = "k" })
weakk[{ "a weak key" }] = true
do
  local x, y = {}, {}
  x.y, y.x, x.self = y, x, x
  a = x
end
shared = {}
p1, p2 = { x = shared }, { x = shared }
local ffi = require("ffi")
held = ffi.new("int[256]")
assert(misc.heapsnapshot("$snap"))
local ok, msg, err = misc.heapsnapshot("$dir/no/such/dir/h.bin")
print("unwritable", ok, msg, err)
print(coroutine.status(co))
LUA
is($run->{rc}, 0, 'the script ran') or diag $run->{err};
like($run->{out}, qr{^unwritable\tnil\t\Q$dir\E/no/such/dir/h\.bin: No such file or directory\t2$}m,
     'an unwritable path: nil, the path and why, errno; the script goes on');

my $out = `ljprof heap --format=json --graph --top=100000 '$snap' 2>&1`;
is($? >> 8, 0, 'ljprof heap reads the snapshot cleanly') or diag $out;
my $doc = decode_json($out);
my $g = $doc->{graph};
my @obj = @{ $g->{objects} };
ok(@obj > 1000, scalar(@obj) . ' objects');
ok(defined $doc->{pause_ns} && $doc->{pause_ns} > 0, 'the pause is recorded');

# Paths of the top retainers, by path.
my %by_path = map { ($_->{path} => $_) } @{ $doc->{retainers} };
my %pattern = map { ($_->{pattern} => $_) } @{ $doc->{patterns} };
my $cache = $by_path{'_G.cache'};
ok($cache, '_G.cache is a top retainer by its path');
cmp_ok($cache->{retained}, '>', 200 * 1000, '_G.cache retains its 200 1000-byte strings');
is($pattern{'_G.cache[*]'}{objects}, 200, 'one line for the 200 entries: _G.cache[*]');
is($pattern{'_G.cache[*].blob'}{objects}, 200, 'and one for their strings: _G.cache[*].blob');
my ($memo) = grep { /^<upvalue "memo" of function \S+payload\d+\.lua:5>$/ } keys %by_path;
ok($memo, 'a closure\'s upvalue is named: ' . ($memo // 'none'));
my ($memo_items) = grep { /^<upvalue "memo" of function \S+:5>\[\*\]$/ } keys %pattern;
is($memo_items && $pattern{$memo_items}{objects}, 400, 'its 400 entries under one pattern');
my ($buf) = grep { /^<local "buf" of function \S+payload\d+\.lua:9 at line 12 in coroutine 0x[0-9a-f]+>$/ } keys %by_path;
ok($buf, 'a suspended coroutine\'s local is named: ' . ($buf // 'none'));
cmp_ok($buf ? $by_path{$buf}{retained} : 0, '>=', 300 * 32, 'it retains its 300 tables');

# Weak references never retain: what only weakv and weakk hold (a value,
# a key) has no dominator, and they retain themselves and their
# metatables only.
my %path_id = map { ($_->{path} => $_->{id}) } @{ $doc->{retainers} };
my ($wv, $wk) = @path_id{'_G.weakv', '_G.weakk'};
my %into;
push @{ $into{ $_->[1] } }, $_ for @{ $g->{edges} };
my @held_weakly = grep { my $in = $into{$_}; $in && !(grep { !$_->[2] } @$in)
                         && (grep { $_->[0] == $wv || $_->[0] == $wk } @$in) } 0 .. $#obj;
is(scalar(@held_weakly), 2, 'weakv and weakk hold one object each, weakly');
ok(!(grep { defined $obj[$_]{idom} } @held_weakly), 'neither has a dominator (no path)');
for my $w ([weakv => $wv], [weakk => $wk]) {
  my $mt = $path_id{"_G.$w->[0]<metatable>"};
  is($obj[$w->[1]]{retained}, $obj[$w->[1]]{size} + $obj[$mt]{retained},
     "$w->[0] retains itself and its metatable only");
}
cmp_ok($doc->{weak_only}{objects}, '>=', 2, 'the report counts the objects only weakly reachable');
my $weak_only = grep { !defined $_->{idom} } @obj;

# The independent computation: Dom(root) = {root}, Dom(v) = {v} + the
# intersection of Dom(p) over v's strong predecessors, until nothing
# changes; idom(v) is the strict dominator dominated by all others.
my %pred;
push @{ $pred{$_} }, 'root' for @{ $g->{roots} };
for my $e (@{ $g->{edges} }) {
  my ($from, $to, $weak) = @$e;
  push @{ $pred{$to} }, $from unless $weak;
}
my %reach = (root => 1);
my @todo = ('root');
my %succ;
push @{ $succ{'root'} }, @{ $g->{roots} };
for my $e (@{ $g->{edges} }) { push @{ $succ{ $e->[0] } }, $e->[1] unless $e->[2] }
while (@todo) {
  my $v = pop @todo;
  for my $w (@{ $succ{$v} || [] }) { next if $reach{$w}++; push @todo, $w }
}
my @nodes = grep { $_ ne 'root' } keys %reach;
my %dom = (root => { root => 1 });
$dom{$_} = { map { ($_ => 1) } 'root', @nodes } for @nodes;
for (my $changed = 1; $changed;) {
  $changed = 0;
  for my $v (@nodes) {
    my $new;
    for my $p (grep { $reach{$_} } @{ $pred{$v} }) {
      $new = $new ? { map { ($_ => 1) } grep { $dom{$p}{$_} } keys %$new } : { %{ $dom{$p} } };
    }
    $new->{$v} = 1;
    if (keys %$new != keys %{ $dom{$v} }) { $dom{$v} = $new; $changed = 1 }
  }
}
my (%retained, $wrong_idom, $wrong_retained) = ();
$retained{$_} = 0 for @nodes;
for my $w (@nodes) {
  $retained{$_} += $obj[$w]{size} for grep { $_ ne 'root' } keys %{ $dom{$w} };
}
($wrong_idom, $wrong_retained) = (0, 0);
for my $v (@nodes) {
  my @strict = grep { $_ ne $v } keys %{ $dom{$v} };
  my ($idom) = sort { keys %{ $dom{$b} } <=> keys %{ $dom{$a} } } @strict;
  my $got = $obj[$v]{idom};
  $wrong_idom++, diag("idom($v): $got, not $idom") if "$got" ne "$idom" && $wrong_idom < 5;
  $wrong_retained++, diag("retained($v): $obj[$v]{retained}, not $retained{$v}")
    if $obj[$v]{retained} != $retained{$v} && $wrong_retained < 5;
}
is($wrong_idom, 0, 'every immediate dominator equals the dataflow one (' . scalar(@nodes) . ' objects)');
is($wrong_retained, 0, 'every retained size equals the sum over what it dominates');
is(scalar(@nodes), @obj - $weak_only, 'the objects strongly reachable are those with a dominator');

# Cycles and sharing: a and y hold each other, a holds itself; shared is
# held by p1 and p2, so neither retains it.
my $id_of = sub { my ($path) = @_; my ($r) = grep { $_->{path} eq $path } @{ $doc->{retainers} }; $r && $r->{id} };
my ($ia, $ib, $ishared, $iG) = map { $id_of->($_) } '_G.a', '_G.a.y', '_G.shared', '_G';
ok(defined $ia && defined $ib, 'a cycle: both ends have paths (_G.a, _G.a.y)');
is($obj[$ib]{idom}, $ia, 'y (held only by a) is dominated by a');
is($obj[$ia]{retained}, $obj[$ia]{size} + $obj[$ib]{size}, 'a retains itself and y: the cycle counts once');
is($obj[$ishared]{idom}, $iG, 'an object held by two tables is dominated by what holds both (_G)');

# A cdata is sized with its payload.
my ($cd) = grep { $_->{path} eq '_G.held' } @{ $doc->{retainers} };
cmp_ok($cd ? $cd->{size} : 0, '>=', 1024, 'a cdata int[256] takes its 1024 bytes');

# The text report says the same in words.
my $text = `ljprof heap '$snap'`;
like($text, qr/^\s+\S+ \S+\s+\S+ \S+\s+table 0x[0-9a-f]+  _G\.cache$/m, 'text: _G.cache among the top retainers');
like($text, qr/^\s+\S+ \S+\s+200  _G\.cache\[\*\]$/m, 'text: 200 objects under _G.cache[*]');

# More objects than the heap's bytes suggest (16-byte cdata): the walk's
# tables, sized from the heap's bytes, grow twice while the first array
# is walked, and the second array, walked after, finds each object again:
# every object numbered once.
{
  my $tiny = "$dir/tiny.bin";
  my $r = run_lua(<<"LUA");
local ffi = require("ffi")
tiny = {}
for i = 1, 200000 do tiny[i] = ffi.new("char", i % 100) end
again = {}
for i = 1, 200000 do again[i] = tiny[i] end
collectgarbage()
assert(misc.heapsnapshot("$tiny"))
LUA
  is($r->{rc}, 0, 'tiny objects: the script ran') or diag $r->{err};
  my $j = decode_json(scalar `ljprof heap --format=json --top=5 '$tiny' 2>&1`);
  my ($cdata) = grep { $_->{type} eq 'cdata' } @{ $j->{types} };
  is($cdata && $cdata->{objects}, 200000, 'tiny objects: 200000 cdata, each once');
  my ($q) = grep { $_->{pattern} =~ /^_G\.(tiny|again)\[\*\]$/ } @{ $j->{patterns} };
  is($q && $q->{objects}, 200000, 'tiny objects: each reached by one path, _G.tiny[*] or _G.again[*]');
}

done_testing();
