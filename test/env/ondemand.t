#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# LJPROF=ondemand and ljprof record --pid: a master that forks workers, as
# a server does, is recorded through its VMs' control pages, no signal
# sent: every worker's profile of the kind asked, each with its own hot
# line; the master, which runs no Lua meanwhile, and a child running
# another program are named; a second recording at once is refused;
# Ctrl-C ends a recording with complete streams; a page nobody maps is
# never taken for a process's.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use POSIX ();
use Time::HiRes qw(sleep);
use LJProf::Lua;
use LJProf::Pace qw(scaled wait_until);

plan skip_all => 'no writable /dev/shm: LJPROF=ondemand keeps its control files there'
  unless -d '/dev/shm' && -w _;

my $dir = scratch();

my $server = <<'LUA';
local ffi = require("ffi")
ffi.cdef[[int fork(void); int waitpid(int, int *, int);
          int execlp(const char *, const char *, ...);]]
local dir = arg[1]
local function work_a(n) local x = 0 for i = 1, n do x = x + i % 3 end return x end  -- WORK_A
local function work_b(n) local x = 0 for i = 1, n do x = x + i % 5 end return x end  -- WORK_B
local keep = {}
local function worker(id)
  local f = assert(io.open(dir .. "/worker" .. id .. ".ready", "w")) f:close()
  local n = 0
  repeat
    for _ = 1, 20 do
      n = n + 1
      if id == 1 then work_a(3000) else work_b(3000) end
      keep[n % 100 + 1] = { n }  -- ALLOC
    end
    f = io.open(dir .. "/stop")
  until f
  f:close()
  os.exit(0)
end
for id = 1, 2 do
  if ffi.C.fork() == 0 then worker(id) end
end
if ffi.C.fork() == 0 then  -- a helper that runs no Lua
  ffi.C.execlp("sleep", "sleep", "600", nil)
  os.exit(1)
end
for _ = 1, 2 do ffi.C.waitpid(-1, nil, 0) end  -- the master runs no Lua
print("master done")
LUA
open my $fh, '>', "$dir/server.lua" or die $!;
print $fh $server;
close $fh;
my ($work_a, $work_b, $alloc) = map { line_of($server, $_) } qw(WORK_A WORK_B ALLOC);
my $src = "\@$dir/server.lua";

my @kids;  # the processes under the master, for the cleanup

# The master and its two workers, running; returns the master's pid.
sub start_server {
  my ($ljprof) = @_;
  unlink "$dir/stop", "$dir/worker1.ready", "$dir/worker2.ready";
  my $pid = fork // die "fork: $!";
  if ($pid == 0) {
    POSIX::setpgid(0, 0);
    if (defined $ljprof) { $ENV{LJPROF} = $ljprof } else { delete $ENV{LJPROF} }
    open STDOUT, '>', "$dir/server.out" or die $!;
    open STDERR, '>', "$dir/server.err" or die $!;
    exec('luajit', "$dir/server.lua", $dir) or die "exec: $!";
  }
  wait_until('the workers to run', 30, sub { -e "$dir/worker1.ready" && -e "$dir/worker2.ready" });
  return $pid;
}

sub stop_server {
  my ($pid) = @_;
  open my $fh, '>', "$dir/stop" or die $!;
  close $fh;
  local $SIG{ALRM} = sub { kill 'KILL', -$pid };
  alarm scaled(30);
  waitpid $pid, 0;
  alarm 0;
  my $status = $?;
  kill 'KILL', -$pid;  # the helper's sleep
  return $status;
}

# The control pages of these processes made since `since` (a time): a page
# an earlier process of the same pid left, killed before its exit, is its
# own (a long test run comes round to the same pids).
sub pages_since {
  my ($since, @pids) = @_;
  return grep { my @st = Time::HiRes::stat($_); @st && $st[9] >= $since - 1 }
         map { glob "/dev/shm/ljprof-$_-*" } @pids;
}

# The workers of the master (its children running luajit).
sub workers {
  my ($master) = @_;
  my @w;
  for my $stat (glob '/proc/[0-9]*/stat') {
    my $text = LJProf::Lua::slurp($stat) // next;
    my ($pid, $ppid) = $text =~ /^(\d+) \(luajit\) \S+ (\d+)/ or next;
    push @w, $pid if $ppid == $master;
  }
  return sort { $a <=> $b } @w;
}

# A recording in the background: its pid (ljprof's own, for Ctrl-C).
sub record_behind {
  my ($name, $args) = @_;
  my $pid = fork // die "fork: $!";
  if ($pid == 0) {
    open STDOUT, '>', "$dir/$name.out" or die $!;
    open STDERR, '>', "$dir/$name.err" or die $!;
    exec('ljprof', 'record', split ' ', $args) or die "exec: $!";
  }
  return $pid;
}

sub record {
  my ($args, %o) = @_;
  my $out = `ljprof record $args 2>$dir/record.err`;
  return { rc => $? >> 8, out => $out, err => LJProf::Lua::slurp("$dir/record.err") };
}

# Self samples by line of each SYSPROF REPORT in a text output, by stream.
sub lines_by_stream {
  my ($out) = @_;
  my %by;
  for my $report (split /^(?=SYSPROF REPORT: )/m, $out) {
    my ($stream) = $report =~ /^SYSPROF REPORT: (\S+)/ or next;
    my ($self) = $report =~ /^LINES BY SELF\n(.*?)\n\n/ms;
    $by{$stream} = { map { /^(\S+): (\d+) self/ ? ($1 => $2) : () } split /\n/, $self // '' };
  }
  return \%by;
}

# The pids of a merged report's table by process (its streams' names
# carry them: cpu-PID-N.bin).
sub pids_by_process {
  my ($out) = @_;
  my ($table) = $out =~ /^(?:SAMPLES )?BY PROCESS[^\n]*\n(.*?)\n\n/ms;
  return [ sort { $a <=> $b } ($table // '') =~ m{/(?:cpu|mem)-(\d+)-\d+\.bin}g ];
}

# The top line of one stream's own report.
sub top_of {
  my ($stream) = @_;
  my $by = lines_by_stream(scalar `ljprof report $stream 2>/dev/null`);
  return top_line($by->{$stream} // {});
}

# The line with most self samples.
sub top_line {
  my ($lines) = @_;
  my ($top) = sort { $lines->{$b} <=> $lines->{$a} || $a cmp $b } keys %$lines;
  return $top // '';
}

# -- One process ------------------------------------------------------------------

# single.lua under LJPROF, its stderr in NAME.err; its pid.
sub run_single {
  my ($ljprof, $name, $preload) = @_;
  unlink "$dir/single.stop", "$dir/single.ready";
  my $pid = fork // die "fork: $!";
  if ($pid == 0) {
    $ENV{LJPROF} = $ljprof;
    $ENV{LD_PRELOAD} = $preload if $preload;
    open STDERR, '>', "$dir/$name.err" or die $!;
    exec('luajit', "$dir/single.lua", $dir) or die "exec: $!";
  }
  return $pid;
}

# Tell it to end; its exit status.
sub stop_single {
  my ($pid) = @_;
  open my $fh, '>', "$dir/single.stop" or die $!;
  close $fh;
  waitpid $pid, 0;
  return $?;
}

{
  my $single = <<'LUA';
local dir = arg[1]
local function work(n) local x = 0 for i = 1, n do x = x + i % 3 end return x end  -- SINGLE
local keep, n = {}, 0
local f = assert(io.open(dir .. "/single.ready", "w")) f:close()
repeat
  for _ = 1, 20 do n = n + 1 work(3000) keep[n % 100 + 1] = { n } end
  f = io.open(dir .. "/single.stop")
until f
f:close()
LUA
  open my $fh, '>', "$dir/single.lua" or die $!;
  print $fh $single;
  close $fh;
  my $since = Time::HiRes::time();
  my $pid = run_single('ondemand', 'single');
  wait_until('the process to run', 30, sub { -e "$dir/single.ready" });
  my $r = record("--pid=$pid --duration=1 --interval=1 -o $dir/single");
  is($r->{rc}, 0, 'one process: recorded') or diag $r->{err};
  my $by = lines_by_stream($r->{out});
  is_deeply([ keys %$by ], [ "$dir/single/cpu-$pid-1.bin" ], 'one process: its stream, in -o\'s directory');
  is(top_line($by->{"$dir/single/cpu-$pid-1.bin"} // {}), "\@$dir/single.lua:" . line_of($single, 'SINGLE'),
     'one process: its hot line on top');
  is(stop_single($pid), 0, 'one process: it went on to its own end');
  is(LJProf::Lua::slurp("$dir/single.err"), '', 'one process: nothing on its stderr');
  is_deeply([ pages_since($since, $pid) ], [], 'one process: its control page is gone at exit');
}

# A recorder faster than the watcher: its command reaches the page before
# the VM's watcher thread has first looked at it (every thread of the
# process starts a second late here). The command is acted on all the same.
SKIP: {
  skip 'LD_PRELOAD would reach qemu, not the emulated process', 4 if $ENV{LJPROF_CROSS};
  my $pid = run_single('ondemand', 'late', "$ENV{LJPROF_BUILD_DIR}/test/latethreads.so");
  wait_until('the control page', 30, sub { -e "/dev/shm/ljprof-$pid-1" });
  my $r = record("--pid=$pid --duration=0.5 --clock=wall -o $dir/late");
  is($r->{rc}, 0, 'a late watcher: recorded') or diag $r->{err};
  ok(-s "$dir/late/cpu-$pid-1.bin", 'a late watcher: the command was acted on');
  like(`ljprof report $dir/late/cpu-$pid-1.bin`, qr/clock: monotonic\b/, 'record --pid --clock=wall: a wall-clock stream');
  is(stop_single($pid), 0, 'a late watcher: it went on to its own end');
}

# -- Beside LJPROF's own profile ----------------------------------------------------

# A recording takes the kinds LJPROF does not run: here LJPROF's CPU
# profile rotates, a recording asks for memory, and LJPROF's profile goes
# on as it was set (its interval too); asked for CPU, the VM refuses.
{
  my $pid = run_single("ondemand;cpu:interval=2,rotate=1,path=$dir/rot.bin", 'rot');
  wait_until('the process to run', 30, sub { -e "$dir/rot.bin.1" });
  my $r = record("--pid=$pid --duration=0.5 --mem -o $dir/rot");
  is($r->{rc}, 0, 'beside LJPROF\'s cpu: --mem recorded') or diag $r->{err};
  my $after = max_window("$dir/rot.bin") + 2;
  wait_until("window $after", 30, sub { -e "$dir/rot.bin.$after" });
  my $rep = `ljprof report $dir/rot.bin.@{[ $after - 1 ]} 2>&1`;
  like($rep, qr/interval 2 ms asked/, 'beside LJPROF\'s cpu: its windows after the recording keep its interval');
  $r = record("--pid=$pid --duration=0.2 --cpu -o $dir/rot2");
  # (Its name is what ps shows: qemu-aarch64 under emulation.)
  like($r->{err}, qr/^ljprof record: pid $pid \([^)]*\): the cpu profile here is LJPROF's \(it runs\)$/m,
       'beside LJPROF\'s cpu: --cpu refused, saying why');
  is($r->{rc}, 1, 'beside LJPROF\'s cpu: --cpu, exit status 1');
  is(stop_single($pid), 0, 'beside LJPROF\'s cpu: it went on to its own end');
}

# The highest window N of PATH.N there is.
sub max_window {
  my ($path) = @_;
  my ($max) = sort { $b <=> $a } map { /\.(\d+)$/ ? $1 : () } glob "$path.*";
  return $max // 0;
}

# -- A master and its workers, recorded ------------------------------------------

SKIP: {
  # qemu-user aborts a forked child of a threaded process that starts a
  # thread (Makefile: VM_TESTS): here every worker is one.
  skip 'cross-built: qemu-user aborts a forked child that starts a thread', 29
    if $ENV{LJPROF_CROSS};
  my $since = Time::HiRes::time();
  my $master = start_server('ondemand');
  # The helper is a luajit too until it has run sleep.
  my ($w) = wait_until('two workers', 30, sub { my @w = workers($master); @w == 2 ? \@w : undef });
  my @workers = @{ $w // [] };
  is(scalar @workers, 2, 'two workers run');
  my $streams = "$dir/cpu";
  my $r = record("--pid=$master --duration=1 --interval=1 -o $streams");
  is($r->{rc}, 0, 'record --pid=MASTER: recorded') or diag $r->{err};
  is_deeply(pids_by_process($r->{out}), \@workers, 'one report, by process: the two workers')
    or diag $r->{out};
  my ($top) = $r->{out} =~ /^LINES BY SELF\n(\S+):/m;
  like($top // '', qr/^\Q$src\E:($work_a|$work_b)$/, 'one report: a worker\'s hot line on top');
  for my $i (0, 1) {
    my $stream = "$streams/cpu-$workers[$i]-1.bin";
    my $hot = $i == 0 ? $work_a : $work_b;
    is(top_of($stream), "$src:$hot", "worker $i: its own stream, its own hot line on top");
    ok(-f $stream && (stat $stream)[2] % 01000 == 0600, "worker $i: its stream is 0600");
  }
  like($r->{err}, qr/^ljprof record: pid $master \([^)]*luajit\): reached no safe point during the recording \(it ran no Lua that allocates\): nothing profiled there$/m,
       'the master, blocked in C: named, nothing profiled');
  like($r->{err}, qr/^ljprof record: pid \d+ \(sleep\): nothing to profile there: no VM armed/m,
       'a child running another program: nothing to profile there');
  like($r->{err}, qr/^ljprof record: streams in \Q$streams\E$/m, 'says where the streams are');

  # Memory, and a heap snapshot at the end of the window.
  $r = record("--pid=$master --duration=0.5 --mem --heap -o $dir/mem --top=3");
  is($r->{rc}, 0, '--mem --heap: recorded') or diag $r->{err};
  is_deeply(pids_by_process($r->{out}), \@workers, '--mem: one report, by process: the two workers');
  my ($top_alloc) = $r->{out} =~ /^ALLOCATIONS\n(\S+): \d+ events/m;
  is($top_alloc, "$src:$alloc", '--mem: the allocating line first');
  my @pauses = $r->{err} =~ /^ljprof record: pid (\d+) \([^)]*luajit\): heap snapshot (\S+), a pause of ([\d.]+) ms$/mg;
  is(scalar @pauses, 6, '--heap: a snapshot a worker, with its pause');
  is_deeply([ sort map { $pauses[3 * $_] } 0, 1 ], \@workers, '--heap: the workers\'');
  my $heap = `ljprof heap --memprof=$dir/mem/mem-$workers[0]-1.bin $pauses[1] 2>&1`;
  like($heap, qr/\Q$src:$alloc\E/, '--heap: joined with the worker\'s memory profile, it names the line');

  # Two recordings at once: the second is refused, the first completes.
  my $first = record_behind('first', "--pid=$master --duration=" . scaled(4) . " -o $dir/first");
  wait_until('the first recording to start', 30, sub { my @s = glob "$dir/first/cpu-*.bin"; @s == 2 });
  $r = record("--pid=$master --duration=0.2 -o $dir/second");
  is($r->{rc}, 1, 'a second recording at once: fails');
  like($r->{err}, qr/^ljprof record: pid $workers[0] \([^)]*luajit\): not recorded: being recorded by ljprof \(pid $first\) already$/m,
       'a second recording at once: says by whom');
  waitpid $first, 0;
  is($? >> 8, 0, 'the first recording completes');
  is_deeply(pids_by_process(LJProf::Lua::slurp("$dir/first.out")), \@workers, 'the first: both workers reported');

  # Ctrl-C: the profiles stop, the streams are complete, the report is written.
  my $rec = record_behind('int', "--pid=$master --duration=600 -o $dir/int");
  wait_until('the recording to start', 30, sub { my @s = glob "$dir/int/cpu-*.bin"; @s == 2 });
  sleep 0.3;
  kill 'INT', $rec;
  local $SIG{ALRM} = sub { kill 'KILL', $rec };
  alarm scaled(30);
  waitpid $rec, 0;
  alarm 0;
  is($? >> 8, 0, 'Ctrl-C: record ends, status 0');
  like(LJProf::Lua::slurp("$dir/int.err"), qr/interrupted: stopping the profiles/, 'Ctrl-C: says so');
  is_deeply(pids_by_process(LJProf::Lua::slurp("$dir/int.out")), \@workers, 'Ctrl-C: both workers reported');
  for my $s (glob "$dir/int/cpu-*.bin") {
    system("ljprof report $s >/dev/null 2>&1");
    is($? >> 8, 0, "Ctrl-C: $s is complete");
  }

  # The server went on, and its pages go with it.
  is(stop_server($master), 0, 'the server went on to its own end');
  is(LJProf::Lua::slurp("$dir/server.err"), '', 'nothing on the server\'s stderr');
  is_deeply([ pages_since($since, $master, @workers) ], [],
            'every control page is gone at exit');
}

# -- Not armed --------------------------------------------------------------------

{
  my $master = start_server(undef);
  my $r = record("--pid=$master --duration=0.2");
  is($r->{rc}, 1, 'no LJPROF: fails');
  like($r->{err}, qr/^ljprof record: process $master: no VM armed for ljprof record there: start it with LJPROF=ondemand \(or a profile's signal=\)$/m,
       'no LJPROF: says why');
  $r = record("--pid=$master --duration=0.2 --interval=1");
  like($r->{err}, qr/^ljprof record: process $master: no VM armed for ljprof record there/m,
       'no LJPROF, profile options: the same');
  is(stop_server($master), 0, 'no LJPROF: left alone');

  # A page in the process's name that it does not map (left by a killed
  # process, or planted): never taken for its.
  my $sleep = fork // die;
  exec('sleep', '600') if $sleep == 0;
  open my $fake, '>', "/dev/shm/ljprof-$sleep-1" or die $!;
  print $fake "\0" x 8192;
  close $fake;
  chmod 0600, "/dev/shm/ljprof-$sleep-1";
  $r = record("--pid=$sleep --duration=0.2 --interval=1");
  is($r->{rc}, 1, 'a page the process does not map: not armed');
  unlink "/dev/shm/ljprof-$sleep-1";
  kill 'KILL', $sleep;
  waitpid $sleep, 0;
}

done_testing;
