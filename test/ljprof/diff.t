#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# ljprof diff: two runs of one program, one site growing between them,
# another shrinking; memory by site and by stack, text and HTML; two CPU
# profiles; and what it refuses.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

my $mem = <<'LUA';
local grow_n, shrink_n, bin = tonumber(arg[1]), tonumber(arg[2]), arg[3]
local keep = {}
local function grows(n) for i = 1, n do keep[#keep + 1] = { i, i } end end  -- GROWS
local function shrinks(n) for i = 1, n do keep[#keep + 1] = { i } end end  -- SHRINKS
local function steady() for i = 1, 1000 do local t = { i, i, i } end end  -- STEADY
-- Interpreted: a trace would sink some of its tables, how many hangs on
-- the hot counters the other loops share with it, which differ by run.
jit.off(steady)
assert(misc.memprof.start({ path = bin, stacks = true }))
grows(grow_n)
shrinks(shrink_n)
steady()
assert(misc.memprof.stop())
LUA
my %l = map { $_ => line_of($mem, "-- $_") } qw(GROWS SHRINKS STEADY);
my ($base, $new) = map { scratch() . "/$_.bin" } qw(base new);

# Both runs of one script: the names must match.
sub run_twice {
  my ($code, $name, @runs) = @_;
  my $script = scratch() . "/$name.lua";
  open my $fh, '>', $script or die "$script: $!";
  print $fh $code;
  close $fh;
  is(system('luajit', $script, @$_), 0, "$name @$_: ran") for @runs;
}
run_twice($mem, 'mem', [100, 3000, $base], [5000, 100, $new]);

my $out = `ljprof diff '$base' '$new' 2>&1`;
is($? >> 8, 0, 'memory diff: exit 0') or diag $out;
my ($grew) = $out =~ /^GREW\n(.*?)\n\n/ms;
my ($shrank) = $out =~ /^SHRANK\n(.*?)\n\n/ms;
like((split /\n/, $grew // '')[0] // '', qr/^\+\d+ \(\d+ bytes -> \d+ bytes\)  \@\S+:$l{GROWS}$/,
     'memory diff: the site that grew comes first under GREW') or diag $out;
like((split /\n/, $shrank // '')[0] // '', qr/^-\d+ \(\d+ bytes -> \d+ bytes\)  \@\S+:$l{SHRINKS}$/,
     'memory diff: the site that shrank under SHRANK') or diag $out;
unlike($out, qr/:$l{STEADY}$/m, 'memory diff: the steady site is in neither');
my ($d, $b, $n) = $grew =~ /^\+(\d+) \((\d+) bytes -> (\d+) bytes\)/;
is($d, $n - $b, 'memory diff: the growth is new minus base');

$out = `ljprof diff --by=stack --leak-only '$base' '$new' 2>&1`;
like($out, qr/^DIFF: .* \(memory, in use at the end, by stack\)$/m, 'by stack, in use: says so');
like($out, qr/^GREW\n\+\d+ \(.*\)  pmain;\@\S+:\d+;\@\S+:$l{GROWS}$/m,
     'by stack: the growing stack, outermost first') or diag $out;

my $html = scratch() . '/growth.html';
$out = `ljprof diff --format=html -o '$html' '$base' '$new' 2>&1`;
is($? >> 8, 0, 'html: exit 0') or diag $out;
my $page = do { local $/; open my $fh, '<', $html or die; <$fh> };
like($page, qr/"what":"growth from the base profile, by stack"/, 'html: a flame graph of growth');
like($page, qr/:$l{GROWS}"/, 'html: the growing site is in it');

# CPU: a function given more work in the second run.
my $cpu = <<'LUA';
local f_n, g_n, bin = tonumber(arg[1]), tonumber(arg[2]), arg[3]
local function f(n) local s = 0 for i = 1, n do s = s + math.sin(i) end return s end  -- F
local function g(n) local s = 0 for i = 1, n do s = s + math.cos(i) end return s end  -- G
jit.off()
assert(misc.sysprof.start({ mode = "C", interval = 1, path = bin }))
f(f_n) g(g_n)
assert(misc.sysprof.stop())
LUA
my ($cb, $cn) = map { scratch() . "/$_.bin" } qw(cbase cnew);
run_twice($cpu, 'cpu', [1000000, 6000000, $cb], [6000000, 1000000, $cn]);
$out = `ljprof diff '$cb' '$cn' 2>&1`;
is($? >> 8, 0, 'cpu diff: exit 0') or diag $out;
like($out, qr/^DIFF: .* \(CPU, /m, 'cpu diff: says CPU');
my $fl = line_of($cpu, '-- F');
my $gl = line_of($cpu, '-- G');
my ($cgrew) = $out =~ /^GREW\n(.*?)\n\n/ms;
my ($cshrank) = $out =~ /^SHRANK\n(.*?)\n\n/ms;
like($cgrew // '', qr/:$fl$/m, 'cpu diff: f grew') or diag $out;
like($cshrank // '', qr/:$gl$/m, 'cpu diff: g shrank') or diag $out;

$out = `ljprof diff '$base' '$cn' 2>&1`;
is($? >> 8, 1, 'a memory and a CPU profile: refused');
like($out, qr/are not two memprof or two sysprof profiles/, 'and says why');
$out = `ljprof diff '$base' 2>&1`;
is($? >> 8, 2, 'one file: usage error');
like(`ljprof --help`, qr/^  diff\s+compare two memory or two CPU profiles/m, 'ljprof --help lists diff');

done_testing;
