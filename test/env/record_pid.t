#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# ljprof record --pid on a process armed through LJPROF's signal=: it is
# commanded through its VM's control page, never signalled (the host may
# have taken the signal's handler since: here it sets it back to the
# default, which a signal would kill it by), is profiled for the duration
# asked with the recording's own settings, and goes on unharmed; LJPROF's
# armed profiles keep their paths and windows. A process that is unarmed,
# without a VM, gone, or not ours gets a clear error and is left alone.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep time);
use LJProf::Lua;
use LJProf::Pace qw(scaled wait_until);

my $dir = scratch();

my $server = <<'LUA';
local ffi = require("ffi")
ffi.cdef[[
typedef void (*sighandler_t)(int);
sighandler_t signal(int signum, sighandler_t handler);
]]
if arg[2] == "dfl" then  -- The host takes SIGUSR2 back: default, deadly.
  ffi.C.signal(12, ffi.cast("sighandler_t", 0))
end
local keep = {}
local function work(n)
  local x = 0
  for i = 1, 2000 do x = x + i % 3 end  -- WORK
  keep[n % 100 + 1] = { x }  -- ALLOC
end
local stop, n = arg[1], 0
local f = assert(io.open(stop .. ".ready", "w")) f:close()
repeat
  for _ = 1, 100 do n = n + 1 work(n) end
  f = io.open(stop)
until f
f:close()
print("served")
os.exit(7)
LUA
open my $fh, '>', "$dir/server.lua" or die $!;
print $fh $server;
close $fh;
my ($work, $alloc) = (line_of($server, 'WORK'), line_of($server, 'ALLOC'));

# Start the server with LJPROF (undef: none) and the server's arguments
# after its stop file, or another command; returns its pid once it runs.
sub start_server {
  my ($name, $ljprof, %how) = @_;
  my @cmd = @{ $how{cmd} || [] };
  my $stop = "$dir/$name.stop";
  unlink $stop, "$stop.ready";
  my $pid = fork // die "fork: $!";
  if ($pid == 0) {
    chdir $dir or die $!;
    if (defined $ljprof) { $ENV{LJPROF} = $ljprof } else { delete $ENV{LJPROF} }
    open STDOUT, '>', "$dir/$name.out" or die $!;
    open STDERR, '>', "$dir/$name.err" or die $!;
    exec(@cmd ? @cmd : ('luajit', "$dir/server.lua", $stop, @{ $how{args} || [] }))
      or die "exec: $!";
  }
  wait_until("$name to run", 30, sub { -e "$stop.ready" }) unless @cmd;
  return $pid;
}

# Tell the server to stop; its exit status and output.
sub stop_server {
  my ($name, $pid) = @_;
  open my $fh, '>', "$dir/$name.stop" or die $!;
  close $fh;
  local $SIG{ALRM} = sub { kill 'KILL', $pid };
  alarm scaled(30);
  waitpid $pid, 0;
  alarm 0;
  my $status = $? & 127 ? 'signal ' . ($? & 127) : 'exit ' . ($? >> 8);
  return ($status, LJProf::Lua::slurp("$dir/$name.out"));
}

sub record {
  my (@args) = @_;
  my $out = `ljprof record @args 2>$dir/record.err`;
  return { rc => $? >> 8, out => $out, err => LJProf::Lua::slurp("$dir/record.err") };
}

# -- An armed server --------------------------------------------------------------

{
  my $pid = start_server('armed', 'cpu:clock=wall,signal=SIGUSR2;mem:signal=SIGUSR2,path=mem-%p.bin',
                         args => ['dfl']);
  my $t0 = time;
  my $r = record("--pid=$pid --duration=1 --cpu --clock=wall --format=json -o $dir/rec1");
  my $took = time - $t0;
  is($r->{rc}, 0, 'armed, --cpu: recorded') or diag $r->{err};
  my $doc = eval { JSON::PP->new->decode($r->{out}) };
  my $secs = ($doc->{elapsed_ns} // 0) / 1e9;
  # The profile starts and stops at the server's next safe points after
  # the commands, a second apart, all while record ran.
  ok($secs > 0.8 && $secs <= $took,
     sprintf 'armed, --cpu: about the second asked, within the %.3f s record took (%.3f s)', $took, $secs);
  my $src = "\@$dir/server.lua";
  ok(grep({ $_->{name} eq "$src:$work" } @{ $doc->{lines} }), 'armed, --cpu: the busy line is there')
    or diag explain $doc->{lines};
  ok(-e "$dir/rec1/cpu-$pid-1.bin" && !glob("$dir/ljprof-cpu-$pid.bin*"),
     'armed, --cpu: the stream is the recording\'s; LJPROF\'s armed one never started');

  $r = record("--pid=$pid --duration=0.5 --mem --format=json --report-out=$dir/mem.json -o $dir/rec2");
  is($r->{rc}, 0, 'armed, --mem: recorded again') or diag $r->{err};
  my $mem = eval { JSON::PP->new->decode(LJProf::Lua::slurp("$dir/mem.json")) };
  my ($site) = grep { $_->{location} eq "$src:$alloc" } @{ $mem->{locations} || [] };
  ok($site && $site->{alloc_events} > 100, 'armed, --mem: the allocating line is there');

  my ($status, $out) = stop_server('armed', $pid);
  is($status, 'exit 7', 'armed, its signal the host\'s since: never sent, the server went on to its own end');
  is($out, "served\n", 'armed: with its own output');
  is(LJProf::Lua::slurp("$dir/armed.err"), '', 'armed: nothing on its stderr');
}

# The signal still toggles LJPROF's armed profile after a recording, into
# LJPROF's path, window 1; while it runs, a recording of that kind is
# refused and one of another kind goes on.
{
  my $pid = start_server('toggled', 'cpu:clock=wall,interval=1,signal=SIGUSR2,path=cpu-%p.bin');
  my $r = record("--pid=$pid --duration=0.3 --cpu -o $dir/rec3");
  is($r->{rc}, 0, 'toggled: a recording first') or diag $r->{err};
  kill 'USR2', $pid;
  wait_until('LJPROF\'s window 1', 30, sub { -e "$dir/cpu-$pid.bin.1" });
  $r = record("--pid=$pid --duration=0.3 --cpu -o $dir/rec4");
  is($r->{rc}, 1, 'toggled, LJPROF\'s running: --cpu fails');
  like($r->{err}, qr/^ljprof record: pid $pid \([^)]*\): the cpu profile here is LJPROF's \(it runs\)$/m,
       'toggled: saying why');
  $r = record("--pid=$pid --duration=0.3 --mem -o $dir/rec5");
  is($r->{rc}, 0, 'toggled, LJPROF\'s cpu running: --mem recorded') or diag $r->{err};
  kill 'USR2', $pid;
  wait_until('LJPROF\'s window 1 closed', 30, sub {
    !grep { (readlink($_) // '') eq "$dir/cpu-$pid.bin.1" } glob "/proc/$pid/fd/*" });
  my ($stacks, $rc) = collapsed("$dir/cpu-$pid.bin.1");
  my $n = 0;
  $n += $stacks->{$_} for grep { /server\.lua:$work\b/ } keys %$stacks;
  ok($rc == 0 && $n > 0, "toggled: LJPROF's window 1 is complete, with the busy line ($n samples)");
  my ($status) = stop_server('toggled', $pid);
  is($status, 'exit 7', 'toggled: the server went on to its own end');
}

# -- Processes that cannot be profiled -------------------------------------------

my $unarmed = qr/^ljprof record: process (\d+): no VM armed for ljprof record there: start it with LJPROF=ondemand \(or a profile's signal=\)$/;
{
  my $pid = start_server('unarmed', 'cpu');
  my $r = record("--pid=$pid --duration=0.2");
  is($r->{rc}, 1, 'unarmed: fails');
  like($r->{err}, $unarmed, 'unarmed: says why');
  my ($status) = stop_server('unarmed', $pid);
  is($status, 'exit 7', 'unarmed: the server was left alone');

  $pid = start_server('nolj', undef);
  $r = record("--pid=$pid");
  is($r->{rc}, 1, 'no LJPROF: fails');
  like($r->{err}, $unarmed, 'no LJPROF: says so');
  stop_server('nolj', $pid);

  # A process with the setting and no VM.
  $pid = start_server('novm', 'cpu:signal=SIGUSR2', cmd => ['sleep', '600']);
  wait_until('sleep to run', 30, sub { (readlink("/proc/$pid/exe") // '') =~ m{/sleep$} });
  $r = record("--pid=$pid");
  like($r->{err}, $unarmed, 'no VM: not armed');
  ok(kill(0, $pid), 'no VM: the process lives');
  kill 'KILL', $pid;
  waitpid $pid, 0;

  $r = record("--pid=$pid");
  is_deeply([ $r->{rc}, $r->{err} ], [ 1, "ljprof record: no process $pid\n" ], 'gone: no process');

  SKIP: {
    skip 'root may signal any process', 1 if $> == 0;
    $r = record('--pid=1');
    like($r->{err}, qr/^ljprof record: process 1 is not ours/, 'not ours: says so');
  }
}

# -- Command line -----------------------------------------------------------------

for my $bad ('--pid=abc', '--pid=0', '--pid=1 --duration=0', '--pid=1 -- x.lua',
             '--pid=1 --stacks', '--pid=1 --mem --interval=1', '--pid=1 --heap-every=5',
             '--pid=1 --luajit=x', '--duration=1 --mem -- x.lua') {
  is(record($bad)->{rc}, 2, "'$bad': a usage error");
}

done_testing;
