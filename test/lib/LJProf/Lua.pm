# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
package LJProf::Lua;
# Running Lua payloads on the built luajit, and reading what they profiled.
#
# Two runs of one payload need not allocate the same: a trace that aborted
# is tried again after a penalty with random bits, so a recording may begin
# elsewhere (at a loop's last iteration: it leaves the loop), and the GC's
# pace follows the string hash's random seed (where it shrinks a stack,
# which strings it frees that the next run makes anew). A test comparing
# runs stops the GC and keeps its hot loops away from their ends, as
# test/memprof/jit_alloc.t does.
use strict;
use warnings;
use Exporter 'import';
use File::Temp qw(tempdir);
use JSON::PP;
use LJProf::Pace qw(scaled time_scale);

our @EXPORT = qw(scratch run_lua memprof_report sysprof_json location loc_matching collapsed
                 sysprof_stacks count_stacks line_of memprof_stacks two_callers);

my $dir = tempdir(CLEANUP => 1);
my $seq = 0;

sub scratch { return $dir }

sub slurp {
  my ($path) = @_;
  open my $fh, '<:raw', $path or return '';
  local $/;
  my $s = <$fh>;
  return defined $s ? $s : '';
}

# run_lua($code, %opt) -> { out, err, rc, signal, script, timedout }: $code is
# written to a file of its own (so its chunk name is @<that file>) and run
# with luajit, environment from $opt{env}, arguments from $opt{args}. With
# $opt{timeout} (seconds on a quick machine, scaled: LJProf::Pace), a run
# that takes longer is killed with every process it started, and says
# timedout.
sub run_lua {
  my ($code, %opt) = @_;
  my $script = sprintf '%s/payload%d.lua', $dir, ++$seq;
  open my $fh, '>', $script or die "$script: $!";
  print $fh $code;
  close $fh;
  my $deadline = $opt{timeout} ? scaled($opt{timeout}) : 0;
  time_scale();  # In the environment of the program too.
  my $pid = fork // die "fork: $!";
  if ($pid == 0) {
    setpgrp(0, 0) if $opt{timeout};
    $ENV{$_} = $opt{env}{$_} for keys %{ $opt{env} || {} };
    open STDOUT, '>', "$dir/stdout" or die $!;
    open STDERR, '>', "$dir/stderr" or die $!;
    exec($opt{luajit} || 'luajit', $script, @{ $opt{args} || [] }) or die "exec: $!";
  }
  my $timedout = 0;
  {
    local $SIG{ALRM} = sub { $timedout = 1; kill 'KILL', -$pid };
    alarm($deadline);
    waitpid $pid, 0;
    alarm 0;
  }
  return { out => slurp("$dir/stdout"), err => slurp("$dir/stderr"),
	   rc => $? >> 8, signal => $? & 127, script => $script, timedout => $timedout };
}

# The JSON report of a memprof file: { json, rc, err, loc => {name => entry} }.
sub memprof_report {
  my ($file, @opts) = @_;
  my $out = `ljprof report --format=json @opts '$file' 2>'$dir/report.err'`;
  my $rc = $? >> 8;
  my $doc = eval { JSON::PP->new->decode($out) };
  return { rc => $rc, err => slurp("$dir/report.err"), json => $doc,
	   loc => { map { $_->{location} => $_ } @{ $doc ? $doc->{locations} : [] } } };
}

# The JSON report of a sysprof file, decoded (undef if it is not JSON), and
# the report's exit status.
sub sysprof_json {
  my ($file) = @_;
  my $out = `ljprof report --format=json '$file' 2>'$dir/report.err'`;
  return (eval { JSON::PP->new->decode($out) }, $? >> 8);
}

# The number of the first line of $code that holds $mark.
sub line_of {
  my ($code, $mark) = @_;
  my @lines = split /\n/, $code;
  my ($n) = grep { $lines[$_ - 1] =~ /\Q$mark\E/ } 1 .. @lines;
  return $n;
}

# The collapsed stacks of a sysprof file: { "outer;...;inner" => count },
# and the report's exit status.
sub collapsed {
  my ($file) = @_;
  my %stacks;
  my $out = `ljprof report --format=collapsed '$file' 2>'$dir/report.err'`;
  my $rc = $? >> 8;
  for (split /\n/, $out) {
    $stacks{$1} += $2 if /^(.*) (\d+)$/;
  }
  return (\%stacks, $rc);
}

# Of sysprof_stacks' [frames, count] pairs: the samples whose frames
# satisfy $pred, and all samples.
sub count_stacks {
  my ($stacks, $pred) = @_;
  my ($n, $all) = (0, 0);
  for (@$stacks) {
    my ($f, $c) = @$_;
    $all += $c;
    $n += $c if $pred->($f);
  }
  return ($n, $all);
}

# Runs $code with PATH and MODE filled in (a sysprof stream's path, its
# mode), as test $name, 120 s at most on a quick machine (scaled): the
# collapsed stacks as [frames, count] pairs, frames outermost first; the
# stream's path, the script's, and the report's exit status.
sub sysprof_stacks {
  my ($name, $code, $mode) = @_;
  my $bin = "$dir/$name.bin";
  $code =~ s/PATH/"$bin"/g;
  $code =~ s/MODE/"$mode"/g;
  my $run = run_lua($code, timeout => 120);
  Test::More::is($run->{rc}, 0, "$name: ran")
    or Test::More::diag($run->{timedout} ? "killed after its deadline\n$run->{err}" : $run->{err});
  my ($stacks, $rc) = collapsed($bin);
  return ([map { [[split /;/], $stacks->{$_}] } keys %$stacks], $bin,
          $run->{script}, $rc);
}

# The collapsed stacks of a memprof file (bytes allocated, or in use with
# --leak-only among @opt): { "outer;...;inner" => bytes }, the path of
# $script written F.
sub memprof_stacks {
  my ($file, $script, @opt) = @_;
  my $out = `ljprof report --format=collapsed @opt '$file' 2>&1`;
  my %st;
  for (split /\n/, $out) {
    next unless /^(.*) (\d+)$/;
    my ($k, $v) = ($1, $2);
    $k =~ s/\Q$script\E/F/g;
    $st{$k} += $v;
  }
  return \%st;
}

# A program with one allocation site, make(i) (its body $o{make}), reached
# from two callers: keeper() keeps $o{n} results, churner() calls it 3n
# times into a ring of 8; $o{head} first, the profile started with
# $o{options}, a full collection before it stops. Lines marked -- SITE,
# KEEP, CHURN, CALLK and CALLC (line_of).
sub two_callers {
  my (%o) = @_;
  my $n3 = 3 * $o{n};
  return <<"LUA";
$o{head}
collectgarbage("stop")
local kept, ring = {}, {}
local function make(i)
$o{make}
end
local function keeper(n)
  for i = 1, n do kept[i] = make(i) end  -- KEEP
end
local function churner(n)
  for i = 1, n do ring[i % 8] = make(i) end  -- CHURN
end
assert(misc.memprof.start($o{options}))
keeper($o{n})  -- CALLK
churner($n3)  -- CALLC
collectgarbage()
assert(misc.memprof.stop())
LUA
}

# A location's entry, or an all-zero one, so counts compare cleanly.
sub location {
  my ($r, $name) = @_;
  return $r->{loc}{$name} || { location => $name, alloc_events => 0,
    alloc_bytes => 0, realloc_events => 0, free_events => 0, freed_bytes => 0,
    live_bytes => 0, live_blocks => 0 };
}

# Entries whose names match a regexp.
sub loc_matching {
  my ($r, $re) = @_;
  return grep { $_->{location} =~ $re } values %{ $r->{loc} };
}

1;
