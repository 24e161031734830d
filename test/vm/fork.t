#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# fork() while a profile runs: the child forgets its parent's profile (it
# never writes into the parent's stream and never waits for the parent's
# threads), whether it returns, calls os.exit() or calls stop(); it may
# start a profile of its own; the parent's profile goes on and ends
# complete. A profile started with follow = true is the exception: the
# child starts its own, same options, into the path with its pid added,
# complete when it returns or calls stop(). Every run has a deadline: a
# hang fails, it never blocks prove.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

my $dir = scratch();

# Parent: profile, fork, wait for the child while allocating, allocate
# again, stop. Child: allocate on its own line, then end as asked.
my $payload = <<'LUA';
local ffi = require("ffi")
ffi.cdef[[
int fork(void);
int waitpid(int pid, int *status, int options);
int kill(int pid, int sig);
unsigned alarm(unsigned seconds);
int usleep(unsigned usec);
]]
jit.off()  -- Lines, not traces, are what this test compares.
local kind, ending, mempath, cpupath, childpath = unpack(arg)
local scale = require("tap").time_scale()  -- Deadlines grow on a slow machine.
local mem = kind == "mem" or kind == "both"
local cpu = kind == "cpu" or kind == "both"
local keep = {}
local function parent_work(n)
  for i = 1, n do keep[#keep + 1] = { i } end  -- PARENT LINE
end
local function child_work()
  local mine, t0 = {}, os.clock()
  repeat mine[#mine + 1] = { 1, 2 } until os.clock() - t0 > 0.2  -- CHILD LINE
  return #mine
end
local follow = ending == "follow" or ending == "followstop"
if mem then assert(misc.memprof.start(follow and { path = mempath, follow = true } or mempath)) end
if cpu then
  assert(misc.sysprof.start({ mode = "C", interval = 1, clock = "wall", path = cpupath,
                              follow = follow }))
end
parent_work(1000)
io.stdout:flush()
local pid = ffi.C.fork()
assert(pid >= 0, "fork failed")
if pid == 0 then
  ffi.C.alarm(math.ceil(20 * scale))  -- A child that hangs ends.
  child_work()
  if ending == "exit" then os.exit(7) end
  if ending == "followstop" then  -- The child's own, followed, stops.
    local ok1 = not mem or misc.memprof.stop()
    local ok2 = not cpu or misc.sysprof.stop()
    os.exit((ok1 == true and ok2 == true) and 11 or 12)
  end
  if ending == "stop" then
    local ok1, msg1 = misc.memprof.stop()
    local ok2, msg2 = misc.sysprof.stop()
    os.exit((ok1 == nil and msg1 == "profiler is not running" and
             ok2 == nil and msg2 == "profiler is not running") and 8 or 9)
  end
  if ending == "own" then  -- A profile of the child's own, complete.
    if mem then assert(misc.memprof.start(childpath .. ".mem")) end
    if cpu then
      assert(misc.sysprof.start({ mode = "C", interval = 1, path = childpath .. ".cpu" }))
    end
    child_work()
    if mem then assert(misc.memprof.stop()) end
    if cpu then assert(misc.sysprof.stop()) end
    os.exit(10)
  end
  return  -- The script ends: lua_close, then exit.
end
print("child pid " .. pid)
local status, done = ffi.new("int[1]"), false
for _ = 1, 1500 * scale do
  if ffi.C.waitpid(pid, status, 1) == pid then done = true break end  -- WNOHANG
  parent_work(10)
  ffi.C.usleep(10000)
end
if not done then
  ffi.C.kill(pid, 9)
  ffi.C.waitpid(pid, status, 0)
  print("child hung")
end
local st = status[0]
print(string.format("child %s %d", st % 128 == 0 and "exit" or "signal",
                    st % 128 == 0 and math.floor(st / 256) % 256 or st % 128))
parent_work(1000)
if mem then assert(misc.memprof.stop()) end
if cpu then assert(misc.sysprof.stop()) end
print("parent done")
LUA

my %want_status = (return => 0, exit => 7, stop => 8, own => 10, follow => 0,
                   followstop => 11);

for my $kind (qw(mem cpu both)) {
  for my $ending (qw(return exit stop own follow followstop)) {
    my $name = "$kind, child that ends with $ending";
    my ($mem, $cpu, $child) = map { "$dir/$kind-$ending.$_" } qw(mem cpu child);
    unlink $mem, $cpu, "$child.mem", "$child.cpu";
    my $r = run_lua($payload, args => [$kind, $ending, $mem, $cpu, $child], timeout => 60);
    ok(!$r->{timedout}, "$name: nothing hangs") or next;
    # qemu-user (ARM64 under emulation) aborts a forked child of a process
    # with threads when it starts one: the child's own profile writes from
    # a thread of its own. Not the VM's to test there.
    my $own = $ending eq 'own' || $ending =~ /^follow/;
    my ($cpid) = $r->{out} =~ /^child pid (\d+)$/m;
    if ($own && $r->{err} =~ /qemu_plugin_vcpu_init_hook/) {
      $own = 0;
      SKIP: { skip "$name: qemu-user aborts a forked child that starts a thread", 1 }
    } else {
      like($r->{out}, qr/^child exit $want_status{$ending}$/m,
           "$name: the child ran its course and exited with its own status")
        or diag "stdout: $r->{out}\nstderr: $r->{err}";
    }
    like($r->{out}, qr/^parent done$/m, "$name: the parent profiled on and stopped")
      or diag $r->{err};
    if ($ending !~ /^follow/) {
      ok(!-e "$mem.$cpid" && !-e "$cpu.$cpid", "$name: the child wrote no stream of its own")
        or diag `ls $dir`;
    }
    my $script = $r->{script};
    my @lines = split /\n/, $payload;
    my ($parent_line) = grep { $lines[$_ - 1] =~ /PARENT LINE/ } 1 .. @lines;
    my ($child_line) = grep { $lines[$_ - 1] =~ /CHILD LINE/ } 1 .. @lines;
    if ($kind ne 'cpu') {
      my $rep = memprof_report($mem);
      is($rep->{rc}, 0, "$name: the parent's memory profile is complete") or diag $rep->{err};
      my $p = location($rep, "\@$script:$parent_line");
      cmp_ok($p->{alloc_events}, '>=', 2000,
             "$name: it holds the parent's allocations before and after the fork");
      is(location($rep, "\@$script:$child_line")->{alloc_events}, 0,
         "$name: and none of the child's");
      if ($own) {
        my $rep = memprof_report($ending eq 'own' ? "$child.mem" : "$mem.$cpid");
        is($rep->{rc}, 0, "$name: the child's own memory profile is complete") or diag $rep->{err};
        cmp_ok(location($rep, "\@$script:$child_line")->{alloc_events}, '>', 1000,
               "$name: and holds the child's allocations");
      }
    }
    if ($kind ne 'mem') {
      my ($stacks, $rc) = collapsed($cpu);
      is($rc, 0, "$name: the parent's CPU profile is complete");
      my $total = 0;
      $total += $_ for values %$stacks;
      cmp_ok($total, '>', 20, "$name: it has the parent's samples ($total)");
      is(scalar(grep { /\Q$script\E:$child_line\b/ } keys %$stacks), 0,
         "$name: and none of the child's");
      if ($own) {
        my ($stk, $orc) = collapsed($ending eq 'own' ? "$child.cpu" : "$cpu.$cpid");
        is($orc, 0, "$name: the child's own CPU profile is complete");
        ok(scalar(grep { /\Q$script\E:$child_line\b/ } keys %$stk),
           "$name: and has samples on the child's line");
      }
    }
  }
}

done_testing;
