#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# ljprof heap --format=heapsnapshot: Chrome DevTools' heap snapshot. The
# format's invariants (field counts, every edge to the start of a node,
# every name a valid string, edge counts summing to the edges, weak edges
# as 'weak'), the objects and references those of ljprof's own graph;
# then the real memlab (@memlab/core from the npm registry, test/npm)
# loads the file, computes its own dominators, and finds the same top
# retainer as `ljprof heap` and the same retained size for every object.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Lua;
use LJProf::Run;

my $dir = scratch();
my ($snap, $chrome) = ("$dir/heap.bin", "$dir/heap.heapsnapshot");
my $run = run_lua(<<"LUA");
sessions = {}
for id = 1, 10 do
  local s = { history = {} }
  for i = 1, 200 do s.history[i] = { at = i, line = "entry " .. i } end
  sessions["s" .. id] = s
end
do
  local seen = {}
  on_data = function(k) seen[k] = { k } end
end
for i = 1, 300 do on_data(i) end
weakv = setmetatable({}, { __mode = "v" })
held = {}  -- so that no GC cycle clears the weak values before the snapshot
for i = 1, 50 do weakv[i] = { i } held[i] = weakv[i] end
keep = weakv[7]
local co = coroutine.create(function() local buf = { {}, {} } coroutine.yield() end)
coroutine.resume(co)
assert(misc.heapsnapshot("$snap"))
LUA
is($run->{rc}, 0, 'the script ran') or diag $run->{err};

my $r = ljprof('heap', '--format=heapsnapshot', '-o', $chrome, $snap);
is($r->{rc}, 0, 'heapsnapshot written') or diag $r->{err};
my $hs = eval { decode_json(LJProf::Lua::slurp($chrome)) } || {};
my $meta = $hs->{snapshot}{meta} || {};
my @nf = @{ $meta->{node_fields} || [] };
my @ef = @{ $meta->{edge_fields} || [] };
is_deeply(\@nf, [qw(type name id self_size edge_count trace_node_id detachedness)], 'node_fields as V8 writes them');
is_deeply(\@ef, [qw(type name_or_index to_node)], 'edge_fields as V8 writes them');
my @ntypes = @{ $meta->{node_types}[0] || [] };
my @etypes = @{ $meta->{edge_types}[0] || [] };
ok(@ntypes >= 10 && $ntypes[9] eq 'synthetic' && $ntypes[5] eq 'closure', 'node types: V8\'s list');
ok(@etypes == 7 && $etypes[6] eq 'weak' && $etypes[1] eq 'element', 'edge types: V8\'s list');
my ($nodes, $edges, $strings) = @$hs{qw(nodes edges strings)};
my ($NF, $EF) = (scalar @nf, scalar @ef);
is(@$nodes % $NF, 0, 'nodes: a whole number of nodes');
is(@$edges % $EF, 0, 'edges: a whole number of edges');
is(@$nodes / $NF, $hs->{snapshot}{node_count}, 'node_count says how many');
is(@$edges / $EF, $hs->{snapshot}{edge_count}, 'edge_count says how many');
my ($sum, %ids, $bad_name, $bad_type) = (0);
for (my $i = 0; $i < @$nodes; $i += $NF) {
  $sum += $nodes->[$i + 4];
  $ids{ $nodes->[$i + 2] }++;
  $bad_name++ unless $nodes->[$i + 1] < @$strings;
  $bad_type++ unless $nodes->[$i] < @ntypes;
}
is($sum, @$edges / $EF, 'the nodes\' edge counts sum to the edges');
is(scalar(keys %ids), @$nodes / $NF, 'every node id is its own');
is($nodes->[2], 1, 'node 0 is the root, id 1');
is($ntypes[ $nodes->[0] ], 'synthetic', 'a synthetic root');
ok(!$bad_name && !$bad_type, 'every node\'s name is a string, its type a type');
my ($bad_to, $bad_ename, $weak) = (0, 0, 0);
for (my $i = 0; $i < @$edges; $i += $EF) {
  my ($type, $name, $to) = @$edges[$i .. $i + 2];
  $bad_to++ unless $to % $NF == 0 && $to < @$nodes;
  $bad_ename++ unless $etypes[$type] eq 'element' || $etypes[$type] eq 'hidden' || $name < @$strings;
  $weak++ if $etypes[$type] eq 'weak';
}
is($bad_to, 0, 'every edge goes to the start of a node');
is($bad_ename, 0, 'every edge name is a string');

# The same graph as ljprof's: object n is node n + 1.
my $g = decode_json(ljprof('heap', '--format=json', '--graph', '--top=100000', $snap)->{out});
my @obj = @{ $g->{graph}{objects} };
is(@$nodes / $NF, @obj + 1, 'one node per object, and the root');
is(@$edges / $EF, @{ $g->{graph}{edges} } + @{ $g->{graph}{roots} }, 'one edge per reference, the roots\' included');
is($weak, scalar(grep { $_->[2] } @{ $g->{graph}{edges} }), "the $weak weak references are weak edges");
cmp_ok($weak, '>=', 50, 'weakv\'s 50 values among them');
my ($size_ok, $id_ok) = (0, 0);
for my $o (@obj) {
  my $i = ($o->{id} + 1) * $NF;
  $size_ok++ if $nodes->[$i + 3] == $o->{size};
  $id_ok++ if $nodes->[$i + 2] == 2 * $o->{id} + 3;
}
is($size_ok, scalar @obj, 'every node\'s self_size is its object\'s size');
is($id_ok, scalar @obj, 'object n has id 2n + 3');
my ($history) = grep { $_->{path} eq '_G.sessions.s3.history' } @{ $g->{retainers} };
my $hn = ($history->{id} + 1) * $NF;
my %named;
my $first = 0;
$first += $nodes->[$_ * $NF + 4] for 0 .. $history->{id};
for my $k (0 .. $nodes->[$hn + 4] - 1) {
  my $e = ($first + $k) * $EF;
  $named{ $etypes[ $edges->[$e] ] }++;
}
is($named{element}, 200, 'a history table: its 200 entries as elements');
is($ntypes[ $nodes->[$hn] ], 'object', 'a table is an object');

# A cut snapshot: what came, still a well-formed file, and exit 1.
my $bin = LJProf::Lua::slurp($snap);
my $cut = "$dir/cut.bin";
{ open my $fh, '>:raw', $cut or die; print $fh substr($bin, 0, int(length($bin) * 0.6)); }
$r = ljprof('heap', '--format=heapsnapshot', '-o', "$dir/cut.heapsnapshot", $cut);
is($r->{rc}, 1, 'a cut snapshot: exit 1');
like($r->{err}, qr/^ljprof: \S+cut\.bin: truncated at offset \d+: .*\n\z/, 'one line says where it was cut');
my $ch = eval { decode_json(LJProf::Lua::slurp("$dir/cut.heapsnapshot")) } || {};
my $cut_objects = decode_json(ljprof('heap', '--format=json', $cut)->{out})->{objects};
is(@{ $ch->{nodes} || [] } / $NF, $cut_objects + 1, "the file holds the $cut_objects objects that came");
my $cut_bad = grep { $_ % $EF == 2 && ($ch->{edges}[$_] % $NF || $ch->{edges}[$_] >= @{ $ch->{nodes} }) } 0 .. $#{ $ch->{edges} || [] };
is($cut_bad, 0, 'and every edge of it goes to a node');

# memlab.
SKIP: {
  my $modules = ($ENV{LJPROF_BUILD_DIR} // '') . '/npm/node_modules';
  skip "no memlab: $modules/\@memlab/core is not installed (make test installs test/npm with npm ci; was the registry reachable?)", 6
    unless -d "$modules/\@memlab/core";
  skip 'no node (Debian nodejs, scripts/apt-packages-test)', 6 unless system('sh', '-c', 'command -v node >/dev/null') == 0;
  local $ENV{NODE_PATH} = $modules;
  my $ml = run_program('node', "$FindBin::Bin/memlab.js", $chrome);
  is($ml->{rc}, 0, 'memlab loads our .heapsnapshot') or diag $ml->{err};
  my $m = eval { decode_json($ml->{out}) } || {};
  is($m->{nodes}, @obj + 1, "memlab sees every node ($m->{nodes})");
  my $text = ljprof('heap', '--top=1', $snap)->{out};
  my ($top_addr) = $text =~ /^TOP RETAINERS.*\n\s+\S+ \S+\s+\S+ \S+\s+\w+ (0x[0-9a-f]+)  /m;
  my $top = $m->{top}{id};
  my $obj = defined $top ? $obj[($top - 3) / 2] : undef;
  is($obj && sprintf('0x%x', $obj->{address}), $top_addr, "memlab's top retainer is ljprof heap's ($top_addr)");
  is($m->{top}{retained}, $obj && $obj->{retained}, 'retaining as much: ' . ($obj ? $obj->{retained} : '?') . ' bytes');
  my %ml = map { @$_ } @{ $m->{retained} || [] };
  my ($same, $strong, $wrong) = (0, 0, 0);
  for my $o (grep { defined $_->{idom} } @obj) {
    $strong++;
    if ($ml{ 2 * $o->{id} + 3 } == $o->{retained}) { $same++ }
    elsif ($wrong++ < 5) { diag "object $o->{id}: memlab $ml{2 * $o->{id} + 3}, ljprof $o->{retained}" }
  }
  is($same, $strong, "every strongly reachable object retains as much in memlab ($strong)");
  my ($leak) = grep { $_->{path} eq '_G.sessions' } @{ $g->{retainers} };
  is($ml{ 2 * $leak->{id} + 3 }, $leak->{retained}, "_G.sessions retains $leak->{retained} bytes in both");
}

done_testing();
