#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# After a nested call from C returns, or unwinds with an error, the VM is
# back in the C function: what it allocates next is the C function's, and
# what the Lua callee allocated is the callee's line.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

my $cmodpath = $ENV{LJPROF_BUILD_DIR} . '/test/?.so';
my $bin = scratch() . '/nested.bin';
my $run = run_lua(<<"LUA");
package.cpath = "$cmodpath;" .. package.cpath
local cmod = require("cmod")
jit.off()
collectgarbage("stop")
assert(misc.memprof.start("$bin"))
local function ok() local t = { {}, {} } return t end
local function fails() local t = {} error("x") end
cmod.after(ok, 5)
cmod.after(fails, 7)
assert(misc.memprof.stop())
LUA
is($run->{rc}, 0, 'payload ran') or diag $run->{err};
my $r = memprof_report($bin);
is($r->{rc}, 0, 'the stream reads back complete') or diag $r->{err};
my $src = '@' . $run->{script};
is(location($r, 'cmod_after')->{alloc_events}, (1 + 5) + (1 + 7),
   'after the call returned and after it unwound, cmod_after made its table and userdata');
is(location($r, "$src:6")->{alloc_events}, 1 + 3, 'the line of the callee that returned: its closure and its 3 tables');
cmp_ok(location($r, "$src:7")->{alloc_events}, '>=', 1, 'the callee that failed made its table (and its error)');

done_testing;
