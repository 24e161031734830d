#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# The perf map: /tmp/perf-PID.map names the interpreter and every trace,
# `TRACE n @chunk:line` over the trace's machine code as jit.util.tracemc
# gives it, turned on by LJPROF_PERFMAP=1 or misc.perfmap(true); and Linux
# perf names samples in compiled code by it.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

# Prints the process id, then `trace n START SIZE LINE` for traces 1..$n.
my $report = <<'LUA';
local ffi = require("ffi")
ffi.cdef("int getpid(void);")
print("pid " .. ffi.C.getpid())
local function report(n)
  local ju = require("jit.util")
  for tr = 1, n do
    local mc, addr = ju.tracemc(tr)
    if mc then print(("trace %d %x %x"):format(tr, addr, #mc)) end
  end
end
LUA

# The map of a run: { lines => [...], traces => { n => [start, size, name] } }.
sub read_map {
  my ($pid) = @_;
  my $path = "/tmp/perf-$pid.map";
  my %map = (lines => [], traces => {}, exists => -e $path);
  open my $fh, '<', $path or return \%map;
  while (<$fh>) {
    chomp;
    push @{ $map{lines} }, $_;
    $map{traces}{$3} = [hex $1, hex $2, $4] if /^([0-9a-f]+) ([0-9a-f]+) (?:TRACE (\d+) (.*))$/;
  }
  close $fh;
  unlink $path;
  return \%map;
}

sub parse_run {
  my ($out) = @_;
  my ($pid) = $out =~ /^pid (\d+)$/m;
  my %tr;
  $tr{$1} = [hex $2, hex $3] while $out =~ /^trace (\d+) ([0-9a-f]+) ([0-9a-f]+)$/mg;
  return ($pid, \%tr);
}

# -- LJPROF_PERFMAP=1: every trace as it is created --------------------------

my $loop = $report . <<'LUA';
local x = 0
for i = 1, 1e6 do x = x + i % 7 end
local y = 0
for i = 1, 1e6 do y = y + i % 5 end
report(2)
LUA
my $r = run_lua($loop, env => { LJPROF_PERFMAP => '1' });
is($r->{rc}, 0, 'env: the script ran') or diag $r->{err};
my ($pid, $tr) = parse_run($r->{out});
my $map = read_map($pid);
my $src = $r->{script};
ok($map->{exists}, "env: /tmp/perf-$pid.map written");
like($map->{lines}[0] // '', qr/^[0-9a-f]+ [0-9a-f]+ luajit interpreter$/, 'env: the interpreter first, hex without 0x');
for my $n (1, 2) {
  my $line = $n == 1 ? 12 : 14;
  is_deeply($map->{traces}{$n}, [@{ $tr->{$n} || [] }, "\@$src:$line"],
            "env: trace $n over the code tracemc gives, named TRACE $n \@...:$line");
}
# The address and size columns: a script's path may hold "0x" (mktemp).
is_deeply([grep { (split / /)[0] =~ /0x/ || ((split / /)[1] // '') =~ /0x/ } @{ $map->{lines} }],
          [], 'env: no 0x prefixes');

# -- misc.perfmap(true|false) ------------------------------------------------

$r = run_lua($report . <<'LUA');
local x = 0
for i = 1, 1e6 do x = x + i % 7 end       -- trace 1, before the map
assert(misc.perfmap(true))
for i = 1, 1e6 do x = x + i % 5 end       -- trace 2, while it is on
assert(misc.perfmap(false))
for i = 1, 1e6 do x = x + i % 3 end       -- trace 3, after
print(misc.perfmap("yes"))
report(3)
LUA
is($r->{rc}, 0, 'misc.perfmap: the script ran') or diag $r->{err};
($pid, $tr) = parse_run($r->{out});
$map = read_map($pid);
is_deeply([sort keys %{ $map->{traces} }], [1, 2], 'misc.perfmap: the trace that existed and the one made while on, not the one after');
is_deeply($map->{traces}{1}, [@{ $tr->{1} || [] }, "\@$r->{script}:12"], 'misc.perfmap: the existing trace named when turned on');
like($r->{out}, qr/^nil\tprofiler misuse: perfmap takes true or false\t22$/m, 'misc.perfmap: a bad argument is a misuse');

# -- Off unless asked; a bad setting changes nothing -------------------------

for my $env ({}, { LJPROF_PERFMAP => 'yes' }) {
  $r = run_lua($report . "for i = 1, 1e5 do end\n", env => $env);
  ($pid) = parse_run($r->{out});
  my $what = %$env ? 'LJPROF_PERFMAP=yes' : 'no setting';
  is($r->{rc}, 0, "$what: the script ran");
  ok(!read_map($pid)->{exists}, "$what: no map written");
}

# -- Linux perf names samples in traces --------------------------------------

SKIP: {
  my $probe = `perf stat -e cpu-clock true 2>&1`;
  skip "perf events do not work here: " . (split /\n/, $probe)[0], 3 if $? != 0 || $probe !~ /cpu-clock/;
  # A cross-build's VM runs under qemu-user: perf samples the emulator's
  # own code, never the program's, traces or not.
  skip "the VM runs under qemu-user ($ENV{LJPROF_CROSS}): perf samples the emulator", 3
    if ($ENV{LJPROF_CROSS} // '') ne '';
  my $data = scratch() . '/perf.data';
  my $script = scratch() . '/hot.lua';
  open my $fh, '>', $script or die $!;
  print $fh "local x = 0\nfor i = 1, 2e8 do x = x + i % 7 end\nprint(x)\n";
  close $fh;
  local $ENV{LJPROF_PERFMAP} = '1';
  my $out = `perf record -q -e cpu-clock -o '$data' luajit '$script' 2>&1`;
  is($? >> 8, 0, 'perf: recorded') or diag $out;
  my $rep = `perf report -i '$data' --stdio --sort sym 2>/dev/null`;
  my ($share) = $rep =~ /^\s+([\d.]+)%\s+\[\.\]\s+TRACE 1 \@\Q$script\E:2$/m;
  ok(defined $share, 'perf report: samples named TRACE 1 @...:2') or diag $rep;
  cmp_ok($share // 0, '>', 30, 'perf report: the trace holds a good share of the samples');
  my ($pid) = `perf script -F pid -i '$data' 2>/dev/null` =~ /(\d+)/;
  unlink "/tmp/perf-$pid.map" if $pid;
}

done_testing();
