#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# ljprof record: a script run on the built luajit under a profiler, from its
# first line to its exit, then reported. The script's exit status is kept.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use Cwd qw(getcwd);
use LJProf::Run;

my $build = $ENV{LJPROF_BUILD_DIR} or plan skip_all => 'LJPROF_BUILD_DIR is not set';
my $luajit = "$build/bin/luajit";
plan skip_all => "no luajit at $luajit" unless -x $luajit;
my $dir = scratch_dir();

sub script {
  my ($name, $code) = @_;
  my $path = "$dir/$name";
  open my $fh, '>', $path or die "$path: $!";
  print $fh $code;
  close $fh;
  return $path;
}

sub json_of { my ($r) = @_; return eval { JSON::PP->new->decode($r->{out}) } }

# 1000 tables on line 3, nothing else there; the JIT off so the line is
# the interpreter's.
my $alloc = script('alloc.lua', <<'LUA');
jit.off()
local keep = require("table.new")(1000, 0)
for i = 1, 1000 do keep[i] = {} end
io.write("script done\n")
LUA
my $stream = "$dir/alloc.bin";

my $r = ljprof('record', '--mem', '--luajit', $luajit, '-o', $stream, '--format=json', '--', $alloc);
is($r->{rc}, 0, 'record --mem: exit 0') or diag $r->{err};
like($r->{out}, qr/\Ascript done\n\{/, "the script's output, then the report");
(my $json = $r->{out}) =~ s/\Ascript done\n//;
my $doc = eval { JSON::PP->new->decode($json) };
my %loc = map { $_->{location} => $_ } @{ $doc ? $doc->{locations} : [] };
is($loc{"\@$alloc:3"} && $loc{"\@$alloc:3"}{alloc_events}, 1000, 'the report names line 3 with its 1000 tables');
ok(-s $stream, '-o: the stream is where asked');
is(ljprof('report', $stream)->{rc}, 0, 'the stream file reads back complete');

# Text report, the default stream file in the current directory, the
# luajit beside ljprof (the test's PATH finds ljprof in $build/bin).
my $cwd = getcwd();
chdir $dir or die;
unlink 'memprof.bin';
$r = ljprof('record', '--mem', '--top=1', '--', $alloc);
chdir $cwd or die;
is($r->{rc}, 0, 'defaults: exit 0') or diag $r->{err};
ok(-s "$dir/memprof.bin", 'defaults: memprof.bin in the current directory');
like($r->{out}, qr/^MEMPROF REPORT: memprof\.bin$/m, 'defaults: a text report');
like($r->{out}, qr/^ALLOCATIONS\n\@\Q$alloc\E:3: 1000 events /m, 'defaults: line 3 first, with 1000 events');

# The script's exit status is ljprof's; the stream is still complete.
my $exit3 = script('exit3.lua', <<'LUA');
jit.off()
local keep = require("table.new")(1000, 0)
for i = 1, 50 do keep[i] = {} end
os.exit(3)
LUA
$r = ljprof('record', '--mem', '-o', "$dir/exit3.bin", '--format=json', '--', $exit3);
is($r->{rc}, 3, 'os.exit(3): exit 3');
$doc = json_of($r);
%loc = map { $_->{location} => $_ } @{ $doc ? $doc->{locations} : [] };
is($loc{"\@$exit3:3"} && $loc{"\@$exit3:3"}{alloc_events}, 50, 'os.exit(3): the report is complete');
ok($doc && !$doc->{error}, 'os.exit(3): the stream is not damaged');

my $fails = script('fails.lua', <<'LUA');
jit.off()
local keep = require("table.new")(1000, 0)
for i = 1, 20 do keep[i] = {} end
error("boom")
LUA
$r = ljprof('record', '--mem', '-o', "$dir/fails.bin", '--format=json', '--', $fails);
is($r->{rc}, 1, 'a script that errors: exit 1 (luajit\'s)');
like($r->{err}, qr/boom/, "a script that errors: luajit's message");
$doc = json_of($r);
%loc = map { $_->{location} => $_ } @{ $doc ? $doc->{locations} : [] };
is($loc{"\@$fails:3"} && $loc{"\@$fails:3"}{alloc_events}, 20, 'a script that errors: the report is complete');
ok($doc && !$doc->{error}, 'a script that errors: the stream is not damaged');

# Arguments reach the script; its options are not ljprof's.
my $args = script('args.lua', "io.write(table.concat({...}, ','), '\\n')\n");
$r = ljprof('record', '--mem', '-o', "$dir/args.bin", '--report-out', "$dir/args.txt", '--', $args, '--top', 'x y');
is($r->{rc}, 0, 'arguments: exit 0');
is($r->{out}, "--top,x y\n", 'arguments: passed as given; --report-out takes the report off stdout');
like(do { local (@ARGV, $/) = "$dir/args.txt"; <> }, qr/^MEMPROF REPORT: /, '--report-out: the report is there');

# Errors.
$r = ljprof('record', '--mem', '--luajit', "$dir/no-luajit", '-o', "$dir/x.bin", '--', $alloc);
is($r->{rc}, 2, 'a bad --luajit: exit 2');
like($r->{err}, qr/\Aljprof record: cannot run luajit '\Q$dir\E\/no-luajit': No such file or directory\n\z/, 'a bad --luajit: one clear line');
$r = ljprof('record', '--mem', '--', "$dir/missing.lua");
is($r->{rc}, 2, 'a missing script: exit 2');
like($r->{err}, qr/\Aljprof record: cannot read script '\S+missing\.lua': No such file or directory\n\z/, 'a missing script: one clear line');

sub usage_error {
  my ($args, $pattern, $what) = @_;
  my $r = ljprof('record', @$args);
  is($r->{rc}, 2, "$what: exit 2");
  like($r->{err}, qr/\Aljprof record: [^\n]*$pattern[^\n]*\n\z/, "$what: one line on stderr");
}
usage_error(['--', $alloc], qr/say which profiler: --mem or --cpu/, 'no profiler');
usage_error(['--mem', '--cpu', '--', $alloc], qr/one profiler at a time/, 'both profilers');
usage_error(['--cpu=X', '--', $alloc], qr/unknown --cpu mode 'X' \(C, L or D\)/, 'bad mode');
usage_error(['--cpu', '--interval=0', '--', $alloc], qr/--interval wants a positive number of milliseconds, not '0'/, 'interval 0');
usage_error(['--cpu', '--interval=fast', '--', $alloc], qr/--interval wants a positive number/, 'interval not a number');
usage_error(['--cpu', '--interval=1000001', '--', $alloc], qr/--interval takes 0\.001 to 1000000 milliseconds, not '1000001'/, 'interval above what sysprof takes');
usage_error(['--cpu', '--interval=0.0009', '--', $alloc], qr/--interval takes 0\.001 to 1000000 milliseconds, not '0\.0009'/, 'interval below what sysprof takes');
usage_error(['--mem', '--interval=1', '--', $alloc], qr/--interval, --clock and --no-jit-events are for --cpu/, 'interval without --cpu');
usage_error(['--mem', '--no-jit-events', '--', $alloc], qr/--interval, --clock and --no-jit-events are for --cpu/, 'no-jit-events without --cpu');
usage_error(['--mem', '--clock=wall', '--', $alloc], qr/--interval, --clock and --no-jit-events are for --cpu/, 'clock without --cpu');
usage_error(['--cpu', '--clock=sun', '--', $alloc], qr/--clock takes cpu or wall, not 'sun'/, 'a bad clock');
usage_error(['--mem', '--stack-budget=1048575', '--', $alloc], qr/--stack-budget wants a whole number of bytes from 1048576 \(2\^20\) to 1099511627776 \(2\^40\), not '1048575'/, 'stack budget below 2^20');
usage_error(['--cpu', '--stack-budget=1048576', '--', $alloc], qr/--stack-budget is for --mem/, 'stack budget without --mem');
usage_error(['--mem'], qr/no SCRIPT given/, 'no script');
usage_error(['--mem', '--bogus', '--', $alloc], qr/unknown option '--bogus'/, 'unknown option');
usage_error(['--mem', '--format=xml', '--', $alloc], qr/unknown format 'xml'/, 'a bad report option');

$r = ljprof('record', '--help');
is($r->{rc}, 0, 'record --help: exit 0');
like($r->{out}, qr/^Usage: ljprof record --mem \[OPTIONS\] -- SCRIPT \[ARGS\.\.\.\]$/m, 'record --help: usage');
like($r->{out}, qr/^Examples:\n  ljprof record --mem -- app\.lua$/m, 'record --help: examples');

# The CPU profiler, when this build has it.
SKIP: {
  my $has = `'$luajit' -e 'io.write(misc.sysprof and "yes" or "no")' 2>/dev/null`;
  skip 'misc.sysprof is not in this build yet', 10 unless $has eq 'yes';
  my $busy = script('busy.lua', <<'LUA');
local function spin(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end
local tap = require("tap")
local more = tap.waiting("samples", 300, tap.samples, 120)
while more() do spin(1e5) end
LUA
  $r = ljprof('record', '--cpu=C', '--interval=1', '-o', "$dir/cpu.bin", '--format=json', '--', $busy);
  is($r->{rc}, 0, 'record --cpu: exit 0') or diag $r->{err};
  $doc = json_of($r);
  ok($doc && !$doc->{error}, 'record --cpu: a complete stream');
  is($doc && $doc->{mode}, 'C', 'record --cpu=C: mode C');
  is($doc && $doc->{interval_ms}, 1, 'record --cpu: interval 1 ms');
  cmp_ok($doc ? $doc->{samples} : 0, '>=', 300, 'record --cpu: samples taken, 300 waited for');
  ok($doc && grep({ $_->{name} eq "\@$busy:1" && $_->{total} > 0 } @{ $doc->{functions} }),
     'record --cpu: spin is a function with samples');

  $r = ljprof('record', '--cpu=L', '--interval=0.5', '-o', "$dir/cpu-l.bin", '--format=json', '--', $busy);
  $doc = json_of($r);
  is_deeply([$doc && $doc->{mode}, $doc && $doc->{interval_ms}], ['L', 0.5], 'record --cpu=L --interval=0.5: mode and a fractional interval');

  $r = ljprof('record', '--cpu', '--clock=wall', '--interval=1', '-o', "$dir/cpu-wall.bin", '--format=json', '--', $busy);
  $doc = json_of($r);
  is_deeply([$doc && $doc->{clock}, $doc && $doc->{samples} >= 300], ['monotonic', 1],
            'record --cpu --clock=wall: a wall-clock stream, with its samples');

  my $exits = script('busy-exit.lua', "local t = os.clock()\nwhile os.clock() - t < 0.1 do end\nos.exit(4)\n");
  $r = ljprof('record', '--cpu', '-o', "$dir/cpu-exit.bin", '--format=json', '--', $exits);
  is($r->{rc}, 4, 'record --cpu, os.exit(4): exit 4');
  $doc = json_of($r);
  ok($doc && !$doc->{error}, 'record --cpu, os.exit(4): a complete stream');
}

done_testing();
