#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Native frames in call stacks (native = true): a C module's function that
# allocates, called from Lua called from Lua, has its allocations' stacks
# name the Lua callers, then the module's function, then the VM's own
# allocation code, innermost last; below the Lua frames, the host's. Also
# from a trace (the helper it calls, under the frames it inlined), in a
# coroutine, with the module loaded while the profile runs; stacks without
# native frames are as they were. Then the interfaces: the option's
# checks, LJPROF's mem:native=1 and `ljprof record --mem --native`.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Lua;

# Frames of a collapsed stack, outermost first; the event's location is
# appended by the report when it is not the innermost frame: dropped.
sub frames_of {
  my ($key) = @_;
  my @f = split /;/, $key;
  return @f;
}

sub index_of {
  my ($frames, $re) = @_;
  for my $i (0 .. $#$frames) { return $i if $frames->[$i] =~ $re }
  return -1;
}

# The stacks among %$st whose frames match every one of @re, in that order.
sub stacks_in_order {
  my ($st, @re) = @_;
  my @found;
  KEY: for my $k (sort keys %$st) {
    my @f = frames_of($k);
    my $at = -1;
    for my $re (@re) {
      my $i = index_of([@f[$at + 1 .. $#f]], $re);
      next KEY if $i < 0;
      $at += $i + 1;
    }
    push @found, $k;
  }
  return @found;
}

sub sum_of { my ($st, @k) = @_; my $s = 0; $s += $st->{$_} for @k; return $s }

# Runs a payload profiled with native = true (its start's options written
# OPTS): its collapsed stacks (the script written F) and the lines of its
# marks (-- NAME).
sub native_run {
  my ($name, $code, @marks) = @_;
  my $bin = scratch() . "/$name.bin";
  $code =~ s/OPTS/{ path = "$bin", native = true }/;
  my %line = map { $_ => line_of($code, "-- $_") } @marks;
  my $run = run_lua($code);
  is($run->{rc}, 0, "$name: ran") or diag $run->{err};
  return (memprof_stacks($bin, $run->{script}), \%line);
}

my $cmod_code = <<'LUA';
jit.off()
local cmod
local function inner() local t = cmod.alloc(3) return t end  -- INNER
local function outer() local t = inner() return t end  -- OUTER
assert(misc.memprof.start(OPTIONS))
cmod = require("cmod")  -- LOAD
local x = outer()  -- MAIN
assert(misc.memprof.stop())
LUA
my %l = map { $_ => line_of($cmod_code, "-- $_") } qw(INNER OUTER MAIN);

my %lua_only;
for my $native (1, 0) {
  my $tag = $native ? 'native' : 'stacks only';
  my $bin = scratch() . "/cmod-$native.bin";
  (my $code = $cmod_code) =~ s/OPTIONS/{ path = "$bin", @{[ $native ? 'native = true' : 'stacks = true' ]} }/;
  my $run = run_lua($code);
  is($run->{rc}, 0, "$tag: ran") or diag $run->{err};
  my $st = memprof_stacks($bin, $run->{script});
  my $text = `ljprof report '$bin'`;
  my @lua = ('^\@F:' . $l{MAIN} . '$', '^\@F:' . $l{OUTER} . '$', '^\@F:' . $l{INNER} . '$');
  if (!$native) {
    my $key = "pmain;\@F:$l{MAIN};\@F:$l{OUTER};\@F:$l{INNER};cmod_alloc";
    ok($st->{$key}, "stacks only: the Lua frames, then the C function: $key") or diag explain $st;
    is(scalar(grep { /\blj_mem_|lua_pcall|lua_newuserdata/ } keys %$st), 0,
       'stacks only: no native frame anywhere') or diag explain $st;
    unlike($text, qr/with native frames/, 'stacks only: the report does not speak of native frames');
    is($st->{$key}, $lua_only{native_sum}, 'the native stacks under the C function add up to its stack without them');
    next;
  }
  my @udata = stacks_in_order($st, qr/^(?:lua_pcall|docall)$/, (map { qr/$_/ } @lua),
                              qr/^cmod_alloc$/, qr/^lua_newuserdata$/, qr/^lj_mem_/);
  is(scalar @udata, 1, 'native: one stack for the userdata: host, Lua caller lines, the C function, the API, the allocator')
    or diag explain $st;
  my @f = frames_of($udata[0] // '');
  pop @f if @f && $f[-1] eq 'cmod_alloc';  # the event's location
  like($f[-1] // '', qr/^lj_mem_/, "native: the innermost frame is the VM's allocation code ($f[-1])");
  my $c = index_of(\@f, qr/^cmod_alloc$/);
  is($f[$c - 1] // '', "\@F:$l{INNER}", 'native: the C function sits right under its Lua caller');
  ok(!grep({ /^\@F:/ } @f[$c + 1 .. $#f]), 'native: no Lua frame above the C function');
  is(index_of(\@f, qr/^\@F:/), index_of(\@f, qr/^\@F:$l{MAIN}$/), 'native: the main chunk is the outermost Lua frame');
  my @table = stacks_in_order($st, (map { qr/$_/ } @lua), qr/^cmod_alloc$/, qr/^lua_createtable$/, qr/^lj_mem_/);
  is(scalar @table, 1, "native: the C function's table: its own stack, through lua_createtable") or diag explain $st;
  my @under = grep { /;\@F:$l{INNER};cmod_alloc;/ } keys %$st;
  $lua_only{native_sum} = sum_of($st, @under);
  is(scalar @under, 2, 'native: the C function allocates from two stacks');
  is(scalar(grep { /memprof|stack_native|walk_/ } map { frames_of($_) } keys %$st), 0,
     "native: none of the profiler's own frames");
  ok(!grep({ /cmod\.so\+0x/ } keys %$st), 'native: the module loaded while profiling is named by its symbols');
  like($text, qr/^Call stacks: \d+ distinct, with native frames;/m, 'native: the report says the stacks have native frames');
  like($text, qr/from lj_mem_\w+ <- \S+ <- lua_newuserdata <- cmod_alloc <- \@\S+:$l{INNER} <- \@\S+:$l{OUTER} <- \@\S+:$l{MAIN} <- /,
       'native: the text report names the frames innermost first') or diag $text;
  # speedscope: the same frames, outermost first, by name.
  my $ss = JSON::PP->new->decode(scalar `ljprof report --format=speedscope '$bin'` || 'null');
  my @names = map { $_->{name} } @{ $ss ? $ss->{shared}{frames} : [] };
  my @sampled = map { join ';', map { $names[$_] } @$_ } @{ $ss ? $ss->{profiles}[0]{samples} : [] };
  ok((grep { /;\@\S+:$l{INNER};cmod_alloc;lua_newuserdata;(?:\w+;)*lj_mem_\w+(;|$)/ } @sampled),
     'native: speedscope has the C function and the API between the Lua caller and the allocator')
    or diag explain \@sampled;
}

# A trace allocates through a helper it calls: the frames it inlined, then
# the helper, its native frames; the first iterations, interpreted, through
# the interpreter's helper.
SKIP: {
  skip 'no JIT in this build', 7
    unless `luajit -e 'io.write(jit.status() and 1 or 0)'` eq '1';
  my ($st, $t) = native_run('trace', <<'LUA', qw(MAKE LOOP CALL));
jit.on()
local function make(i) return { i } end  -- MAKE
local function loop(n)
  local t = {}
  for i = 1, n do t[i] = make(i) end  -- LOOP
  return t
end
assert(misc.memprof.start(OPTS))
local x = loop(20000)  -- CALL
assert(misc.memprof.stop())
LUA
  my @site = grep { /;\@F:$t->{CALL};\@F:$t->{LOOP};\@F:$t->{MAKE};lj_/ } keys %$st;
  my @trace = grep { /;\@F:$t->{MAKE};lj_tab_new1;/ } @site;
  my @interp = grep { /;\@F:$t->{MAKE};lj_tab_new;/ } @site;
  is(scalar @trace, 1, "trace: one stack from the trace: its inlined frame, then the helper it calls") or diag explain $st;
  is(scalar @interp, 1, 'trace: one from the interpreter, through its own helper');
  my $total = sum_of($st, grep { /;\@F:$t->{MAKE}(?:;|$)/ } keys %$st);
  cmp_ok($st->{$trace[0] // ''} // 0, '>', 0.9 * $total, 'trace: most bytes made at the site come from the trace');
  is(sum_of($st, @trace, @interp), $total, 'trace: every allocation at the site has the whole Lua stack');
  my @f = frames_of($trace[0] // '');
  pop @f if @f && $f[-1] eq "\@F:$t->{MAKE}";
  like($f[-1] // '', qr/^lj_mem_/, 'trace: innermost, the allocator');
  ok(index_of(\@f, qr/^lua_pcall$/) >= 0 && index_of(\@f, qr/^lua_pcall$/) < index_of(\@f, qr/^\@F:$t->{CALL}$/),
     'trace: the host below the Lua frames');
}

# In a coroutine: its frames above the resuming line, then the C function.
{
  my ($st, $c) = native_run('coroutine', <<'LUA', qw(COCALL RESUME));
jit.off()
local cmod = require("cmod")
local co = coroutine.wrap(function()
  local a = cmod.alloc(2)  -- COCALL
  coroutine.yield(a)
end)
assert(misc.memprof.start(OPTS))
local got = co()  -- RESUME
assert(misc.memprof.stop())
LUA
  my @co = stacks_in_order($st, qr/^lua_pcall$/, qr/^\@F:$c->{RESUME}$/, qr/^\@F:$c->{COCALL}$/,
                           qr/^cmod_alloc$/, qr/^lua_newuserdata$/, qr/^lj_mem_/);
  is(scalar @co, 1, "coroutine: the resumer's line, the coroutine's, the C function, the allocator")
    or diag explain $st;
  my @f = frames_of($co[0] // '');
  is(scalar(grep { /^\@F:/ } @f), 2, 'coroutine: those two Lua frames only');
}

# A coroutine's stack grown while recursing: the frames of a stack being
# moved are not read (the allocator freed them); the move's own stack has
# the native frames and the resumer's line only.
{
  my ($st, $g) = native_run('stack growth', <<'LUA', qw(DOWN RESUME));
jit.off()
local function down(n) if n == 0 then return {} end local t = down(n - 1) return t end  -- DOWN
assert(misc.memprof.start(OPTS))
local co = coroutine.wrap(function() return down(3000) end)
local x = co()  -- RESUME
assert(misc.memprof.stop())
LUA
  my @moves = stacks_in_order($st, qr/^resizestack$/, qr/^lj_mem_realloc$/);
  ok(scalar @moves, 'stack growth: the moves have native stacks') or diag explain $st;
  is(scalar(grep { my @f = frames_of($_); grep({ /^\@F:$g->{DOWN}$/ } @f) } @moves), 0,
     "stack growth: none names a frame of the stack being moved");
  ok((grep { /;\@F:$g->{RESUME};/ } @moves), "stack growth: the resumer's line, below the move")
    or diag explain \@moves;
  ok((grep { /;\@F:$g->{DOWN};lj_tab_new\w*;/ } keys %$st), 'stack growth: the recursion allocates with its frames');
}

# The interfaces.
{
  my $run = run_lua(<<'LUA');
local ok, err = misc.memprof.start({ path = "/dev/null", native = 1 })
print(ok, err)
ok, err = misc.memprof.start({ path = "/dev/null", native = true, format = "v4" })
print(ok, err)
LUA
  like($run->{out}, qr/^nil\tprofiler misuse: native must be a boolean$/m, 'native = 1: an error that says native is a boolean');
  like($run->{out}, qr/^nil\tprofiler misuse: stacks, native and sample need format "v5" or "v6"$/m, 'native with format v4: refused');
  my $bin = scratch() . '/env.bin';
  $run = run_lua("local t = {} for i = 1, 1000 do t[i] = { i } end",
                 env => { LJPROF => "mem:path=$bin,native=1" });
  is($run->{rc}, 0, 'LJPROF mem:native=1: ran') or diag $run->{err};
  like(`ljprof report '$bin'`, qr/^Call stacks: \d+ distinct, with native frames;/m,
       'LJPROF mem:native=1: a stream with native stacks');
  my $st = memprof_stacks($bin, $run->{script});
  ok(scalar(stacks_in_order($st, qr/^\@F:1$/, qr/^lj_tab_new/, qr/^lj_mem_/)),
     'LJPROF mem:native=1: the chunk, then the native frames') or diag explain $st;
  my $script = scratch() . '/rec.lua';
  open my $fh, '>', $script or die $!;
  print $fh "local t = {} for i = 1, 1000 do t[i] = { i } end\n";
  close $fh;
  my $out = `ljprof record --mem --native -o '$bin' --format=collapsed -- '$script' 2>&1`;
  is($? >> 8, 0, 'ljprof record --mem --native: ran') or diag $out;
  like($out, qr/^\S*\@\Q$script\E:1;lj_tab_new\w*;\S*lj_mem_\w+\S* \d+$/m,
       'ljprof record --mem --native: the report has native frames above the Lua line') or diag $out;
}

done_testing();
