#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# LJPROF in the environment: profiles of a program that does nothing to be
# profiled, complete however it ends, with the hot line and the allocating
# line where they are; the defaults and the escapes of paths; a bad or
# unwritable setting costs one line on stderr and changes nothing else;
# the two-VM host of examples/embed.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use Cwd qw(getcwd);
use LJProf::Lua;

my $dir = scratch();

sub stderr_lines { return grep { $_ ne '' } split /\n/, $_[0] }

# A hot line and an allocating line; "how" says how the program ends.
my $payload = <<'LUA';
local ffi = require("ffi")
ffi.cdef("int getpid(void);")
local function hot(n)
  local s = 0
  for i = 1, n do s = s + math.sin(i) * math.cos(i) end  -- HOT
  return s
end
local keep = {}
local function alloc(n)
  for i = 1, n do keep[#keep + 1] = { i, tostring(i) } end  -- ALLOC
end
alloc(100000)
-- Where the CPU is profiled, the hot line runs until it has twice the
-- samples of all before it, 100 at least, however slow allocating is.
local before = misc.sysprof.report().samples
repeat hot(100000)
until not (os.getenv("LJPROF") or ""):find("cpu") or
      misc.sysprof.report().samples >= 3 * before + 100
print("pid " .. ffi.C.getpid())
local how = arg[1]
if how == "exit" then os.exit(5) end
if how == "error" then error("boom") end
LUA
my ($hot, $alloc) = (line_of($payload, 'HOT'), line_of($payload, 'ALLOC'));

# -- Both profiles, and the report of each ----------------------------------

{
  my $r = run_lua($payload, env => { LJPROF => "cpu:mode=C,interval=1,path=$dir/a-cpu.bin;mem:path=$dir/a-mem.bin" },
                  timeout => 60);
  is($r->{rc}, 0, 'cpu and mem: the program ran') or diag $r->{err};
  is($r->{err}, '', 'cpu and mem: nothing said on stderr');
  my $src = '@' . $r->{script};
  my ($doc, $rc) = sysprof_json("$dir/a-cpu.bin");
  is($rc, 0, 'cpu: the stream is complete');
  is($doc->{mode}, 'C', 'cpu: mode C as asked');
  is($doc->{interval_ms}, 1, 'cpu: interval 1 ms as asked');
  cmp_ok($doc->{samples}, '>=', 100, "cpu: samples ($doc->{samples})");
  is($doc->{lines}[0]{name}, "$src:$hot", 'cpu: the hot line is the first line by self')
    or diag explain $doc->{lines}[0];
  my $mem = memprof_report("$dir/a-mem.bin");
  is($mem->{rc}, 0, 'mem: the stream is complete') or diag $mem->{err};
  cmp_ok(location($mem, "$src:$alloc")->{alloc_events}, '>=', 200000,
         'mem: the allocating line has its allocations (a table and a string each)');
}

{
  my $r = run_lua($payload, env => { LJPROF => "cpu:mode=L,clock=wall,interval=2,path=$dir/l.bin" },
                  timeout => 60);
  my ($doc, $rc) = sysprof_json("$dir/l.bin");
  is($rc, 0, 'cpu mode L, wall clock: the stream is complete');
  is_deeply([ @$doc{qw(mode clock interval_ms)} ], [ 'L', 'monotonic', 2 ],
            'cpu mode L, wall clock: the settings are the stream\'s');
}

# -- However the program ends -----------------------------------------------

for my $how (qw(exit error)) {
  my $r = run_lua($payload, args => [$how], timeout => 60,
                  env => { LJPROF => "cpu:interval=1,path=$dir/$how-cpu.bin;mem:path=$dir/$how-mem.bin" });
  is($r->{rc}, $how eq 'exit' ? 5 : 1, "ends by $how: its exit status");
  my (undef, $rc) = sysprof_json("$dir/$how-cpu.bin");
  is($rc, 0, "ends by $how: the cpu stream is complete");
  is(memprof_report("$dir/$how-mem.bin")->{rc}, 0, "ends by $how: the mem stream is complete");
}

# -- Defaults and the escapes of paths ----------------------------------------

{
  my $cwd = getcwd();
  mkdir "$dir/defaults";
  chdir "$dir/defaults" or die $!;
  my $r = run_lua($payload, env => { LJPROF => 'cpu;mem' }, timeout => 60);
  chdir $cwd;
  my ($pid) = $r->{out} =~ /^pid (\d+)$/m;
  ok(-s "$dir/defaults/ljprof-cpu-$pid.bin", 'defaults: ljprof-cpu-PID.bin');
  ok(-s "$dir/defaults/ljprof-mem-$pid.bin", 'defaults: ljprof-mem-PID.bin');
  my ($doc, $rc) = sysprof_json("$dir/defaults/ljprof-cpu-$pid.bin");
  # The thread's CPU time: a perf event where the kernel allows it.
  (my $clock = $doc->{clock} // '') =~ s/^thread-cpu-perf$/thread-cpu/;
  is_deeply([ $rc, @$doc{qw(mode interval_ms)}, $clock ], [ 0, 'C', 10, 'thread-cpu' ],
            'defaults: mode C, 10 ms, CPU time');

  my $t0 = time;
  $r = run_lua($payload, env => { LJPROF => "mem:path=$dir/x-%p-%t-%n-%%.bin" });
  my $t1 = time;
  ($pid) = $r->{out} =~ /^pid (\d+)$/m;
  my @files = glob "$dir/x-$pid-*-1-%.bin";
  is(scalar @files, 1, '%p, %n and %% expand') or diag join ' ', glob "$dir/x-*";
  my ($t) = ($files[0] // '') =~ /x-\d+-(\d+)-1-%\.bin$/;
  ok(defined $t && $t >= $t0 && $t <= $t1, '%t is the start time in Unix seconds');
}

# -- Memory profiles with call stacks, sampled ----------------------------------

{
  my $r = run_lua("local t = {} for i = 1, 200000 do t[i % 100] = { i } end",
                  env => { LJPROF => "mem:path=$dir/sampled.bin,sample=4096" });
  is($r->{rc}, 0, 'mem:sample=4096: ran') or diag $r->{err};
  like(`ljprof report '$dir/sampled.bin'`, qr/^SAMPLED: an allocation recorded every 4096 bytes/m,
       'mem:sample=4096: a sampled stream');
  $r = run_lua("local t = {} for i = 1, 1000 do t[i] = { i } end",
               env => { LJPROF => "mem:path=$dir/stacks.bin,stacks=1" });
  like(`ljprof report '$dir/stacks.bin'`, qr/^Call stacks: \d+ distinct/m, 'mem:stacks=1: a stream with stacks');
}

# -- Bad settings: one line, nothing else changes -----------------------------

my $quiet = <<'LUA';
io.write("out 1\n")
io.stderr:write("err 1\n")
os.exit(3)
LUA
my $plain = run_lua($quiet);
my @bad = ('cpu:mode=X', 'cpu:interval=0', 'cpu:interval=abc', 'cpu:clock=sun',
           'cpu:foo=1', 'mem:mode=C', 'gpu', 'cpu;cpu', 'cpu:mode', ';',
           'cpu:signal=SIGFOO', 'cpu:signal=SIGUSR1;mem:signal=SIGUSR2',
           'cpu:path=a%q.bin', 'cpu:path=a%', 'mem:path=', 'cpu:rotate=0', 'mem:rotate=1.5',
           'cpu:rotate=1;mem:rotate=2', 'mem:sample=0', 'mem:sample=1.5', 'mem:sample=-4',
           'mem:sample=2199023255552', 'mem:stacks=yes', 'cpu:stacks=1', 'mem:native=yes',
           'cpu:native=1', 'cpu:jit=yes', 'mem:jit=0', 'ondemand:x=1', 'ondemand;ondemand',
           'mem:format=v7', 'mem:format=5', 'cpu:format=v5', 'cpu:follow=yes', 'mem:follow=2',
           'heap:follow=1', 'x' x 5000,
           "mem:path=$dir/no-such-dir/m.bin", "cpu:path=$dir",
           "cpu;mem:path=$dir/no-such-dir/m.bin");
my $cwd = getcwd();
mkdir "$dir/bad";
chdir "$dir/bad" or die $!;
for my $setting (@bad) {
  my $name = length $setting > 60 ? 'a setting of 5000 bytes' : "LJPROF='$setting'";
  my $r = run_lua($quiet, env => { LJPROF => $setting });
  is($r->{out}, $plain->{out}, "$name: the same output");
  is($r->{rc}, $plain->{rc}, "$name: the same exit status");
  my @err = grep { $_ ne 'err 1' } stderr_lines($r->{err});
  ok(@err == 1 && $err[0] =~ /^LJPROF: .*not profiling$/, "$name: one line naming LJPROF")
    or diag $r->{err};
  my @left = glob "$dir/bad/*";
  is(scalar @left, 0, "$name: no file written") or diag "@left";
  unlink @left;
}
chdir $cwd;

# -- ljprof record keeps its own profile --------------------------------------

{
  my $script = "$dir/rec.lua";
  open my $fh, '>', $script or die $!;
  print $fh $payload;
  close $fh;
  chdir "$dir/bad" or die $!;
  my $out = `LJPROF=mem ljprof record --mem -o $dir/rec.bin --format=json -- $script 2>&1 >/dev/null`;
  my $rc = $? >> 8;
  my @left = glob "$dir/bad/*";
  chdir $cwd;
  is($rc, 0, 'ljprof record under LJPROF=mem: records') or diag $out;
  is(scalar @left, 0, 'ljprof record: no profile from the environment in its child');
}

# -- examples/embed: a host with two VMs --------------------------------------

my $host = ($ENV{LJPROF_BUILD_DIR} || "$FindBin::Bin/../../build") . '/examples/embed/host';

# Each way the host runs its VMs, each VM has its profiles, complete, under
# %n, and each profile holds that VM's work only.
sub host_profiles {
  my ($how) = @_;
  my $p = "$dir/h$how";
  my $env = "cpu:interval=1,path=$p-cpu-%n.bin;mem:path=$p-mem-%n.bin";
  my $out = `LJPROF='$env' $host $how 2>$dir/host.err`;
  my $name = $how ? "host $how" : 'host';
  is($? >> 8, 0, "$name: runs");
  is($out, "orders: 200000, priced: yes\n", "$name: its own output");
  is(-s "$dir/host.err" // 0, 0, "$name: nothing on stderr")
    or diag LJProf::Lua::slurp("$dir/host.err");
  my ($c1, $r1) = sysprof_json("$p-cpu-1.bin");
  my ($c2, $r2) = sysprof_json("$p-cpu-2.bin");
  is_deeply([ $r1, $r2 ], [ 0, 0 ], "$name: a complete CPU profile for each VM, under %n");
  ok(!grep({ $_->{name} =~ /pricing\.lua/ } @{ $c1->{lines} }), "$name: VM 1 never ran pricing.lua");
  ok(!grep({ $_->{name} =~ /orders\.lua/ } @{ $c2->{lines} }), "$name: VM 2 never ran orders.lua");
  is($c2->{lines}[0]{name}, '@pricing.lua:3', "$name: VM 2 spends its time on pricing.lua:3")
    or diag explain $c2->{lines}[0];
  my ($m1, $m2) = map { memprof_report("$p-mem-$_.bin") } 1, 2;
  is_deeply([ $m1->{rc}, $m2->{rc} ], [ 0, 0 ], "$name: a complete memory profile for each VM");
  cmp_ok(location($m1, '@orders.lua:3')->{alloc_events}, '>=', 200000,
         "$name: VM 1 allocates on orders.lua:3");
  is(location($m2, '@orders.lua:3')->{alloc_events}, 0, "$name: VM 2 does not");
}

SKIP: {
  skip "no $host", 1 unless -x $host;
  host_profiles($_) for '', '--together', '--threads';
}

done_testing;
