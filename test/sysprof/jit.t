#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# The trace compiler's events from the VM, checked against what -jv prints
# in the same run: a loop the compiler gives up on is interpreted, with
# -jv's reason; a start aborted until blacklisted says so; every trace
# -jv starts is an attempt at its location; an exit taken on every other
# iteration is the hottest, at its line; mode D writes the events too.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Lua;

my $dir = scratch();
plan skip_all => 'no JIT in this build'
  unless `luajit -e "print(jit and jit.status())" 2>&1` =~ /^true/;

sub jit_json {
  my ($file) = @_;
  my $out = `ljprof report --jit --format=json '$file' 2>&1`;
  return eval { JSON::PP->new->decode($out) } || { error => $out };
}

# A loop whose body holds a closure (FNEW: NYI in 2.1's recorder), run
# long enough to be sampled; -jv's lines go to a file.
my $code = <<'LUA';
local jv = require("jit.v")
jv.on(arg[1])
local function work(n)
  local s = 0
  for i = 1, n do                       -- START
    local f = function() return i end   -- NYI
    s = s + f() + #tostring(i)
  end
  return s
end
local x = 0
for r = 1, 300 do x = x + work(3000) end
jv.off()
print(x)
LUA
my $start = line_of($code, '-- START');
my $nyi = line_of($code, '-- NYI');
my $bin = "$dir/nyi.bin";
my $r = run_lua($code, args => ["$dir/nyi.jv"], env => { LJPROF => "cpu:mode=C,interval=1,path=$bin" });
is($r->{rc}, 0, 'nyi: ran') or diag $r->{err};
my $jv = do { local $/; open my $fh, '<', "$dir/nyi.jv" or die $!; <$fh> };
my $base = (split m{/}, $r->{script})[-1];
my @aborts = $jv =~ /^\[TRACE --- \Q$base\E:$start -- (.+?) at \Q$base\E:$nyi\]$/mg;
cmp_ok(scalar @aborts, '>', 0, "nyi: -jv aborts the trace at line $start, at line $nyi (" . scalar(@aborts) . ')');
my $j = jit_json($bin);
my ($line) = grep { $_->{location} =~ /\Q$base\E:$nyi$/ } @{ $j->{lines} || [] };
ok($line, "nyi: line $nyi is among the interpreted lines") or diag explain $j;
cmp_ok($line && $line->{interpreted}, '>', 10, "nyi: line $nyi interpreted ($line->{interpreted} samples)");
is_deeply($line && [map { $_->{reason} } @{ $line->{aborts} }], [$aborts[0]],
          "nyi: its reason is -jv's: $aborts[0]");
my ($st) = grep { $_->{location} =~ /\Q$base\E:$start$/ && $_->{kind} eq 'trace' } @{ $j->{starts} || [] };
is($st && $st->{aborted}, scalar @aborts, "nyi: the start at line $start aborted as often as -jv says");
cmp_ok($st && $st->{blacklisted}, '>=', 1, 'nyi: ... and was blacklisted');
is($st && $st->{attempts}, scalar(() = $jv =~ /^\[TRACE (?:---|\s*\d+) \Q$base\E:$start\b/mg),
   'nyi: attempts there are -jv\'s trace starts there');

# Every trace -jv starts is an attempt, at its start location.
my %jv_starts;
$jv_starts{$1}++ while $jv =~ /^\[TRACE (?:---|\s*\d+) (?:\(\d+\/\S+\) )?\Q$base\E:(\d+)/mg;
my %ours;
$ours{ ($_->{location} =~ /:(\d+)$/)[0] } += $_->{attempts} for grep { $_->{location} =~ /\Q$base\E/ } @{ $j->{starts} };
is_deeply(\%ours, \%jv_starts, 'attempts by start line are -jv\'s trace starts');

# A side exit taken on every other iteration, side traces never made.
my $exit_code = <<'LUA';
jit.opt.start("hotexit=2000000000")
local n = 0
for i = 1, 4000000 do
  if i % 2 == 0 then n = n + 1 end   -- EXIT
end
print(n)
LUA
my $ex = line_of($exit_code, '-- EXIT');
$r = run_lua($exit_code, env => { LJPROF => "cpu:mode=C,interval=1,path=$dir/exit.bin" });
is($r->{rc}, 0, 'exit: ran') or diag $r->{err};
$j = jit_json("$dir/exit.bin");
my $hot = $j->{exits}[0] || {};
cmp_ok($hot->{count} // 0, '>=', 1_900_000, "exit: the hottest exit is taken every other iteration ($hot->{count})");
like($hot->{location} // '', qr/:$ex$/, "exit: ... at line $ex");
my $sum = 0;
$sum += $_->{count} for @{ $j->{exits} || [] };
is($j->{exits_taken}, $sum, "exit: the exits taken add up ($sum)");

# Mode D and L write the events too.
for my $mode (qw(D L)) {
  $r = run_lua($code, args => ["$dir/nyi-$mode.jv"], env => { LJPROF => "cpu:mode=$mode,interval=1,path=$dir/$mode.bin" });
  $j = jit_json("$dir/$mode.bin");
  ok($j->{events} && $j->{started} > 0 && $j->{aborted} > 0, "mode $mode: events written ($j->{started} started)");
}

# The JIT off for the whole run: no events, and the report says so.
$r = run_lua("jit.off()\nlocal s = 0\nfor i = 1, 3e7 do s = s + i end\nprint(s)\n",
             env => { LJPROF => "cpu:mode=C,interval=1,path=$dir/off.bin" });
my $text = `ljprof report --jit '$dir/off.bin' 2>&1`;
like($text, qr/The JIT compiler was off/, 'jit.off(): the report says the compiler was off');

# Coroutines: recording stops where a coroutine yields or is resumed, and
# traces go on stitched there; each start is -jv's, with its kind.
{
  my $co = <<'LUA';
local jv = require("jit.v")
jv.on(arg[1])
local gen = coroutine.wrap(function()
  local i = 0
  while true do i = i + 1; coroutine.yield(i) end
end)
local s = 0
for r = 1, 3e5 do
  s = s + gen()
end
jv.off()
print(s)
LUA
  $r = run_lua($co, args => ["$dir/co.jv"], env => { LJPROF => "cpu:mode=C,interval=1,path=$dir/co.bin" });
  is($r->{rc}, 0, 'coroutines: ran') or diag $r->{err};
  my $jvco = do { local $/; open my $fh, '<', "$dir/co.jv" or die $!; <$fh> };
  my $cobase = (split m{/}, $r->{script})[-1];
  my @want = sort map { my ($p, $l) = /^\[TRACE\s+\d+ (\(\d+\/(?:\d+|stitch)\) )?\Q$cobase\E:(\d+) /;
                        (!$p ? 'trace' : $p =~ /stitch/ ? 'stitched trace' : 'side trace') . " $l" }
             grep { /^\[TRACE\s+\d+ / } split /\n/, $jvco;
  $j = jit_json("$dir/co.bin");
  my @got = sort map { my ($l) = $_->{location} =~ /:(\d+)$/; ("$_->{kind} $l") x $_->{attempts} } @{ $j->{starts} };
  cmp_ok(scalar @want, '>=', 3, 'coroutines: -jv made traces, stitched among them (' . join(', ', @want) . ')');
  is_deeply(\@got, \@want, "coroutines: the events' starts are -jv's, kind and line");
}

# Trace numbers given again: two loops, each with an exit taken on every
# other iteration, take turns, every trace flushed between them, so that
# each round's traces have the numbers of the last round's. Each exit is
# counted under its own loop's start, never under the other's.
{
  my $turns = <<'LUA';
jit.opt.start("hotexit=1000")  -- above 255: never a side trace, always an exit
local function f(n) local s = 0 for i = 1, n do if i % 2 == 0 then s = s + 1 else s = s - 1 end end return s end -- F
local function g(n) local s = 0 for i = 1, n do if i % 2 == 0 then s = s + 2 else s = s - 2 end end return s end -- G
local x = 0
for r = 1, 40 do
  x = x + (r % 2 == 1 and f(2e5) or g(2e5))
  jit.flush()
end
print(x)
LUA
  my ($lf, $lg) = (line_of($turns, '-- F'), line_of($turns, '-- G'));
  $r = run_lua($turns, env => { LJPROF => "cpu:mode=C,interval=1,path=$dir/turns.bin" });
  is($r->{rc}, 0, 'turns: ran') or diag $r->{err};
  $j = jit_json("$dir/turns.bin");
  my %at;  # the line an exit's start is on => the lines it resumes at
  for (@{ $j->{exits} || [] }) {
    my ($s) = $_->{start} =~ /:(\d+)$/;
    my ($l) = $_->{location} =~ /:(\d+)$/;
    $at{$s // '?'}{$l // '?'} += $_->{count};
  }
  is_deeply([sort keys %at], [sort { $a <=> $b } $lf, $lg], "turns: exits under the starts of both loops")
    or diag explain $j->{exits};
  is_deeply([keys %{ $at{$lf} || {} }], [$lf], "turns: f's exits resume in f only");
  is_deeply([keys %{ $at{$lg} || {} }], [$lg], "turns: g's exits resume in g only");
  cmp_ok(($at{$lf}{$lf} // 0) + ($at{$lg}{$lg} // 0), '>', 1e6, 'turns: millions of exits counted');
}

# Asked without the events (LJPROF jit=0, misc.sysprof.start{jit=false},
# record --no-jit-events): the same program's stream has none, its
# samples in the compiler none of their trace, and the report says so.
for my $way (['LJPROF jit=0', { LJPROF => "cpu:mode=C,interval=1,jit=0,path=$dir/noev.bin" }, ''],
             ['start{jit=false}', {}, "assert(misc.sysprof.start({mode='C', interval=1, jit=false, path='$dir/noev.bin'}))\n"]) {
  my ($name, $env, $head) = @$way;
  unlink "$dir/noev.bin";
  $r = run_lua($head . $code, args => ["$dir/noev.jv"], env => $env);
  is($r->{rc}, 0, "$name: ran") or diag $r->{err};
  $j = jit_json("$dir/noev.bin");
  ok(!$j->{events} && $j->{started} == 0 && @{ $j->{starts} } == 0,
     "$name: no events, no starts") or diag explain $j;
  my @why = map { @{ $_->{aborts} } } @{ $j->{lines} };
  ok(@{ $j->{lines} } > 0 && !@why, "$name: lines interpreted, none with a reason") or diag explain $j;
  cmp_ok($j->{samples}, '>', 10, "$name: the samples are there ($j->{samples})");
  my $folded = `ljprof report --format=collapsed '$dir/noev.bin' 2>&1`;
  unlike($folded, qr/\[JIT\] trace|\[exit\] TRACE/, "$name: no [JIT] or [exit] frame without the events");
  like(`ljprof report --jit '$dir/noev.bin' 2>&1`, qr/none of the compiler's events \(.*jit=false/,
       "$name: report --jit says the stream has none, and why it may not");
}
{
  open my $fh, '>', "$dir/rec.lua" or die $!;
  print $fh $code;
  close $fh;
  system("ljprof record --cpu --interval=1 --no-jit-events -o '$dir/rec.bin' -- '$dir/rec.lua' '$dir/rec.jv' >/dev/null 2>&1");
  is($?, 0, 'record --no-jit-events: ran');
  $j = jit_json("$dir/rec.bin");
  ok(!$j->{events} && $j->{samples} > 10, "record --no-jit-events: no events, $j->{samples} samples");
}

# jit.flush() mid-profile: a flush asked by the program.
$r = run_lua("local s = 0\nfor r = 1, 50 do\n  for i = 1, 1e5 do s = s + i end\n  jit.flush()\nend\nprint(s)\n",
             env => { LJPROF => "cpu:mode=C,interval=1,path=$dir/flush.bin" });
$j = jit_json("$dir/flush.bin");
is($j->{flushes}{asked}, 50, 'jit.flush(): 50 flushes, asked by the program');
cmp_ok($j->{started}, '>=', 50, 'jit.flush(): the loop compiled again after each');

done_testing();
