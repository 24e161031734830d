#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Heap snapshots joined to memprof: each live object gets the line (and
# call stack) that allocated it, from the memprof stream replayed up to
# the snapshot's mark. The demo's leak is held through `cache` and made
# at line 17; a coroutine's local and a callback's upvalue are each named
# by path and by line; addresses reused after frees go to the allocation
# that made the object now there. Snapshots from LJPROF (a signal, every
# SECS, the end of a script), with sysprof running, to a path that cannot
# be written; joins that cannot be made say why.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Lua;

my $dir = scratch();
my $root = "$FindBin::Bin/../..";

sub heap_json {
  my ($snap, @opts) = @_;
  my $out = `ljprof heap --format=json --top=100000 @opts '$snap' 2>'$dir/heap.err'`;
  my $rc = $? >> 8;
  return (eval { decode_json($out) }, $rc, slurp_err());
}

sub slurp_err {
  open my $fh, '<', "$dir/heap.err" or return '';
  local $/;
  return <$fh> // '';
}

# What line $line of a chunk matching $chunk made, over its stacks (not
# what the JIT compiled from there, which its own site names): the
# objects in all, and the biggest stack's entry (its pattern, its stack);
# () if nothing.
sub sites_at {
  my ($doc, $chunk, $line) = @_;
  my @at = sort { $b->{objects} <=> $a->{objects} }
           grep { $_->{site} =~ /^\@\S*$chunk:$line$/ } @{ $doc->{memprof}{sites} };
  return () unless @at;
  my $n = 0;
  $n += $_->{objects} for @at;
  return { %{ $at[0] }, objects => $n };
}

# -- The demo, recorded with --mem --stacks --heap -----------------------------

my $demo = "$root/examples/cache.lua";
open my $fh, '<', $demo or die "$demo: $!";
my @demo = <$fh>;
close $fh;
my ($leak_line) = grep { $demo[$_ - 1] =~ /cache\[id\] = \{ page = page/ } 1 .. @demo;
is($leak_line, 17, 'the demo fills its cache at line 17');
my $mem = "$dir/demo.mem";
my $text = `ljprof record --mem --stacks --heap -o '$mem' -- '$demo' 3000 2>&1`;
is($? >> 8, 0, 'record --mem --stacks --heap ran the demo') or diag $text;
ok(-s "$mem.heap", 'the snapshot at the end is beside the stream');
like($text, qr/^JOINED TO MEMPROF STREAM \Q$mem\E: \d+ of \d+ objects/m,
     'the record report joins the snapshot to the memory profile');
like($text, qr/^\s+\S+ \S+\s+\S+ \S+\s+3000  \@\S*cache\.lua:$leak_line <- \S*cache\.lua:\d+.*: held at <local "cache" of main chunk \S*cache\.lua at line \* in main thread>\[\*\]$/m,
     'text: the 3000 entries made at line 17, with their stack, held at cache[*]');
my ($doc, $rc, $err) = heap_json("$mem.heap", "--memprof='$mem'");
is($rc, 0, 'ljprof heap --memprof joins cleanly') or diag $err;
my ($entries) = sites_at($doc, qr/cache\.lua/, $leak_line);
# One table per request: what the script did, counted by hand (they all
# escape into the cache: nothing is sunk).
is($entries && $entries->{objects}, 3000, 'line 17 made the 3000 tables still live, one per request');
like($entries && $entries->{pattern}, qr/^<local "cache" of main chunk \S*cache\.lua at line \* in main thread>\[\*\]$/,
     'they are held through cache');
cmp_ok($entries ? $entries->{retained} : 0, '>', 3000 * 300,
       'and retain their pages (300+ bytes each) too');
my ($pages) = sites_at($doc, qr/cache\.lua/, 16);
is($pages && $pages->{objects}, 3000, 'each page, a string of its own (no two alike), made under line 16');
my ($cache) = grep { $_->{path} =~ /^<local "cache" of main chunk/ } @{ $doc->{retainers} };
like($cache && $cache->{allocated} && $cache->{allocated}{site}, qr/cache\.lua:4$/,
     'the cache table itself: a retainer, allocated at line 4');
cmp_ok($doc->{memprof}{objects_known}, '>=', 6000, 'objects joined: at least the entries and their pages');

# -- Leaks by path and by line; addresses reused -------------------------------

my $mem2 = "$dir/leaks.mem";
my $snap2 = "$dir/leaks.heap";
my $leaks = <<"LUA";
assert(misc.memprof.start{path = "$mem2", stacks = true})
local before = {}
do
  local tmp = {}
  for i = 1, 2000 do tmp[i] = { i } end  -- TEMP
  for i = 1, 2000 do before[tostring(tmp[i])] = true end
end
collectgarbage() collectgarbage()
keep = {}
local reused = 0
for i = 1, 2000 do
  keep[i] = { i }  -- KEEP
  if before[tostring(keep[i])] then reused = reused + 1 end
end
local function make_handler()
  local seen = {}
  return function(x) seen[#seen + 1] = { x } end  -- CALLBACK
end
on_data = make_handler()
for i = 1, 400 do on_data(i) end
local co = coroutine.create(function()
  local buf = {}
  for i = 1, 300 do buf[i] = { i } end  -- COROUTINE
  coroutine.yield()
end)
assert(coroutine.resume(co))
assert(misc.heapsnapshot("$snap2"))
keep = nil collectgarbage() collectgarbage()  -- what follows the mark
after = {}
for i = 1, 2000 do after[i] = { i } end  -- AFTER
misc.memprof.stop()
print("reused", reused)
LUA
my $run = run_lua($leaks);
is($run->{rc}, 0, 'the leaking script ran') or diag $run->{err};
my ($reused) = $run->{out} =~ /^reused\t(\d+)/m;
cmp_ok($reused // 0, '>', 100, "the kept tables reuse addresses of freed ones ($reused)");
($doc, $rc, $err) = heap_json($snap2, "--memprof='$mem2'");
is($rc, 0, 'the join reads') or diag $err;
my %line = map { ($_ => line_of($leaks, $_)) } qw(TEMP KEEP CALLBACK COROUTINE AFTER);
ok(!sites_at($doc, qr/payload\d+\.lua/, $line{TEMP}),
   'nothing live is charged to the freed tables\' line, whose addresses were reused');
ok(!sites_at($doc, qr/payload\d+\.lua/, $line{AFTER}),
   'nor to a line that ran after the snapshot (the replay stops at its mark)');
my ($keep) = sites_at($doc, qr/payload\d+\.lua/, $line{KEEP});
is($keep && $keep->{objects}, 2000, 'the 2000 kept tables, to their own line');
is($keep && $keep->{pattern}, '_G.keep[*]', 'held at _G.keep[*]');
my ($cb) = sites_at($doc, qr/payload\d+\.lua/, $line{CALLBACK});
is($cb && $cb->{objects}, 402, 'the callback\'s line made 400 tables, and the closure with its upvalue');
like($cb && $cb->{pattern}, qr/^<upvalue "seen" of function \S+payload\d+\.lua:$line{CALLBACK}>\[\*\]$/,
     'held by the callback closure\'s upvalue "seen"');
like($cb && $cb->{stack}[1], qr/payload\d+\.lua:\d+$/, 'its caller is the main chunk\'s loop');
my ($co) = sites_at($doc, qr/payload\d+\.lua/, $line{COROUTINE});
is($co && $co->{objects}, 300, 'the coroutine made 300 tables');
like($co && $co->{pattern}, qr/^<local "buf" of function \S+payload\d+\.lua:\d+ at line \* in coroutine \*>\[\*\]$/,
     'held by the suspended coroutine\'s local "buf"');
my ($top_keep) = grep { $_->{path} eq '_G.keep' } @{ $doc->{retainers} };
ok($top_keep && $top_keep->{allocated} && $top_keep->{allocated}{site} =~ /payload\d+\.lua:\d+$/,
   'a retainer says where it was allocated');
my $text2 = `ljprof heap --top=50 --memprof='$mem2' '$snap2'`;
like($text2, qr/^\s+\S+ \S+\s+\S+ \S+\s+400  \@\S+payload\d+\.lua:$line{CALLBACK} <- .*: held at <upvalue "seen" of function \S+:$line{CALLBACK}>\[\*\]$/m,
     'text: the callback\'s line, held by its upvalue');

# A sampled stream joins alike: only the sampled blocks have a site (at
# 1 byte, every block is sampled).
my $sampled = run_lua(<<"LUA");
assert(misc.memprof.start{path = "$dir/sampled.mem", sample = 1})
local function fill() local t = {} for i = 1, 700 do t[i] = { i } end return t end
kept = fill()
assert(misc.heapsnapshot("$dir/sampled.heap"))
misc.memprof.stop()
LUA
($doc, $rc, $err) = heap_json("$dir/sampled.heap", "--memprof='$dir/sampled.mem'");
is($rc, 0, 'a sampled stream joins') or diag $err;
is($doc->{memprof}{sample}, 1, 'the report says it was sampled, and at what interval');
my ($fill) = grep { $_->{pattern} && $_->{pattern} eq '_G.kept[*]' } @{ $doc->{memprof}{sites} };
is($fill && $fill->{objects}, 701, 'the 700 tables sampled, with the one that holds them (same line and stack)');

# -- Joins that cannot be made ---------------------------------------------------

($doc, $rc, $err) = heap_json($snap2, "--memprof='$mem'");
is($rc, 1, 'another run\'s stream: exit status 1');
like($err, qr/\Q$mem\E: cannot join \S+: the stream has no mark of this snapshot/, 'and why');
ok($doc && $doc->{retainers} && !$doc->{memprof}, 'the report comes without the join');
# The stream cut before its mark: the symbol table and the first events.
open my $in, '<:raw', $mem2 or die "$mem2: $!";
my $whole = do { local $/; <$in> };
close $in;
open my $cut, '>:raw', "$dir/cut.mem" or die $!;
print $cut substr($whole, 0, int(length($whole) / 2));
close $cut;
($doc, $rc, $err) = heap_json($snap2, "--memprof='$dir/cut.mem'");
like($err, qr/cut\.mem: cannot join \S+: the stream ends before the snapshot's mark: .*offset \d+/,
     'a stream cut before the mark: said so, with where it ends');
is($rc, 1, 'exit status 1');
my $v4 = "$dir/v4.mem";
my $snap4 = "$dir/v4.heap";
$run = run_lua(qq{assert(misc.memprof.start{path = "$v4"}) x = {} assert(misc.heapsnapshot("$snap4")) misc.memprof.stop()});
($doc, $rc, $err) = heap_json($snap4, "--memprof='$v4'");
like($err, qr/cannot join \S+: the snapshot was taken while no memprof stream of version 5 ran/,
     'a v4 stream gets no mark: said so');
($doc, $rc, $err) = heap_json($snap2, "--memprof='$dir/none.mem'");
like($err, qr/none\.mem: No such file/, 'a missing stream: said so');

# -- LJPROF: a snapshot after each signal ---------------------------------------

my $sig = <<'LUA';
local ffi = require("ffi")
ffi.cdef[[int kill(int pid, int sig); int getpid(void);]]
local function churn() local t = {} for i = 1, 2000 do t[i] = { i } end end
-- Filled in a function: no slot of the main chunk holds the last one.
local function fill(n) local t = {} for i = 1, n do t[i] = { i } end return t end
held = fill(500)
ffi.C.kill(ffi.C.getpid(), 10)  -- SIGUSR1: the next GC step takes it
churn()
later = fill(700)
ffi.C.kill(ffi.C.getpid(), 10)
churn()
print("done")
LUA
my $base = "$dir/sig.heap";
$run = run_lua($sig, env => { LJPROF => "heap:signal=SIGUSR1,path=$base" });
is($run->{out}, "done\n", 'the signalled script ran to its end') or diag $run->{err};
ok(-s "$base.1" && -s "$base.2" && !-e "$base.3" && !-e $base, 'one numbered snapshot per signal');
my ($s1) = heap_json("$base.1");
my ($s2) = heap_json("$base.2");
my %p1 = map { ($_->{pattern} => $_->{objects}) } @{ $s1->{patterns} };
my %p2 = map { ($_->{pattern} => $_->{objects}) } @{ $s2->{patterns} };
is($p1{'_G.held[*]'}, 500, 'the first holds the 500 tables made before the signal');
ok(!exists $p1{'_G.later[*]'}, 'and none made after it');
is($p2{'_G.later[*]'}, 700, 'the second holds those made before it');

# While sysprof runs, with a path that cannot be written.
$run = run_lua(<<"LUA", env => { LJPROF => "heap:signal=SIGUSR1,path=$dir/no/such/h.bin" });
local ffi = require("ffi")
ffi.cdef[[int kill(int pid, int sig); int getpid(void);]]
assert(misc.sysprof.start{mode = "C", interval = 1, path = "$dir/cpu.bin"})
x = {} for i = 1, 100 do x[i] = { i } end
assert(misc.heapsnapshot("$dir/during.heap"))
ffi.C.kill(ffi.C.getpid(), 10)
local t = {} for i = 1, 5000 do t[i] = { i } end
assert(misc.sysprof.stop())
print("goes on")
LUA
is($run->{out}, "goes on\n", 'an unwritable LJPROF path: the program goes on');
like($run->{err}, qr{^LJPROF: heap snapshot \Q$dir\E/no/such/h\.bin\.1 not written: No such file or directory$}m,
     'and says which path and why');
my ($during, $drc, $derr) = heap_json("$dir/during.heap");
is($drc, 0, 'a snapshot while sysprof runs reads cleanly') or diag $derr;
is({ map { ($_->{pattern} => $_->{objects}) } @{ $during->{patterns} } }->{'_G.x[*]'}, 100,
   'and holds what the script made');
my $cpu = `ljprof report --format=json '$dir/cpu.bin' 2>&1`;
is($? >> 8, 0, 'the sysprof stream around it reads cleanly') or diag $cpu;

# -- every=SECS, and the settings' errors -----------------------------------------

# Each program allocates until the snapshot it waits for, arg[1], is there.
my $until = <<'LUA';
local tap = require("tap")
local function exists(path)
  local f = io.open(path) if f then f:close() end
  return f and 1 or 0
end
local more = tap.waiting(arg[1], 1, function() return exists(arg[1]) end, 60)
LUA
$run = run_lua($until . <<'LUA', args => ["$dir/every.heap.2"], env => { LJPROF => "heap:every=1,path=$dir/every.heap" });
while more() do local t = {} for i = 1, 100 do t[i] = { i } end end
LUA
ok(-s "$dir/every.heap.1" && -s "$dir/every.heap.2", 'every=1: a numbered snapshot each second')
  or diag `ls $dir`, $run->{err};
my $busy = "$dir/busy.lua";
open my $bfh, '>', $busy or die "$busy: $!";
print $bfh $until . <<'LUA';
local function fill() local t = {} for i = 1, 40 do t[i] = { i } end return t end
kept = fill()
while more() do local t = {} for i = 1, 100 do t[i] = { i } end end
kept2 = fill()
LUA
close $bfh;
$text = `ljprof record --heap --heap-every=1 -o '$dir/rec.heap' -- '$busy' '$dir/rec.heap.2' 2>&1`;
my @numbered = sort { $a <=> $b } map { /\.(\d+)$/ ? $1 : () } glob("'$dir/rec.heap.'*");
cmp_ok(scalar(@numbered), '>=', 3, 'record --heap-every=1: numbered snapshots, one a second and the end')
  or diag $text;
like($text, qr/^HEAP SNAPSHOT \Q$dir\E\/rec\.heap\.$numbered[-1]:/m, 'the report is of the last, the end\'s');
like($text, qr/^\s+\S+ \S+\s+40  _G\.kept2\[\*\]$/m, 'which holds what the script made last');
$run = run_lua('print(1)', env => { LJPROF => 'heap:every=0' });
like($run->{err}, qr/^LJPROF: bad setting 'heap:every=0': heap: every must be whole seconds, from 1 to 31536000, not '0'; not profiling$/m,
     'every=0 is refused, clearly');
$run = run_lua('print(1)', env => { LJPROF => 'heap:end=2' });
like($run->{err}, qr/heap: end must be 1, script or 0, not '2'/, 'end=2 is refused');
# The end of the VM (the default): lua_close, where the main chunk's
# locals are gone and the globals stay.
$run = run_lua(<<'LUA', env => { LJPROF => "heap:path=$dir/close.heap" });
local function fill() local t = {} for i = 1, 30 do t[i] = { i } end return t end
global_list, local_list = fill(), nil
local mine = fill()
LUA
my ($closed) = heap_json("$dir/close.heap");
my %pc = map { ($_->{pattern} => $_->{objects}) } @{ $closed ? $closed->{patterns} : [] };
is($pc{'_G.global_list[*]'}, 30, 'heap alone: a snapshot at lua_close, with what the globals hold');
ok(!grep({ /local "mine"/ } keys %pc), 'and no local of the finished main chunk (end=script is for that)');
$run = run_lua('print(1)', env => { LJPROF => 'heap:strings=x' });
like($run->{err}, qr/heap: strings must be whole bytes, 1 or more, not 'x'/, 'strings=x is refused');
my $bad = `ljprof record --heap --heap-every=0 -- '$demo' 2>&1`;
like($bad, qr/--heap-every wants whole seconds from 1 to 31536000, not '0'/, 'record --heap-every=0 is refused');
$bad = `ljprof record --heap-every=5 -- '$demo' 2>&1`;
like($bad, qr/--heap-every is for --heap/, '--heap-every alone is refused');
$bad = `ljprof record --cpu --heap -- '$demo' 2>&1`;
like($bad, qr/--heap goes with --mem or alone/, '--cpu --heap is refused, with why');

# record --heap without a profiler, a script ending by os.exit.
my $alone = run_lua('local function fill() local t = {} for i = 1, 50 do t[i] = { i } end return t end cached = fill()');
$text = `ljprof record --heap -o '$dir/alone.heap' -- '$alone->{script}' 2>&1`;
like($text, qr/^\s+\S+ \S+\s+50  _G\.cached\[\*\]$/m, 'record --heap alone: the heap report');
my $exit_code = <<'LUA';
local function fill()
  local t = {}
  for i = 1, 60 do t[i] = { i } end  -- KEPT
  return t
end
kept = fill()
os.exit(3)
LUA
my $exits = run_lua($exit_code);
my $kept = line_of($exit_code, 'KEPT');
$text = `ljprof record --mem --heap -o '$dir/exit.mem' -- '$exits->{script}' 2>&1`;
is($? >> 8, 3, 'a script ending by os.exit(3): its exit status');
like($text, qr/^\s+\S+ \S+\s+\S+ \S+\s+60  \@\S+payload\d+\.lua:$kept: held at _G\.kept\[\*\]$/m,
     'the snapshot at its exit, joined to the memory profile (v5 without stacks)');
my $dies = run_lua('local ffi = require("ffi") ffi.cdef"void _exit(int);" ffi.C._exit(0)');
$text = `ljprof record --heap -o '$dir/gone.heap' -- '$dies->{script}' 2>&1`;
like($text, qr/no heap snapshot was written/, 'a script that leaves by _exit(): no snapshot, said so');

done_testing();
