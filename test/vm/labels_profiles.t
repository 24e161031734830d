#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Labels in the profiles (sysprof v4, memprof v6): each sample and each
# allocation with a stack carries the set its coroutine ran under, whatever
# coroutines yield and resume under, inside traces too; a set outlives the
# coroutine that had it; past 1024 sets a stream folds the others; sampled
# estimates by label stay unbiased; v3 and v5, asked for, carry none.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;
use LJProf::Run qw(ljprof);

my $dir = scratch();
umask 0;  # The streams hold the program's labels: 0600 whatever the umask.

# Collapsed stacks, each with its label's value as its root frame: { root
# => { stack => count } }.
sub by_root {
  my ($file, $key, @opts) = @_;
  my $r = ljprof('report', '--format=collapsed', "--label-frames=$key", @opts, $file);
  is($r->{rc}, 0, "report --label-frames=$key " . ($file =~ s{.*/}{}r))
    or diag $r->{err};
  my %by;
  for (split /\n/, $r->{out}) {
    next unless /^(.*) (\d+)$/;
    my ($stack, $n) = ($1, $2);
    my ($root, $rest) = split /;/, $stack, 2;
    $by{$root}{$rest // ''} += $n;
  }
  return \%by;
}

# Of by_root's: the samples under root whose stack matches re.
sub under {
  my ($by, $root, $re) = @_;
  my $n = 0;
  while (my ($s, $c) = each %{ $by->{$root} // {} }) { $n += $c if $s =~ $re }
  return $n;
}
sub all_matching {
  my ($by, $re) = @_;
  my $n = 0;
  $n += under($by, $_, $re) for keys %$by;
  return $n;
}

# -- sysprof: coroutines that yield and resume under their own sets -------

for my $mode ('C', 'L') {
  my $bin = "$dir/co-$mode.bin";
  my $run = run_lua(<<"LUA", timeout => 120);
local label = misc.label
local function work_a(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end
local function work_b(n) local x = 0 for i = 1, n do x = x + i % 5 end return x end
label({ route = "/main" })  -- first: the coroutines start with it
local a = coroutine.wrap(function()
  label({ route = "/a" })
  while true do coroutine.yield(work_a(30000)) end
end)
local b = coroutine.wrap(function()
  label({ route = "/b" })
  while true do coroutine.yield(work_b(10000)) end
end)
assert(misc.sysprof.start({ mode = "$mode", interval = 1, path = "$bin" }))
while misc.sysprof.report().samples < 600 do a() b() end
assert(misc.sysprof.stop())
LUA
  is($run->{rc}, 0, "mode $mode: two coroutines switched 600 samples long") or diag $run->{err};
  is((stat $bin)[2] & 07777, 0600, "mode $mode: the stream is its owner's only (0600)");
  my $by = by_root($bin, 'route');
  # Collapsed frames name a Lua function's line: work_a's is 2, work_b's 3.
  my ($work_a, $work_b) = (qr/payload\d+\.lua:2\b/, qr/payload\d+\.lua:3\b/);
  my $in_a = all_matching($by, $work_a);
  my $in_b = all_matching($by, $work_b);
  cmp_ok($in_a, '>=', 100, "mode $mode: samples in work_a ($in_a)");
  is(under($by, '/a', $work_a), $in_a, "mode $mode: each of them under route=/a");
  cmp_ok($in_b, '>=', 20, "mode $mode: samples in work_b ($in_b)");
  is(under($by, '/b', $work_b), $in_b, "mode $mode: each of them under route=/b");
  # The main coroutine's own frames resume the others: its samples are
  # those outside both.
  ok(!grep({ $_ ne '/a' && $_ ne '/b' && $_ ne '/main' } keys %$by),
     "mode $mode: no other label (" . join(' ', sort keys %$by) . ')');
}

# -- memprof: allocations by label, in a trace, v6 ----------------------------

{
  my $bin = "$dir/mem.bin";
  my $run = run_lua(<<"LUA", timeout => 120);
local label = misc.label
local A = label(label({ route = "/a" }))
local B = label(label({ route = "/b" }))
local keep = {}
for i = 1, 3000 do keep[i] = false end  -- no growth in the loop
assert(misc.memprof.start({ path = "$bin", stacks = true }))
for i = 1, 3000 do  -- compiled: the switches and the tables in the trace
  label(i % 3 == 0 and B or A)
  keep[i] = { i }
end
label({})
assert(misc.memprof.stop())
print(#keep)
LUA
  is($run->{rc}, 0, 'memprof: 3000 tables under two sets switched in a loop') or diag $run->{err};
  open my $fh, '<', $bin or die $!;
  binmode $fh;
  read $fh, my $head, 1 << 20;
  like($head, qr/ljm\x06/, 'the stream is v6');
  is((stat $bin)[2] & 07777, 0600, 'memprof: the stream is its owner\'s only (0600)');
  my $by = by_root($bin, 'route', '--count=events');
  my $line = qr/payload\d+\.lua:9\b/;
  my ($a, $b) = (under($by, '/a', $line), under($by, '/b', $line));
  cmp_ok($b, '>=', 1000, "route=/b: the loop's line made its 1000 tables ($b events)");
  is($a, 2 * $b, 'route=/a twice as many, as the loop switched');
  is(all_matching($by, $line), $a + $b, 'none of the loop\'s under another set');
}

# -- each profile, each window, announces its sets afresh ------------------

{
  my $run = run_lua(<<"LUA", timeout => 120);
local function spin(n) local x = 0 for i = 1, n do x = x + i % 3 end return x end
misc.label({ route = "/before" })  -- in force before any profile runs
for w = 1, 2 do
  assert(misc.sysprof.start({ mode = "L", interval = 1, path = "$dir/win" .. w .. ".bin" }))
  while misc.sysprof.report().samples < 50 do spin(10000) end
  assert(misc.sysprof.stop())
end
LUA
  is($run->{rc}, 0, 'two profiles, one set in force from before the first') or diag $run->{err};
  for my $w (1, 2) {
    my $by = by_root("$dir/win$w.bin", 'route');
    my $all = all_matching($by, qr/^/);
    cmp_ok($all, '>=', 45, "profile $w: its samples ($all)");
    is(under($by, '/before', qr/^/), $all,
       "profile $w: every one under route=/before, announced in its stream");
  }
}

# -- a set outlives its coroutine ---------------------------------------------

{
  my $bin = "$dir/gone.bin";
  my $run = run_lua(<<"LUA", timeout => 120);
local function spin(n) local x = 0 for i = 1, n do x = x + i % 3 end return x end
assert(misc.sysprof.start({ mode = "L", interval = 1, path = "$bin" }))
local co = coroutine.create(function()
  misc.label({ job = "short-lived" })
  while misc.sysprof.report().samples < 100 do spin(10000) end
end)
assert(coroutine.resume(co))
co = nil
for _ = 1, 3 do collectgarbage() end  -- the coroutine and its set are gone
local left = misc.sysprof.report().samples + 100
while misc.sysprof.report().samples < left do spin(10000) end
assert(misc.sysprof.stop())
LUA
  is($run->{rc}, 0, 'a coroutine labelled, run and collected') or diag $run->{err};
  my $by = by_root($bin, 'job');
  # The coroutine ran until the profile had 100 samples, under its set
  # from its first line: a few may fall in its start, before the set
  # (under qemu, 11 of 100 once).
  cmp_ok(under($by, 'short-lived', qr/^/), '>=', 80,
         'its samples keep its label after it was collected');
}

# -- past 1024 sets, the others folded ----------------------------------------

{
  my $bin = "$dir/fold.bin";
  my $run = run_lua(<<"LUA", timeout => 120);
local keep = {}
assert(misc.memprof.start({ path = "$bin", stacks = true }))
for i = 1, 1100 do
  misc.label({ request = tostring(i) })
  keep[i] = {}
end
misc.label({})
assert(misc.memprof.stop())
LUA
  is($run->{rc}, 0, '1100 sets, a table under each') or diag $run->{err};
  my $r = ljprof('report', $bin);
  is($r->{rc}, 0, 'report') or diag $r->{err};
  like($r->{out}, qr/\b76\b[^\n]*fold|fold[^\n]*\b76\b/i,
       'the report says 76 sets were folded');
}

# -- sampled: estimates by label ------------------------------------------

{
  my $bin = "$dir/sampled.bin";
  my $run = run_lua(<<"LUA", timeout => 120);
local label = misc.label
local A = label(label({ tenant = "big" }))
local B = label(label({ tenant = "small" }))
local keep = {}
for i = 1, 40000 do keep[i] = false end  -- its growth under neither
assert(misc.memprof.start({ path = "$bin", sample = 1024 }))
for i = 1, 40000 do
  label(i % 4 == 0 and B or A)  -- three tables under big for one under small
  keep[i] = { 1, 2, 3, 4, 5, 6, 7, 8 }
end
label({})
assert(misc.memprof.stop())
LUA
  is($run->{rc}, 0, 'sampled: 30000 tables under big, 10000 under small') or diag $run->{err};
  my $by = by_root($bin, 'tenant');
  my $big = all_matching({ x => $by->{big} }, qr/./);
  my $small = all_matching({ x => $by->{small} }, qr/./);
  my $share = $big + $small ? $big / ($big + $small) : 0;
  # About 4000 samples: a standard deviation of 0.007.
  ok($share > 0.70 && $share < 0.80,
     sprintf('big holds %.2f of the estimated bytes (0.75 expected)', $share));
}

# -- v3 and v5, asked for, carry no labels ---------------------------------

for my $case (['sysprof', 'v3', 'misc.sysprof.start({ mode = "C", interval = 1, path = P, format = "v3" })',
               'while misc.sysprof.report().samples < 50 do spin(10000) end', 'misc.sysprof.stop()'],
              ['memprof', 'v5', 'misc.memprof.start({ path = P, stacks = true, format = "v5" })',
               'for i = 1, 100 do keep[i] = {} end', 'misc.memprof.stop()']) {
  my ($what, $v, $start, $work, $stop) = @$case;
  my $bin = "$dir/$what-$v.bin";
  my $run = run_lua(<<"LUA", timeout => 120);
local P, keep = "$bin", {}
local function spin(n) local x = 0 for i = 1, n do x = x + i % 3 end return x end
misc.label({ route = "/x" })
assert($start)
$work
assert($stop)
LUA
  is($run->{rc}, 0, "$what $v asked for") or diag $run->{err};
  my $by = by_root($bin, 'route');
  ok(!exists $by->{'/x'}, "$what $v: no sample or event carries route=/x");
}

done_testing();
