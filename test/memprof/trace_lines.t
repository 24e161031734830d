#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Stream version 4 (the table form of start() and `ljprof record`): what
# compiled code allocates is charged to the Lua line the trace runs, the
# same lines and counts as with the JIT off; format "v3" keeps the
# reference's stream, charged to traces.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;
use LJProf::Run;

# Three lines allocate tables that escape (none is sunk), in a loop hot
# enough to be compiled, and a fourth in a function it calls by pcall
# (which the trace inlines).
my $payload = <<'LUA';
local jitmode, format, path = arg[1], arg[2], arg[3]
if jitmode == "off" then jit.off() end
local keep = {}
for i = 1, 300 do keep[i] = false end local function made(i) return { i, i } end  -- line 4
collectgarbage() collectgarbage("stop")
assert(misc.memprof.start({ path = path, format = format }))
for i = 1, 3000 do
  local a = { i }                                     -- line 8
  local b = { i, i, i, i, i, i, i, i, i }             -- line 9
  local c = { x = i, y = i }                          -- line 10
  local ok, d = pcall(made, i)                        -- line 11
  keep[i % 300 + 1] = a; keep[(i + 100) % 300 + 1] = b; keep[(i + 200) % 300 + 1] = c
  keep[(i + 50) % 300 + 1] = d
end
assert(misc.memprof.stop())
LUA

my %events;
for my $case (['off', 'v4'], ['on', 'v4'], ['on', 'v3']) {
  my ($jit, $format) = @$case;
  my $bin = scratch() . "/lines-$jit-$format.bin";
  my $run = run_lua($payload, args => [$jit, $format, $bin]);
  is($run->{rc}, 0, "JIT $jit, $format: ran") or diag $run->{err};
  open my $fh, '<:raw', $bin or die "$bin: $!";
  local $/;
  my $stream = <$fh>;
  my $at = index($stream, "ljm");
  is(ord(substr($stream, $at + 3, 1)), $format eq 'v4' ? 4 : 3, "JIT $jit, $format: the stream says its version");
  my $r = memprof_report($bin);
  is($r->{rc}, 0, "JIT $jit, $format: the stream reads back complete") or diag $r->{err};
  my $src = '@' . $run->{script};
  $events{"$jit-$format"} = { map { $_ => location($r, "$src:$_")->{alloc_events} } 4, 8, 9, 10 };
  $events{"$jit-$format"}{trace} = 0;
  $events{"$jit-$format"}{trace} += $_->{alloc_events} for loc_matching($r, qr/^TRACE/);
}

my ($off, $on, $v3) = @events{'off-v4', 'on-v4', 'on-v3'};
for my $line (4, 8, 9, 10) {
  cmp_ok($off->{$line}, '>=', 3000, "JIT off: line $line allocates on each of the 3000 iterations ($off->{$line})");
  is($on->{$line}, $off->{$line}, "JIT on, v4: line $line is charged exactly as with the JIT off");
}
is($on->{trace}, 0, 'JIT on, v4: nothing is left charged to a trace');
cmp_ok($v3->{trace}, '>', 2000 * 4, "JIT on, v3: the reference's stream charges the trace ($v3->{trace})");
cmp_ok($v3->{4} + $v3->{8} + $v3->{9} + $v3->{10}, '<', 1000 * 4, 'JIT on, v3: and not the lines');

# More call sites than the profile keeps (192), in traces compiled before
# it starts: 300 lines in twelve loops, each allocating once an iteration;
# the sites are forgotten and found again, each line charged exactly.
my @many_lines;
my $many = "local jitmode, path = arg[1], arg[2]\n" .
  "if jitmode == 'off' then jit.off() end\n" .
  "local keep, f = {}, {}\n";
for my $j (1 .. 12) {
  $many .= "f[$j] = function(n) for i = 1, n do\n";
  for my $k (1 .. 25) {
    push @many_lines, 1 + ($many =~ tr/\n//);
    $many .= "  keep[" . (($j - 1) * 25 + $k) . "] = { i }\n";
  }
  $many .= "end end\n";
}
$many .= <<'LUA';
local function ntraces()
  local n = 0
  for t = 1, 1000 do if require("jit.util").traceinfo(t) then n = n + 1 end end
  return n
end
for j = 1, 12 do f[j](300) end
ntraces()
local before = ntraces()
collectgarbage("stop")
assert(misc.memprof.start({ path = path }))
for _ = 1, 2 do for j = 1, 12 do f[j](200) end end
assert(misc.memprof.stop())
io.write(before, " ", ntraces())
LUA
my %many;
for my $jit ('off', 'on') {
  my $bin = scratch() . "/many-$jit.bin";
  my $run = run_lua($many, args => [$jit, $bin], timeout => 60);
  is($run->{rc}, 0, "300 sites, JIT $jit: ran") or diag $run->{err};
  my $r = memprof_report($bin);
  my $src = '@' . $run->{script};
  $many{$jit} = [ map { location($r, "$src:$_")->{alloc_events} } @many_lines ];
  $many{"$jit-trace"} = 0;
  $many{"$jit-trace"} += $_->{alloc_events} for loc_matching($r, qr/^TRACE/);
  $many{"$jit-out"} = $run->{out};
}
like($many{'on-out'}, qr/^(\d+) \1$/, "300 sites, JIT on: no trace appears while profiled ($many{'on-out'})");
cmp_ok(($many{'on-out'} =~ /^(\d+)/)[0], '>=', 12, '300 sites, JIT on: the twelve loops are compiled before');
is(scalar(grep { $_ >= 400 } @{ $many{off} }), 300, '300 sites, JIT off: each line allocates on each of the 400 iterations');
is_deeply($many{on}, $many{off}, '300 sites, JIT on: each line is charged exactly as with the JIT off');
is($many{'on-trace'}, 0, '300 sites, JIT on: nothing is left charged to a trace');

# The table form's default is v4; the reference's call start(path) is v3.
my $bin = scratch() . '/default.bin';
my $run = run_lua(<<"LUA");
assert(misc.memprof.start({ path = "$bin" })) assert(misc.memprof.stop())
local f = assert(io.open("$bin", "rb")) local s = f:read("*a") f:close()
io.write(s:byte(s:find("ljm", 1, true) + 3), " ")
assert(misc.memprof.start("$bin")) assert(misc.memprof.stop())
f = assert(io.open("$bin", "rb")) s = f:read("*a") f:close()
io.write(s:byte(s:find("ljm", 1, true) + 3))
LUA
is($run->{out}, '4 3', 'start{path} writes v4, start(path) v3');

# ljprof record writes v4: the demo's cache entries are charged to the line
# that makes them, not to a trace.
my $demo = "$FindBin::Bin/../../examples/cache.lua";
my $rec = ljprof('record', '--mem', '-o', scratch() . '/demo.bin', '--format=json', '--', $demo, 3000);
is($rec->{rc}, 0, 'record: the demo ran') or diag $rec->{err};
my ($json) = $rec->{out} =~ /(\{.*\})\s*\z/s;
my $doc = eval { JSON::PP->new->decode($json) };
my %loc = map { $_->{location} => $_ } @{ $doc ? $doc->{locations} : [] };
my ($line17) = grep { /cache\.lua:17$/ } keys %loc;
ok($line17, 'record: the demo names line 17 (cache[id] = { ... })');
is($line17 && $loc{$line17}{live_blocks}, 2 * 3000 + 1, 'record: line 17 holds every cache entry (2 blocks each, and the cache)');
is(scalar(grep { /^TRACE/ && $loc{$_}{live_bytes} > 0 } keys %loc), 0, 'record: no trace holds memory');

done_testing;
