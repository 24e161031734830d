# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
package LJProf::Pace;
# Tests that pass at any machine speed: they wait for what they need
# (samples, streams, windows), never for a time, and the harness's own
# deadlines grow on a slow machine, so that a hang is still caught.
#
#   time_scale()    how much slower than a quick idle machine this one is
#                   (1 or more): LJPROF_TIME_SCALE when set, otherwise
#                   measured once, a fixed interpreted loop on the tests'
#                   luajit (under qemu for ARM64), and put in LJPROF_TIME_SCALE
#                   for what the test runs (tap.lua, test/c/tap.h read it).
#   scaled($secs)   a deadline of $secs on a quick machine, on this one.
#   wait_until($what, $secs, $cond)
#                   polls $cond->() until it is true: its value, or false
#                   with a diagnostic naming $what after scaled($secs).
#   load_machine($n)
#                   $n busy loops (processes) until the guard it returns is
#                   dropped, for tests of what a loaded machine does.
use strict;
use warnings;
use Exporter 'import';
use Time::HiRes qw(time sleep);

our @EXPORT = qw(time_scale scaled wait_until load_machine);

# The loop, and what it takes on a quick idle x86-64 machine.
my $PROBE = 'local x = 0 for i = 1, 2e7 do x = x + i % 3 end';
my $PROBE_SECS = 0.1;
my $MAX_SCALE = 50;

sub time_scale {
  return $ENV{LJPROF_TIME_SCALE} if $ENV{LJPROF_TIME_SCALE};
  my $luajit = ($ENV{LJPROF_BUILD_DIR} ? "$ENV{LJPROF_BUILD_DIR}/bin/" : '') . 'luajit';
  my $t0 = time;
  my $ran = system($luajit, '-joff', '-e', $PROBE) == 0;
  my $scale = $ran ? (time - $t0) / $PROBE_SECS : 1;
  $scale = $scale < 1 ? 1 : $scale > $MAX_SCALE ? $MAX_SCALE : $scale;
  $ENV{LJPROF_TIME_SCALE} = sprintf '%.1f', $scale;
  return $ENV{LJPROF_TIME_SCALE};
}

sub scaled { my ($secs) = @_; return int($secs * time_scale() + 0.5) }

sub wait_until {
  my ($what, $secs, $cond) = @_;
  my $end = time + scaled($secs);
  my $v;
  until ($v = $cond->()) {
    if (time > $end) {
      Test::More::diag("waited " . scaled($secs) . " s for $what");
      return 0;
    }
    sleep 0.01;
  }
  return $v;
}

# Each loop is a child process, ended with the guard (or at the end of the
# process that started it).
my %loops;    # pid => the pid of its parent

sub load_machine {
  my ($n) = @_;
  my @pids;
  for (1 .. $n) {
    my $pid = fork // die "fork: $!";
    if ($pid == 0) { 1 while 1 }
    push @pids, $pid;
    $loops{$pid} = $$;
  }
  return bless \@pids, 'LJProf::Pace::Load';
}

sub LJProf::Pace::Load::DESTROY {
  my ($pids) = @_;
  for my $pid (@$pids) {
    next unless delete $loops{$pid};
    kill 'KILL', $pid;
    waitpid $pid, 0;
  }
}

END { kill 'KILL', grep { $loops{$_} == $$ } keys %loops }

1;
