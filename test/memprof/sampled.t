#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Sampled profiles (sample = BYTES): the two-caller program of stacks.t on
# a larger scale, recorded every event and sampled; the sampled estimates
# of each caller's allocated and in-use bytes within 10% of the exact
# figures, and the reports say they are estimates. Then blocks sampled
# before stop() and freed after it, reallocations of a sampled block, and
# the values sample refuses.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

my $program = two_callers(head => 'local new = require("table.new")',
                          make => "  local t = new(120, 0)  -- SITE\n  t[1] = i\n  return t",
                          n => 20000, options => 'OPTIONS');
my %l = map { $_ => line_of($program, "-- $_") } qw(SITE KEEP CHURN CALLK CALLC);

my %fig;
for my $mode ('exact', 'sampled') {
  my $bin = scratch() . "/$mode.bin";
  my $opt = $mode eq 'exact' ? "{ path = \"$bin\", stacks = true }"
                             : "{ path = \"$bin\", sample = 16384 }";
  (my $code = $program) =~ s/OPTIONS/$opt/;
  my $run = run_lua($code);
  is($run->{rc}, 0, "$mode: ran") or diag $run->{err};
  my $keep = "pmain;\@F:$l{CALLK};\@F:$l{KEEP};\@F:$l{SITE}";
  my $churn = "pmain;\@F:$l{CALLC};\@F:$l{CHURN};\@F:$l{SITE}";
  my $alloc = memprof_stacks($bin, $run->{script});
  my $inuse = memprof_stacks($bin, $run->{script}, '--leak-only');
  $fig{$mode} = { keep => $alloc->{$keep} // 0, churn => $alloc->{$churn} // 0,
                  inuse => $inuse->{$keep} // 0, inuse_churn => $inuse->{$churn} // 0,
                  bin => $bin };
  my ($top) = sort { $inuse->{$b} <=> $inuse->{$a} } keys %$inuse;
  is($top, $keep, "$mode: the in-use view's first stack is the keeping caller's");
  # The keeper's array, grown by reallocations to 32768 slots: in use at
  # its size, sampled too (it once stood for a thousand arrays, at the
  # weight of the small block first sampled).
  my $array = "pmain;\@F:$l{CALLK};\@F:$l{KEEP}";
  cmp_ok($inuse->{$array} // 0, '<', 2 * 8 * 32768, "$mode: the keeper's grown array in use at about its size");
}

my ($e, $s) = @fig{qw(exact sampled)};
is($e->{churn}, 3 * $e->{keep}, "exact: churner 3x keeper ($e->{churn} and $e->{keep})");
for my $k (qw(keep churn inuse)) {
  my $ratio = $e->{$k} ? $s->{$k} / $e->{$k} : 0;
  cmp_ok(abs($ratio - 1), '<', 0.1,
         sprintf('sampled: %s estimated within 10%% of the exact %d bytes (%d, %.3f)', $k, $e->{$k}, $s->{$k}, $ratio));
}
cmp_ok($s->{inuse_churn}, '<', $s->{inuse} / 20, 'sampled: in use, the churner holds next to nothing');

my $text = `ljprof report '$s->{bin}'`;
like($text, qr/^SAMPLED: an allocation recorded every 16384 bytes allocated on average \(\d+ samples\); every figure is an estimate$/m,
     'text report: says its figures are estimates') or diag $text;
my $r = memprof_report($s->{bin});
is($r->{json}{estimates}, JSON::PP::true, 'json report: estimates');
is($r->{json}{sampled_every}, 16384, 'json report: the interval');
cmp_ok($r->{json}{stacks}{samples}, '>', 1000, 'json report: the samples taken');

# sample = 1: every allocation sampled, each weighing its size. A table
# that grows reallocates a sampled block each time: the old block's free,
# and the new block sampled as the count says (here: always), at its own
# weight; blocks sampled before stop() are freed after it, unrecorded.
{
  my $bin = scratch() . '/realloc.bin';
  my $run = run_lua(<<"LUA");
jit.off()
collectgarbage("stop")
assert(misc.memprof.start({ path = "$bin", sample = 1 }))
local t = {}
for i = 1, 1000 do t[i] = i end  -- GROW
local gone = {}
for i = 1, 100 do gone[i] = { i } end
assert(misc.memprof.stop())
gone = nil
collectgarbage()
collectgarbage()
print(#t)
LUA
  is($run->{rc}, 0, 'realloc: ran, freeing sampled blocks after stop') or diag $run->{err};
  my $r = memprof_report($bin);
  is($r->{rc}, 0, 'realloc: the stream is complete') or diag $r->{err};
  my $grow = location($r, '@' . $run->{script} . ':5');
  cmp_ok($grow->{alloc_events}, '>=', 5, "realloc: the growing array's new blocks, sampled ($grow->{alloc_events})");
  is($grow->{realloc_events}, 0, 'realloc: a sampled block moved is freed, not carried at its old weight');
  cmp_ok($grow->{live_bytes}, '>=', 8 * 1000, 'realloc: the grown array is in use at the end, at its size');
  cmp_ok($grow->{live_bytes}, '<', 8 * 2100, 'realloc: and only it (no old block left behind)');
  my $kept = location($r, '@' . $run->{script} . ':7');
  cmp_ok($kept->{live_blocks}, '>=', 100, 'freed after stop: the 100 tables still in use in the stream');
}

# What sample refuses.
{
  my $run = run_lua(<<'LUA');
for _, v in ipairs({ 0, -1, 1.5, "512", 2^41, 0/0, 1/0 }) do
  print(tostring(v), select(2, misc.memprof.start({ path = "/dev/null", sample = v })))
end
print("ok", misc.memprof.start({ path = "/dev/null", sample = 524288 }))
print("ok", misc.memprof.stop())
LUA
  is($run->{rc}, 0, 'bad samples: ran') or diag $run->{err};
  my @lines = split /\n/, $run->{out};
  like($lines[0], qr/^0\tprofiler misuse: sample must be a whole number of bytes, 1 or more\t22$/, 'sample = 0 refused');
  like($lines[1], qr/^-1\tprofiler misuse: sample must be a whole number/, 'negative refused');
  like($lines[2], qr/^1.5\tprofiler misuse: sample must be a whole number/, 'fractional refused');
  like($lines[3], qr/^512\tprofiler misuse: sample must be a number of bytes\t22$/, 'a string refused');
  like($lines[4], qr/\tprofiler misuse: sample must be at most 2\^40 bytes\t22$/, 'absurd refused');
  like($lines[5], qr/\tprofiler misuse: sample must be a whole number/, 'nan refused');
  like($lines[6], qr/\tprofiler misuse: sample must be/, 'inf refused');
  is($lines[7], "ok\ttrue", '512 KiB accepted');
  is($lines[8], "ok\ttrue", 'and stops');
}

done_testing;
