#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# A file slower than the events: the profile goes to a FIFO whose reader
# takes 64 KiB at a time and sleeps between reads, so the writer thread
# blocks on the pipe and the allocating thread waits for it at each
# hand-over. Nothing is lost: every event is in the stream, in order (the
# stacks announced before the events that name them, the stream complete).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use POSIX qw(mkfifo);
use Time::HiRes qw(sleep);
use LJProf::Lua;

my $fifo = scratch() . '/slow.fifo';
my $bin = scratch() . '/slow.bin';
mkfifo($fifo, 0600) or plan skip_all => "no FIFO here: $!";

my $reader = fork // die "fork: $!";
if ($reader == 0) {
  open my $in, '<:raw', $fifo or die "$fifo: $!";
  open my $out, '>:raw', $bin or die "$bin: $!";
  my $buf;
  while (sysread($in, $buf, 65536)) {
    print $out $buf;
    sleep(0.004);
  }
  close $out;
  exit 0;
}

my $n = 200000;
my $run = run_lua(<<"LUA", timeout => 120);
jit.off()
local keep = {}
for i = 1, $n do keep[i] = false end
collectgarbage() collectgarbage("stop")
local function a(i) keep[i] = { i } end
local function b(i) a(i) end
local function c(i) keep[i] = { i, i } end
assert(misc.memprof.start({ path = "$fifo", stacks = true }))
for i = 1, $n do
  if i % 2 == 0 then b(i) else c(i) end
end
assert(misc.memprof.stop())
LUA
waitpid $reader, 0;
is($run->{rc}, 0, 'payload ran') or diag $run->{err};
is($? >> 8, 0, 'the slow reader read to the end');
cmp_ok(-s $bin, '>', 2 * 1024 * 1024,
       'the stream is more than the pipe and both buffers hold: the writer waited');

my $r = memprof_report($bin);
is($r->{rc}, 0, 'the stream reads back complete') or diag $r->{err};
my $src = '@' . $run->{script};
is(location($r, "$src:5")->{alloc_events}, $n / 2, 'line 5 made all its tables');
is(location($r, "$src:7")->{alloc_events}, $n / 2, 'line 7 made all its tables');
is(location($r, "$src:5")->{alloc_bytes}, $n / 2 * 88,
   '... of 88 bytes each (a table and its array)');
is($r->{json}{stacks}{distinct}, 2, 'two stacks, announced once each');
is($r->{json}{stacks}{table_full_events}, 0, 'no event lost its stack');
my $stacks = memprof_stacks($bin, $run->{script});
is($stacks->{'pmain;@F:10;@F:6;@F:5'}, $n / 2 * 88,
   'the stack through b and a holds all of line 5\'s bytes');

done_testing;
