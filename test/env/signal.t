#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# LJPROF with signal=: armed, not started; each delivery toggles. A window
# between two signals holds that window's samples and allocations only,
# and lasted as long as the program saw it last; a storm of 1000 signals
# breaks nothing and every stream it leaves reads; rotate=1 writes a
# complete stream a second; fork() while running or armed leaves the
# parent's streams complete, and the child's profiles follow into streams
# of its own. Nothing runs for a set time: each part waits for the
# samples, streams or windows it needs, and compares what a profile says
# with the time the program had (its CPU time, or the wall time it saw).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep time);
use LJProf::Lua;
use LJProf::Pace qw(wait_until);

my $dir = scratch();

# Samples with a frame on each line of @lines, by line.
sub samples_on {
  my ($doc, $src, @lines) = @_;
  my %n = map { $_ => 0 } @lines;
  for my $s (@{ $doc->{stacks} }) {
    for my $l (@lines) {
      $n{$l} += $s->{count} if grep { $_ eq "$src:$l" } @{ $s->{frames} };
    }
  }
  return \%n;
}

my $prelude = <<'LUA';
local ffi = require("ffi")
ffi.cdef[[
int kill(int pid, int sig);
int getpid(void);
int fork(void);
int waitpid(int pid, int *status, int options);
unsigned alarm(unsigned seconds);
struct timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct timespec *ts);
]]
local SIGUSR2 = 12
local scale = tonumber(os.getenv("LJPROF_TIME_SCALE")) or 1  -- LJProf::Pace
local function toggle() ffi.C.kill(ffi.C.getpid(), SIGUSR2) end
local function phase(f, secs)
  local t0 = os.clock()
  repeat f() until os.clock() - t0 > secs
end
local function exists(path)
  local f = io.open(path) if f then f:close() end
  return f ~= nil
end
-- Seconds on a clock: 1 the monotonic wall clock, 3 the thread's CPU time.
local function clock(clk)
  local ts = ffi.new("struct timespec")
  ffi.C.clock_gettime(clk, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) / 1e9
end
LUA

# -- A window between two signals ---------------------------------------------

my $window = $prelude . <<'LUA';
local function one()
  local t = {} for i = 1, 1000 do t[i] = { i } end  -- PHASE1
end
local function two()
  local t = {} for i = 1, 1000 do t[i] = { i } end  -- PHASE2
end
local function three()
  local t = {} for i = 1, 1000 do t[i] = { i } end  -- PHASE3
end
-- The signal may be taken by another of the process's threads, late on a
-- loaded machine; the toggle follows at the next safe point: a gap of
-- 50 ms, counted in no phase, lets both happen.
local function gap()
  local t = {} for i = 1, 100 do t[i] = { i } end
end
phase(one, 0.5)
local cpu0 = clock(3)
toggle()
phase(gap, 0.05)
local cpu1, before = clock(3), misc.sysprof.report().samples
repeat two() until misc.sysprof.report().samples >= before + 300
local cpu2 = clock(3)
toggle()
phase(gap, 0.05)
local cpu3 = clock(3)
phase(three, 0.5)
-- The thread's CPU time in the window's phase, and from toggle to toggle.
print("done", cpu2 - cpu1, cpu3 - cpu0)
LUA
my @phase = map { line_of($window, "PHASE$_") } 1 .. 3;

{
  my $r = run_lua($window, timeout => 60, env => {
    LJPROF => "cpu:interval=1,signal=SIGUSR2,path=$dir/w-cpu.bin;mem:signal=SIGUSR2,path=$dir/w-mem.bin" });
  my (undef, $inside, $around) = split /\s+/, $r->{out};
  like($r->{out}, qr/^done\s/, 'window: the program ran') or diag $r->{err};
  is($r->{err}, '', 'window: nothing on stderr');
  ok(!-e "$dir/w-cpu.bin" && !-e "$dir/w-cpu.bin.2", 'window: one stream, named PATH.1');
  my ($doc, $rc) = sysprof_json("$dir/w-cpu.bin.1");
  is($rc, 0, 'window: the CPU stream is complete');
  my $src = '@' . $r->{script};
  my $n = samples_on($doc, $src, @phase);
  cmp_ok($n->{$phase[1]}, '>=', 270, "window: samples in the window's phase, 300 taken ($n->{$phase[1]})");
  is($n->{$phase[0]} + $n->{$phase[2]}, 0, 'window: none before it or after it');
  # The profile's clock is the thread's CPU time: it ran through the
  # window's phase, and no longer than from one toggle to the other.
  my $secs = ($doc->{elapsed_ns} // 0) / 1e9;
  ok($secs >= 0.95 * $inside - 0.005 && $secs <= 1.05 * $around + 0.005,
     "window: a profile as long as the window, $inside to $around s of CPU time ($secs s)");
  my $mem = memprof_report("$dir/w-mem.bin.1");
  is($mem->{rc}, 0, 'window: the memory stream is complete') or diag $mem->{err};
  cmp_ok(location($mem, "$src:$phase[1]")->{alloc_events}, '>', 10000, 'window: allocations in the window');
  is(location($mem, "$src:$phase[0]")->{alloc_events} + location($mem, "$src:$phase[2]")->{alloc_events}, 0,
     'window: none before it or after it');
}

# -- Signals from outside, about a second apart ---------------------------------

my $loop = $prelude . <<'LUA';
local ready, stop = arg[1], arg[2]
local function work() local t = {} for i = 1, 1000 do t[i] = { i } end end  -- WORK
local f = assert(io.open(ready .. ".tmp", "w"))
f:write(ffi.C.getpid(), "\n")
f:close()
assert(os.rename(ready .. ".tmp", ready))
ffi.C.alarm(math.ceil(60 * scale))
repeat phase(work, 0.01) until exists(stop)
print("done")
LUA

sub run_signalled {
  my ($name, $ljprof, $send, $luajit) = @_;
  my ($ready, $stop) = ("$dir/$name.ready", "$dir/$name.stop");
  unlink $ready, $stop;
  my $pid = fork // die "fork: $!";
  if ($pid == 0) {
    my $r = run_lua($loop, args => [$ready, $stop], env => { LJPROF => $ljprof },
                    timeout => 90, luajit => $luajit);
    open my $fh, '>', "$dir/$name.result" or die $!;
    print $fh JSON::PP->new->encode($r);
    close $fh;
    exit 0;
  }
  my $t0 = time;
  sleep 0.01 until -e $ready || time - $t0 > 30;
  my ($lj) = LJProf::Lua::slurp($ready) =~ /(\d+)/;
  $send->($lj) if $lj;
  open my $fh, '>', $stop or die $!;
  close $fh;
  waitpid $pid, 0;
  return JSON::PP->new->decode(LJProf::Lua::slurp("$dir/$name.result"));
}

# Whether a stream has its end (0x80 last: a stream still written may
# end so for a moment, which errs by a write at most).
sub ended {
  my ($path) = @_;
  open my $fh, '<:raw', $path or return 0;
  seek $fh, -1, 2 or return 0;
  my $last = '';
  read $fh, $last, 1;
  return $last eq "\x80";
}

# The window seen from outside: from its stream's start to its end, by
# the wall clock.
{
  my ($began, $ended) = (0, 0);
  my $r = run_signalled('ext', "cpu:clock=wall,signal=USR2,path=$dir/ext.bin", sub {
    kill 'USR2', $_[0];
    wait_until('the window to open', 30, sub { -e "$dir/ext.bin.1" }) and $began = time;
    sleep 1.0;
    kill 'USR2', $_[0];
    wait_until('the window to close', 30, sub { ended("$dir/ext.bin.1") }) and $ended = time;
  });
  is($r->{out}, "done\n", 'outside signals: the program ran on') or diag $r->{err};
  my ($doc, $rc) = sysprof_json("$dir/ext.bin.1");
  is($rc, 0, 'outside signals: the stream is complete');
  my $window = $ended - $began;
  my $secs = ($doc->{elapsed_ns} // 0) / 1e9;
  ok(abs($secs - $window) <= 0.1 * $window + 0.05,
     sprintf 'outside signals: the profile lasted the window seen (%.3f s of %.3f s)', $secs, $window);
  # A timer that fires while its signal is pending counts an overrun: the
  # ticks at 10 ms are the wall time's. Under qemu-user (ARM64), loaded,
  # ticks go missing that no overrun counts (the emulator takes the host's
  # signal and queues it for the guest itself, the likely place): there
  # only the upper bound and half hold.
  my $ticks = $doc->{samples} + $doc->{overruns};
  my $want = $window / 0.01;
  my $low = $ENV{LJPROF_CROSS} ? 0.5 * $want : 0.9 * $want - 5;
  ok($ticks >= $low && $ticks <= 1.1 * $want + 5,
     sprintf 'outside signals: a timer tick each 10 ms of the window (%d for %.3f s)', $ticks, $window);
  ok(!-e "$dir/ext.bin.2", 'outside signals: one window');
}

# -- A storm of signals ------------------------------------------------------------

# On the VM under AddressSanitizer too, when `make asan` has built it.
my $asan = ($ENV{LJPROF_BUILD_DIR} || '') . '/asan/bin/luajit';
$ENV{ASAN_OPTIONS} = 'detect_leaks=0:abort_on_error=1';
for my $vm (['luajit', 'storm'], -x $asan ? ([$asan, 'storm, ASan VM']) : ()) {
  my ($luajit, $name) = @$vm;
  my $sent = 0;
  my $sub = "$dir/" . ($name =~ /ASan/ ? 'storm-asan' : 'storm');
  mkdir $sub;
  # Signals between two of the VM's safe points add up: an even number
  # toggles nothing. The storm goes on until 10 windows have opened.
  my $windows = sub { my @f = glob "$sub/cpu.bin.*"; scalar @f };
  my $r = run_signalled('storm', "cpu:interval=1,signal=SIGUSR2,path=$sub/cpu.bin;"
                                 . "mem:signal=SIGUSR2,path=$sub/mem.bin",
                        sub { my $pid = shift;
                              for (1 .. 1000) { $sent += kill 'USR2', $pid; sleep 0.0005 }
                              wait_until('10 windows', 60, sub {
                                $sent += kill 'USR2', $pid; sleep 0.01; $windows->() > 10 });
                              sleep 0.2 },
                        $luajit);
  cmp_ok($sent, '>=', 1000, "$name: 1000 signals sent, and more until 10 windows");
  is($r->{rc}, 0, "$name: the program ran to its end") or diag $r->{err};
  is($r->{out}, "done\n", "$name: and wrote what it writes");
  my @files = glob "$sub/*";
  cmp_ok(scalar @files, '>', 10, "$name: windows were profiled (" . scalar(@files) . ' streams)');
  my @bad = grep { system("ljprof report '$_' >/dev/null 2>&1") != 0 } @files;
  is(scalar @bad, 0, "$name: every stream is complete") or diag "@bad[0 .. ($#bad < 4 ? $#bad : 4)]";
}

# -- rotate=: a new stream every second ------------------------------------------

# The program runs until the fourth stream has begun, and notes when it saw
# each begin, by the wall clock: from one to the next is what each of the
# middle streams had.
my $rotating = $prelude . <<'LUA';
local keep = {}
local function spin(n)
  local x = 0
  for i = 1, 20000 do x = x + i % 3 end  -- SPIN
  keep[n % 100 + 1] = { x }  -- One allocation a little while: a safe point.
end
local path, seen, n = arg[1], {}, 0
repeat
  n = n + 1 spin(n)
  for k = 2, 4 do
    if not seen[k] and exists(path .. "." .. k) then seen[k] = clock(1) end
  end
until seen[4]
print("done", seen[3] - seen[2], seen[4] - seen[3])
LUA

{
  mkdir "$dir/rot";
  my $r = run_lua($rotating, args => ["$dir/rot/cpu.bin"], timeout => 60, env => {
    LJPROF => "cpu:clock=wall,rotate=1,path=$dir/rot/cpu.bin;mem:rotate=1,path=$dir/rot/mem.bin" });
  my (undef, @span) = split /\s+/, $r->{out};
  like($r->{out}, qr/^done\s/, 'rotate: the program ran until its fourth stream') or diag $r->{err};
  my @cpu = sort { $a <=> $b } map { /\.(\d+)$/ } glob "$dir/rot/cpu.bin.*";
  my @mem = sort { $a <=> $b } map { /\.(\d+)$/ } glob "$dir/rot/mem.bin.*";
  cmp_ok(scalar @cpu, '>=', 4, 'rotate: four CPU streams or more (' . scalar(@cpu) . ')');
  is_deeply(\@cpu, [ 1 .. @cpu ], 'rotate: numbered 1, 2, ...');
  is_deeply(\@mem, \@cpu, 'rotate: the memory streams alike');
  my $src = '@' . $r->{script};
  my $spin = line_of($rotating, 'SPIN');
  for my $n (1 .. 3) {  # The last one ends with the program.
    my ($doc, $rc) = sysprof_json("$dir/rot/cpu.bin.$n");
    is($rc, 0, "rotate: CPU stream $n complete");
    # Each stream begins at a whole second of the first's clock (the VM's
    # next safe point after it): the program saw none begin early.
    my $secs = ($doc->{elapsed_ns} // 0) / 1e9;
    if ($n > 1) {
      my $had = $span[$n - 2] // 0;
      ok($had > 0.9 && abs($secs - $had) <= 0.1 * $had + 0.05,
         sprintf 'rotate: CPU stream %d a second or more, as long as the program saw it (%.3f s of %.3f s)',
         $n, $secs, $had);
    }
    ok(samples_on($doc, $src, $spin)->{$spin} > 0.5 * ($doc->{samples} // 0),
       "rotate: CPU stream $n has its samples, in the loop");
    my $mem = memprof_report("$dir/rot/mem.bin.$n");
    ok($mem->{rc} == 0 && location($mem, "$src:" . ($spin + 1))->{alloc_events} > 10,
       "rotate: memory stream $n complete, with its allocations");
  }
}

# -- fork() ------------------------------------------------------------------------------

my $forks = $prelude . <<'LUA';
local armed = arg[1] == "armed"
local keep = {}
local function parent_work()
  for i = 1, 20000 do keep[#keep + 1] = { i } end  -- PARENT
end
local function child_work()
  local t = {} for i = 1, 20000 do t[i] = { i } end  -- CHILD
end
if armed then toggle() end
phase(parent_work, 0.2)
io.stdout:flush()
local pid = ffi.C.fork()
assert(pid >= 0)
if pid == 0 then
  ffi.C.alarm(math.ceil(20 * scale))
  phase(child_work, 0.2)  -- Profiled: the parent's profiles ran at the fork.
  if armed then toggle() end  -- The end of the child's first window.
  print("child " .. ffi.C.getpid())
  os.exit(0)
end
local st = ffi.new("int[1]")
ffi.C.waitpid(pid, st, 0)
phase(parent_work, 0.2)
if armed then toggle() end
print("parent " .. ffi.C.getpid())
LUA
my ($parent_line, $child_line) = (line_of($forks, 'PARENT'), line_of($forks, 'CHILD'));

for my $how ('running', 'armed') {
  my $sig = $how eq 'armed' ? ',signal=SIGUSR2' : '';
  my $sfx = $how eq 'armed' ? '.1' : '';
  mkdir "$dir/$how";
  my $r = run_lua($forks, args => [$how], timeout => 60, env => {
    LJPROF => "cpu:interval=1$sig,path=$dir/$how/cpu-%p.bin;mem:path=$dir/$how/mem-%p.bin$sig" });
  my ($child) = $r->{out} =~ /^child (\d+)$/m;
  my ($parent) = $r->{out} =~ /^parent (\d+)$/m;
  # qemu-user (ARM64 under emulation) aborts a forked child of a process
  # with threads when it starts one: an armed child starts its profiles.
  if (!$child && $r->{err} =~ /qemu_plugin_vcpu_init_hook/) {
    SKIP: { skip "fork while $how: qemu-user aborts a forked child that starts a thread", 1 }
    next;
  }
  ok($child && $parent, "fork while $how: both ran to their end") or diag $r->{out}, $r->{err} or next;
  my $src = '@' . $r->{script};
  my ($doc, $rc) = sysprof_json("$dir/$how/cpu-$parent.bin$sfx");
  is($rc, 0, "fork while $how: the parent's CPU stream is complete");
  my $n = samples_on($doc, $src, $parent_line, $child_line);
  ok($n->{$parent_line} > 0 && $n->{$child_line} == 0,
     "fork while $how: it has the parent's samples, none of the child's");
  my $mem = memprof_report("$dir/$how/mem-$parent.bin$sfx");
  is($mem->{rc}, 0, "fork while $how: the parent's memory stream is complete");
  cmp_ok(location($mem, "$src:$parent_line")->{alloc_events}, '>=', 40000,
         "fork while $how: it has the parent's allocations before and after the fork");
  is(location($mem, "$src:$child_line")->{alloc_events}, 0, "fork while $how: none of the child's");
  # The profiles follow: the child starts its own at its first safe point.
  my ($cdoc, $crc) = sysprof_json("$dir/$how/cpu-$child.bin$sfx");
  my $cmem = memprof_report("$dir/$how/mem-$child.bin$sfx");
  is_deeply([ $crc, $cmem->{rc} ], [ 0, 0 ], "fork while $how: the child's own streams, complete");
  cmp_ok(location($cmem, "$src:$child_line")->{alloc_events}, '>=', 20000,
         "fork while $how: with the child's allocations");
  is(location($cmem, "$src:$parent_line")->{alloc_events}, 0, "fork while $how: and none of the parent's");
  $n = samples_on($cdoc, $src, $parent_line, $child_line);
  ok($n->{$child_line} > 0 && $n->{$parent_line} == 0,
     "fork while $how: the child's samples, none of the parent's");
}

# A path without %p: the child's gets its pid, never the parent's file.
{
  mkdir "$dir/nopid";
  my $r = run_lua($forks, args => ['running'], timeout => 60,
                  env => { LJPROF => "mem:path=$dir/nopid/mem.bin" });
  my ($child) = $r->{out} =~ /^child (\d+)$/m;
  if (!$child && $r->{err} =~ /qemu_plugin_vcpu_init_hook/) {
    SKIP: { skip 'a path without %p: qemu-user aborts a forked child that starts a thread', 2 }
    last;
  }
  my $src = '@' . $r->{script};
  my $mem = memprof_report("$dir/nopid/mem.bin");
  ok($mem->{rc} == 0 && location($mem, "$src:$parent_line")->{alloc_events} >= 40000 &&
     location($mem, "$src:$child_line")->{alloc_events} == 0,
     "a path without %p: the parent's stream is whole, and only the parent's");
  my $cmem = memprof_report("$dir/nopid/mem.bin." . ($child // 'none'));
  ok($cmem->{rc} == 0 && location($cmem, "$src:$child_line")->{alloc_events} >= 20000,
     "a path without %p: the child's is PATH.PID") or diag $r->{err};
}

# follow=0: the parent's profiles stay the parent's; a child writes nothing.
{
  mkdir "$dir/nofollow";
  my $r = run_lua($forks, args => ['running'], timeout => 60, env => {
    LJPROF => "cpu:interval=1,follow=0,path=$dir/nofollow/cpu-%p.bin;" .
              "mem:follow=0,path=$dir/nofollow/mem-%p.bin" });
  my ($child) = $r->{out} =~ /^child (\d+)$/m;
  my ($parent) = $r->{out} =~ /^parent (\d+)$/m;
  ok($child && $parent, 'follow=0: both ran to their end') or diag $r->{out}, $r->{err};
  my $src = '@' . $r->{script};
  my $mem = memprof_report("$dir/nofollow/mem-" . ($parent // 'none') . ".bin");
  ok($mem->{rc} == 0 && location($mem, "$src:$parent_line")->{alloc_events} >= 40000,
     "follow=0: the parent's stream is whole");
  opendir(my $dh, "$dir/nofollow") or die "$dir/nofollow: $!";
  my @files = sort grep { !/^\./ } readdir $dh;
  is_deeply(\@files, [ sort "cpu-$parent.bin", "mem-$parent.bin" ],
            'follow=0: the child wrote no stream') or diag $r->{err};
}

done_testing;
