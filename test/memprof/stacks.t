#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Call stacks (stacks = true, stream ljm v5): one allocation site reached
# from two callers, one of which keeps what it gets. Every event recorded:
# the split between the callers is exact, the in-use view names the keeping
# caller's stack, in the interpreter and in traces (where the site is
# inlined into its caller's loop). Then the edges: recursion deeper than
# the cap, coroutines, errors, finalizers, stop() from a callback, a full
# disk, os.exit().
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use File::Temp qw(tempdir);
use LJProf::Lua;

my $two_callers = two_callers(head => 'JIT', make => '  return { i, i, i, i, i, i }  -- SITE',
                              n => 2000, options => '{ path = BIN, stacks = true }');
my %l = map { $_ => line_of($two_callers, "-- $_") } qw(SITE KEEP CHURN CALLK CALLC);

for my $jit ('off', 'on') {
  my $bin = scratch() . "/two-$jit.bin";
  (my $code = $two_callers) =~ s/JIT/jit.$jit()/;
  $code =~ s/BIN/"$bin"/;
  my $run = run_lua($code);
  is($run->{rc}, 0, "jit $jit: ran") or diag $run->{err};
  my $alloc = memprof_stacks($bin, $run->{script});
  my $keep = "pmain;\@F:$l{CALLK};\@F:$l{KEEP};\@F:$l{SITE}";
  my $churn = "pmain;\@F:$l{CALLC};\@F:$l{CHURN};\@F:$l{SITE}";
  ok($alloc->{$keep}, "jit $jit: the keeping caller's stack, site last: $keep")
    or diag explain $alloc;
  ok($alloc->{$churn}, "jit $jit: the churning caller's stack: $churn");
  is($alloc->{$churn}, 3 * $alloc->{$keep},
     "jit $jit: allocated bytes split exactly 1:3, as the calls ($alloc->{$keep} and $alloc->{$churn})");
  my $r = memprof_report($bin);
  is(location($r, '@' . $run->{script} . ":$l{SITE}")->{alloc_bytes},
     $alloc->{$keep} + $alloc->{$churn}, "jit $jit: the two stacks make up the site");
  my $inuse = memprof_stacks($bin, $run->{script}, '--leak-only');
  is($inuse->{$keep}, $alloc->{$keep}, "jit $jit: in use: all the keeper's tables");
  cmp_ok($inuse->{$churn} // 0, '<=', $alloc->{$churn} / 6000 * 8,
         "jit $jit: in use: at most the 8 the churner's ring holds");
  my ($top) = sort { $inuse->{$b} <=> $inuse->{$a} } keys %$inuse;
  is($top, $keep, "jit $jit: the in-use view's first stack is the keeping caller's");
  my $text = `ljprof report --leak-only '$bin'`;
  like($text, qr/^\@\S+:$l{SITE} holds .*\n\t\d+ bytes in 2000 blocks from \@\S+:$l{SITE} <- \@\S+:$l{KEEP} <- \@\S+:$l{CALLK} <- pmain$/m,
       "jit $jit: the leak summary shows the keeping stack under the site") or diag $text;

  next unless $jit eq 'on';
  my $go = `sh -c 'command -v go' 2>/dev/null`;
  SKIP: {
    skip 'go is not installed (Debian golang-go)', 2 unless $go;
    my $gohome = tempdir(CLEANUP => 1);
    local $ENV{HOME} = "$gohome";
    local $ENV{GOCACHE} = "$gohome/cache";
    local $ENV{GOPATH} = "$gohome/gopath";
    local $ENV{PPROF_TMPDIR} = $gohome;
    local $ENV{GOTOOLCHAIN} = 'local';
    local $ENV{GOPROXY} = 'off';
    my $pb = scratch() . '/two.pb.gz';
    system('ljprof', 'report', '--format=pprof', '-o', $pb, $bin) == 0 or die;
    my $out = `go tool pprof -sample_index=inuse_space -top -cum -lines $pb 2>&1`;
    my @rows = grep { /:($l{KEEP}|$l{CHURN})$/ } split /\n/, $out;
    like($rows[0] // '', qr/:$l{KEEP}$/, 'go tool pprof -sample_index=inuse_space -top -cum: the keeping caller first')
      or diag $out;
    $out = `go tool pprof -sample_index=alloc_space -top -cum -lines $pb 2>&1`;
    @rows = grep { /:($l{KEEP}|$l{CHURN})$/ } split /\n/, $out;
    like($rows[0] // '', qr/:$l{CHURN}$/, 'go tool pprof -sample_index=alloc_space: the churning caller first')
      or diag $out;
  }
}

# Deeper than the cap: 64 frames, then the marker; counted. A vararg
# function's frames count once, as any others. A thousand allocations at
# the bottom of a deep stack: each cut the same way, each counted.
{
  my $bin = scratch() . '/deep.bin';
  my $run = run_lua(<<"LUA");
jit.off()
local function down(n)
  if n == 0 then return { 1, 2, 3 } end  -- BOTTOM
  local t = down(n - 1)
  return t
end
local function vdown(n, ...)
  if n == 0 then return { ... } end  -- VBOTTOM
  local t = vdown(n - 1, n, ...)  -- VCALL
  return t
end
local function make(i) return { i, i } end  -- MAKE
local function loop(n, k)
  if n == 0 then for i = 1, k do make(i) end return end  -- LOOP
  loop(n - 1, k)  -- LCALL
end
assert(misc.memprof.start({ path = "$bin", stacks = true }))
local t = down(200)
local v = vdown(100)
loop(100, 1000)
assert(misc.memprof.stop())
LUA
  is($run->{rc}, 0, 'deep: ran') or diag $run->{err};
  my $st = memprof_stacks($bin, $run->{script});
  my ($deep) = grep { /:3$/ } keys %$st;
  my @frames = split /;/, $deep // '';
  is(scalar @frames, 65, 'deep: 64 frames and a marker');
  is($frames[0], '[more frames]', 'deep: the marker stands for the frames left out, outermost');
  is($frames[-1], '@F:3', 'deep: the innermost frame is the allocation');
  is(scalar(grep { $_ eq '@F:4' } @frames), 63, 'deep: then the recursive calls');
  my ($vdeep) = grep { /;\@F:8$/ } keys %$st;
  my @vframes = split /;/, $vdeep // '';
  is(scalar @vframes, 65, 'deep, vararg: 64 frames and a marker');
  is($vframes[0], '[more frames]', 'deep, vararg: the marker first');
  is(scalar(grep { $_ eq '@F:9' } @vframes), 63, 'deep, vararg: 63 recursive calls, a frame each');
  my @made = grep { /;\@F:14;\@F:12$/ } keys %$st;
  is(scalar @made, 1, 'deep, made in a loop: one stack') or diag explain $st;
  my @mframes = split /;/, $made[0] // '';
  is(scalar @mframes, 65, 'deep, made in a loop: 64 frames and a marker');
  is(scalar(grep { $_ eq '@F:15' } @mframes), 62, 'deep, made in a loop: 62 recursive calls below the loop');
  my $text = `ljprof report '$bin'`;
  my ($cut) = $text =~ /Call stacks: \d+ distinct; (\d+) events? with a stack cut at 64 frames; 0 events without one/;
  cmp_ok($cut // 0, '>=', 1002, 'deep: the report counts the cut stacks, each of the thousand') or diag $text;
}

# A coroutine's allocation: its own frames, not the resumer's.
{
  my $bin = scratch() . '/co.bin';
  my $run = run_lua(<<"LUA");
jit.off()
local function make() return { 1, 2, 3, 4 } end
local co = coroutine.wrap(function()
  local a = make()  -- COCALL
  coroutine.yield(a)
end)
assert(misc.memprof.start({ path = "$bin", stacks = true }))
local got = co()  -- RESUME
assert(misc.memprof.stop())
LUA
  is($run->{rc}, 0, 'coroutine: ran') or diag $run->{err};
  my $st = memprof_stacks($bin, $run->{script});
  ok($st->{'@F:4;@F:2'}, 'coroutine: its body, then the helper: nothing of the resumer')
    or diag explain $st;
  ok(!grep({ /\@F:8;.*\@F:2$/ } keys %$st), 'coroutine: the resuming line is not under the helper');
}

# Errors thrown while allocating, a message handler allocating while the
# stack unwinds, a call of nil (a frame the VM fakes for the message), and
# finalizers that allocate; stop() from a finalizer ends a complete stream.
{
  my $bin = scratch() . '/errors.bin';
  my $run = run_lua(<<"LUA");
jit.off()
local function boom(n) error(string.rep("x", n) .. "boom") end
local function handler(e) return { e, e, e } end  -- HANDLER
assert(misc.memprof.start({ path = "$bin", stacks = true }))
for i = 1, 50 do
  xpcall(boom, handler, 100 + i)
  pcall(function() local f; f() end)
end
local gc = newproxy(true)
getmetatable(gc).__gc = function()
  local t = { 1, 2, 3 }  -- FINALIZER
  assert(misc.memprof.stop())
end
gc = nil
collectgarbage()
collectgarbage()
assert(not misc.memprof.stop())
LUA
  is($run->{rc}, 0, 'errors and finalizers: ran') or diag $run->{err};
  my $r = memprof_report($bin);
  is($r->{rc}, 0, 'errors and finalizers: the stream is complete') or diag $r->{err};
  my $st = memprof_stacks($bin, $run->{script});
  ok((grep { /;\@F:3$/ } keys %$st), 'the message handler allocates with a stack, innermost its line')
    or diag explain $st;
  ok((grep { /\@F:11$/ } keys %$st), 'the finalizer allocates with a stack, innermost its line');
}

# More distinct stacks than the stack tables' budget keeps: each of 70000
# functions, compiled apart, allocates once, with stack_budget = 2^20 (half
# of it for nodes of 24 bytes: 21845 nodes, the root and the main chunk's
# frame among them). Past the budget, events name stack 0 and are counted;
# the stream stays whole and the program runs.
{
  my $bin = scratch() . '/full.bin';
  my $run = run_lua(<<"LUA", timeout => 120);
local fns = {}
for i = 1, 70000 do fns[i] = loadstring("return { " .. i .. " }") end
assert(misc.memprof.start({ path = "$bin", stacks = true, stack_budget = 2^20 }))
local keep = {}
for i = 1, 70000 do keep[i] = fns[i]() end
assert(misc.memprof.stop())
LUA
  is($run->{rc}, 0, 'a full stack table: ran') or diag $run->{err};
  my $r = memprof_report($bin);
  is($r->{rc}, 0, 'a full stack table: the stream is complete') or diag $r->{err};
  my $kept = $r->{json}{stacks}{distinct};
  ok($kept > 21000 && $kept < 21845, "a full stack table: as many stacks as the budget holds ($kept)");
  cmp_ok($r->{json}{stacks}{table_full_events}, '>=', 70000 - $kept,
         'a full stack table: the events past it counted') or diag explain $r->{json}{stacks};
  my $st = memprof_stacks($bin, $run->{script});
  ok((grep { /^\[stack table full\]/ } keys %$st), 'a full stack table: the reader names them');
  like(`ljprof report '$bin'`, qr/^Call stacks: $kept distinct; .* events without one \(the stack tables' budget reached: stack_budget\)$/m,
       'a full stack table: the text report says the budget was reached, and which option sets it');
}

# A full disk stops the profile, the program runs on; os.exit() completes
# the stream of a profile with stacks.
{
  my $run = run_lua(<<'LUA');
assert(misc.memprof.start({ path = "/dev/full", stacks = true }))
local t = {}
for i = 1, 200000 do t[i % 100] = { i } end
local ok, err = misc.memprof.stop()
print(ok, err)
LUA
  is($run->{rc}, 0, '/dev/full: the program runs on') or diag $run->{err};
  like($run->{out}, qr/^nil\tNo space left on device/, '/dev/full: stop() says why');
  my $bin = scratch() . '/exit.bin';
  $run = run_lua(<<"LUA");
assert(misc.memprof.start({ path = "$bin", stacks = true }))
local t = {}
for i = 1, 1000 do t[i] = { i } end
os.exit(0)
LUA
  is($run->{rc}, 0, 'os.exit: ran') or diag $run->{err};
  my $text = `ljprof report '$bin' 2>&1`;
  is($? >> 8, 0, 'os.exit: the stream is complete');
  like($text, qr/^Call stacks: \d+ distinct/m, 'os.exit: with its stats record');
}

done_testing;
