#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Debian's nginx with its Lua module on our library (OpenResty's flavour),
# two workers, each profile in its environment: every start serves, a
# reload brings new workers that serve, a quit ends them all, and the
# streams written are complete. nginx forks to become a daemon and again
# for each worker; a fork must never hang (test/c/forksafe.c makes the
# race certain; here it is the real thing, many times).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use File::Temp qw(tempdir);
use LJProf::Nginx;
use LJProf::Pace qw(wait_until);
use LJProf::Lua qw(collapsed);

if (my $why = LJProf::Nginx::unavailable()) {
  plan skip_all => $why;
}

my $dir = tempdir(CLEANUP => 1);
chmod 01777, $dir;  # The workers run as nobody.

my @settings = (
  [ 'no profile' => undef ],
  [ 'cpu' => "cpu:interval=1,path=$dir/cpu-%p-%n.bin" ],
  [ 'mem' => "mem:path=$dir/mem-%p-%n.bin" ],
  [ 'cpu, mem and heap armed' =>
    "cpu:interval=1,path=$dir/all-%p-%n.bin;mem:path=$dir/all-mem-%p-%n.bin;" .
    "heap:signal=SIGURG,path=$dir/all-%p-%n.heap" ],
  [ 'cpu armed' => "cpu:signal=SIGURG,path=$dir/armed-%p-%n.bin" ],
);
my $STARTS = 20;

for my $s (@settings) {
  my ($name, $ljprof) = @$s;
  my ($served, @why) = (0);
  for my $i (1 .. $STARTS) {
    my $ngx = LJProf::Nginx->start(ljprof => $ljprof, workers => 2);
    if (!$ngx) {
      push @why, "start $i: $@";
      next;
    }
    my $body = $ngx->answer('/');
    if (defined $body && $body =~ /^pid \d+/) {
      $served++;
    } else {
      push @why, "start $i: no answer; workers " . join(' ', $ngx->workers) .
                 "\n" . $ngx->error_log;
    }
    if ($i == $STARTS) {
      ok($ngx->reload, "$name: nginx -s reload brings new workers that serve");
      ok($ngx->quit, "$name: nginx -s quit ends the master and its workers");
    } else {
      $ngx->quit;
    }
  }
  is($served, $STARTS, "$name: each of $STARTS starts serves a request")
    or diag(join "\n", @why);
}

# LJPROF=cpu profiles every worker, from its first request: each writes
# a stream of its own (its pid in the name), complete at its exit, whose
# hottest line is the handler's loop.
my $hot = 'local s = 0 for i = 1, 3e6 do s = s + i % 7 end';
my $handler = "$hot ngx.say('pid ', ngx.worker.pid(), ' ', s)";

# The hottest Lua frame of a CPU stream, its samples, the report's status.
sub hottest {
  my ($file) = @_;
  my ($stacks, $rc) = collapsed($file);
  my (%line, $total);
  while (my ($stack, $n) = each %$stacks) {
    my ($lua) = grep { /^[@=]/ } reverse split /;/, $stack;
    $line{$lua // 'none'} += $n;
    $total += $n;
  }
  my ($top) = sort { $line{$b} <=> $line{$a} } keys %line;
  return ($top // '', $total // 0, $rc);
}

sub worker_profiled {
  my ($file, $name) = @_;
  my ($top, $total, $rc) = hottest($file);
  ok($rc == 0 && $total >= 20 && $top =~ /content_by_lua.*:1$/,
     "$name: its stream is complete, the handler's line on top")
    or diag("report exit $rc, $total samples, top $top");
}

{
  my $ngx = LJProf::Nginx->start(
    ljprof => "cpu:interval=1,path=$dir/workers-%p.bin", workers => 2,
    lua => $handler);
  my @workers = $ngx ? $ngx->workers : ();
  is(scalar @workers, 2, 'cpu, per worker: two workers') or diag($@);
  my $by = @workers ? $ngx->each_worker('/', 40) : {};
  ok(!grep({ ($by->{$_} // 0) < 40 } @workers), 'cpu, per worker: each served 40 requests')
    or diag(explain $by);
  ok($ngx && $ngx->quit, 'cpu, per worker: quit');
  for my $w (@workers) {
    worker_profiled("$dir/workers-$w.bin", "cpu, per worker $w");
    my @st = stat "$dir/workers-$w.bin";
    ok(@st && ($st[2] & 07777) == 0600 && $st[4] == scalar getpwnam('nobody'),
       "cpu, per worker $w: its stream is the worker's user's only (0600)")
      or diag(sprintf 'mode %o, uid %s', $st[2] // 0, $st[4] // '?');
  }
}

# A worker killed mid-profile, respawned; a reload's new workers; a
# graceful quit: the killed worker's stream reads as far as it was
# written, every other worker's is complete and profiled.
{
  my $life = tempdir(CLEANUP => 1);
  chmod 01777, $life;
  my $ngx = LJProf::Nginx->start(
    ljprof => "cpu:interval=1,path=$life/cpu-%p.bin", workers => 2,
    lua => $handler);
  my @first = $ngx ? $ngx->workers : ();
  $ngx->each_worker('/', 20) if @first;
  kill 'KILL', $first[0] if @first;
  my @respawned = @first ? wait_until('a respawned worker', $LJProf::Nginx::WAIT, sub {
    my @w = $ngx->workers;
    @w == 2 && !grep({ $_ == $first[0] } @w) ? \@w : undef;
  }) : undef;
  my ($new) = grep { $_ != $first[1] } @{ $respawned[0] // [] };
  ok($new, 'lifecycle: a worker killed with SIGKILL is respawned');
  $ngx->each_worker('/', 20) if $new;
  my %before = map { $_ => 1 } $ngx ? $ngx->workers : ();
  ok($ngx && $ngx->reload, 'lifecycle: reload brings new workers');
  my @reloaded = grep { !$before{$_} } $ngx ? $ngx->workers : ();
  $ngx->each_worker('/', 20) if @reloaded;
  ok($ngx && $ngx->quit, 'lifecycle: a graceful quit');
  my $killed = @first ? "$life/cpu-$first[0].bin" : '';
  my $said = -e $killed ? `ljprof report '$killed' 2>&1 >/dev/null` : '';
  ok(-e $killed && ($? >> 8) <= 1 && !($? & 127) && ($? == 0 || $said =~ /\Q$killed\E: (truncated|empty)/),
     'lifecycle: the killed worker\'s stream reads as far as it was written')
    or diag("exit $?: $said");
  worker_profiled("$life/cpu-$_.bin", "lifecycle, worker $_") for grep { $_ } $first[1], $new, @reloaded;
}

# A memory profile and a heap snapshot at its exit, per worker: the
# handler's line makes most of the memory, and the snapshot names the
# table that holds the planted leak.
{
  my $mem = tempdir(CLEANUP => 1);
  chmod 01777, $mem;
  my $leak = 'local keep = package.loaded.planted or {} package.loaded.planted = keep ' .
             'for i = 1, 100 do keep[#keep + 1] = { i } end ngx.say("pid ", ngx.worker.pid())';
  my $ngx = LJProf::Nginx->start(
    ljprof => "mem:path=$mem/mem-%p.bin;heap:path=$mem/heap-%p.bin", workers => 2,
    lua => $leak);
  my @workers = $ngx ? $ngx->workers : ();
  my $by = @workers ? $ngx->each_worker('/', 10) : {};
  ok($ngx && $ngx->quit, 'mem and heap: served and quit');
  for my $w (@workers) {
    my $report = `ljprof report '$mem/mem-$w.bin' 2>&1`;
    my ($first) = $report =~ /^ALLOCATIONS\n(.*)$/m;
    my $tables = 100 * ($by->{$w} // 0);
    ok($? == 0 && ($first // '') =~ /^=content_by_lua\(nginx\.conf:\d+\):1: (\d+) events/ && $1 >= $tables,
       "mem, worker $w: the handler's line first, with its $tables tables at least")
      or diag($report);
    my $heap = `ljprof heap '$mem/heap-$w.bin' 2>&1`;
    ok($? == 0 && $heap =~ /^ +\S+ \S+ +\S+ \S+ +table 0x[0-9a-f]+ +package\.loaded\.planted$/m,
       "heap, worker $w: its snapshot names package.loaded.planted as a retainer")
      or diag($heap);
  }
}

# A directory the workers' user cannot write: each worker says so once in
# the error log, naming itself, and serves on unprofiled.
{
  my $locked = tempdir(CLEANUP => 1);
  chmod 0755, $locked;
  my $ngx = LJProf::Nginx->start(
    ljprof => "cpu:interval=1,path=$locked/cpu-%p.bin", workers => 2);
  my @workers = $ngx ? $ngx->workers : ();
  my $by = @workers ? $ngx->each_worker('/', 5) : {};
  ok(@workers == 2 && !grep({ ($by->{$_} // 0) < 5 } @workers),
     'unwritable: both workers serve') or diag(explain $by);
  my $log = $ngx ? $ngx->error_log : '';
  my @said = map { scalar(() = $log =~ /^LJPROF: pid $_: cannot write \Q$locked\E\/cpu-$_\.bin: Permission denied; not profiling$/mg) } @workers;
  is_deeply(\@said, [1, 1], 'unwritable: each worker says so once, with its pid')
    or diag($log);
  $ngx->quit if $ngx;
}

# LJPROF=ondemand: ljprof record --pid=MASTER profiles every worker, each
# as its own user in a directory of its user's, no signal sent; a worker
# killed meanwhile leaves a stream read up to the cut, the one respawned
# joins; Ctrl-C ends the recording with every stream complete.
{
  my $rec = tempdir(CLEANUP => 1);
  # A request that allocates (a table): the VM's safe point is its next
  # GC step, and $handler alone allocates nothing (its loop is compiled,
  # ngx.say writes numbers from C, the request's coroutine is reused).
  my $allocating = "$hot ngx.say('pid ', ngx.worker.pid(), ' ', #{ s })";
  my $ngx = LJProf::Nginx->start(ljprof => 'ondemand', workers => 2, lua => $allocating);
  my @workers = $ngx ? $ngx->workers : ();
  is(scalar @workers, 2, 'on demand: two workers') or diag($@);
  $ngx->each_worker('/', 2) if @workers;  # each has run Lua: armed
  my $master = $ngx ? $ngx->master : 0;
  my $nobody = getpwnam('nobody');
  SKIP: {
    skip 'the workers run as we do', 1 if $nobody == $>;
    my $said = `ljprof record --pid=$master --duration=0.2 -o $rec/closed 2>&1`;
    like($said, qr/^ljprof record: pid $workers[0] \(nginx: worker process\): not recorded: no directory for its user's streams: user $nobody may not enter \Q$rec\E$/m,
         'on demand: a directory the workers\' user cannot reach: said before anything starts');
  }
  chmod 0711, $rec;
  my $record = fork // die "fork: $!";
  if ($record == 0) {
    open STDOUT, '>', "$rec/report.txt" or die $!;
    open STDERR, '>', "$rec/record.err" or die $!;
    exec('ljprof', 'record', "--pid=$master", '--duration=600', '--interval=1',
         "-o", "$rec/streams") or die "exec: $!";
  }
  my $sub = $nobody == $> ? "$rec/streams" : "$rec/streams/uid-$nobody";
  # Each starts at its next safe point: its next request (that allocates).
  my $started = wait_until('the workers\' streams', $LJProf::Nginx::WAIT, sub {
    $ngx->each_worker('/', 1);
    my @s = grep { -e "$sub/cpu-$_-1.bin" } @workers;
    @s == 2;
  });
  ok($started, 'on demand: every worker starts its profile, no signal sent');
  $ngx->each_worker('/', 20) if $started;
  kill 'KILL', $workers[0];
  my ($respawned) = wait_until('a respawned worker', $LJProf::Nginx::WAIT, sub {
    my @w = grep { $_ != $workers[1] && $_ != $workers[0] } $ngx->workers;
    @w ? $w[0] : undef;
  });
  $ngx->each_worker('/', 20) if $respawned;
  ok($respawned && wait_until('the respawned worker\'s stream', $LJProf::Nginx::WAIT,
                              sub { $ngx->each_worker('/', 1); -e "$sub/cpu-$respawned-1.bin" }),
     'on demand: a worker respawned during the recording joins it');
  $ngx->each_worker('/', 20) if $respawned;
  # A reload: the old workers end (their streams complete), the new ones,
  # forked from the master's new VM (its number 2 in their names), join.
  my %old = map { $_ => 1 } $ngx ? $ngx->workers : ();
  ok($ngx && $ngx->reload, 'on demand: reload during the recording');
  my @reloaded = grep { !$old{$_} } $ngx ? $ngx->workers : ();
  my $joined = @reloaded && wait_until('the new workers\' streams', $LJProf::Nginx::WAIT, sub {
    $ngx->each_worker('/', 1);
    !grep { my @s = glob "$sub/cpu-$_-*.bin"; !@s } @reloaded;
  });
  ok($joined, 'on demand: the new workers join the recording')
    or diag('new workers: @reloaded; record said: ' . LJProf::Lua::slurp("$rec/record.err") .
            "\nerror log: " . $ngx->error_log . "\n" . join(' ', glob '/dev/shm/ljprof-*'));
  $ngx->each_worker('/', 20) if $joined;
  # And stops at its next one: the load goes on until record ends.
  kill 'INT', $record;
  my $ended = wait_until('record to end', $LJProf::Nginx::WAIT, sub {
    $ngx->each_worker('/', 1);
    waitpid($record, 1) == $record;
  });
  ok($ended && ($? >> 8) <= 1, 'on demand: Ctrl-C ends the recording (1: the killed worker\'s stream is cut)')
    or diag(LJProf::Lua::slurp("$rec/record.err"));
  my $err = LJProf::Lua::slurp("$rec/record.err");
  # The master that daemonized is a child of the process that made the
  # VM: it arms its own at its first safe point, which never comes. The
  # reload's VM is its own, armed: it runs Lua only while the new cycle is
  # made, and if the recording's command came then, it started a profile
  # it never reaches a safe point to stop.
  like($err, qr/^ljprof record: pid $master \(nginx: master process[^)]*\) VM 2: (reached no safe point during the recording|did not stop within 10 s)/m,
       'on demand: the master, which runs no Lua, is named');
  worker_profiled("$sub/cpu-$_-1.bin", "on demand, worker $_") for $workers[1], grep { $_ } $respawned;
  worker_profiled(glob("$sub/cpu-$_-*.bin"), "on demand, new worker $_") for @reloaded;
  my @st = stat "$sub/cpu-$workers[1]-1.bin";
  ok(@st && ($st[2] & 07777) == 0600 && $st[4] == $nobody,
     'on demand: a worker\'s stream is its user\'s only (0600)');
  my $report = LJProf::Lua::slurp("$rec/report.txt");
  my ($table) = $report =~ /^SAMPLES BY PROCESS\n(.*?)\n\n/ms;
  my @reported = grep { $_ != $master } ($table // '') =~ m{/cpu-(\d+)-\d\.bin \(pid \1 on }g;
  is_deeply([ sort @reported ], [ sort grep { $_ } @workers, $respawned, @reloaded ],
            'on demand: one report, by process: every worker, the killed one too')
    or diag($report);
  ok($ngx && $ngx->quit, 'on demand: the server quits');
}

# What was written is whole: each stream ends with its epilogue.
my @streams = glob "$dir/*.bin";
ok(@streams > 0, 'profiles were written') or diag('none in ' . $dir);
my @cut = grep {
  open my $fh, '<:raw', $_ or die "$_: $!";
  local $/;
  my $data = <$fh>;
  length $data < 8 || substr($data, -1) ne "\x80";
} @streams;
is(scalar @cut, 0, 'every stream is complete') or diag("cut: @cut");

done_testing();
