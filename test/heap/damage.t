#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# A heap snapshot cut short or corrupt (its memprof mark too): one clear
# line on stderr, exit 1, and the report of what came before; snapshots taken from a finalizer,
# a coroutine, an xpcall handler, a hook, under memprof, all read clean.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Lua;
use LJProf::Run;

my $dir = scratch();
my $run = run_lua(<<"LUA");
t = {}
for i = 1, 50 do t[i] = { i, tostring(i) } end
-- Under a memprof v5 stream: the snapshot carries its mark, early.
assert(misc.memprof.start{path = "$dir/small.mem", format = "v5"})
assert(misc.heapsnapshot("$dir/small.bin"))
assert(misc.memprof.stop())
local function snap(name) return assert(misc.heapsnapshot("$dir/" .. name .. ".bin")) end
do
  local u = newproxy(true)
  getmetatable(u).__gc = function() snap("finalizer") end
end
collectgarbage()
coroutine.wrap(function() snap("coroutine") end)()
xpcall(error, function() snap("xpcall") return 1 end)
debug.sethook(function() debug.sethook(); snap("hook") end, "l")
local x = 1
assert(misc.memprof.start("$dir/mem.bin"))
snap("memprof")
assert(misc.memprof.stop())
print("done")
LUA
is($run->{rc}, 0, 'the script ran') or diag $run->{err};
is($run->{out}, "done\n", 'every snapshot returned true');
for my $where (qw(finalizer coroutine xpcall hook memprof)) {
  my $out = `ljprof heap --format=json '$dir/$where.bin' 2>&1`;
  my $doc = eval { decode_json($out) };
  ok($? >> 8 == 0 && $doc && $doc->{objects} > 100 && grep({ $_->{pattern} eq '_G.t[*]' && $_->{objects} == 50 } @{ $doc->{patterns} }),
     "a snapshot taken in a $where reads clean, with t's 50 entries");
}

my $joined = ljprof('heap', "--memprof=$dir/small.mem", "$dir/small.bin");
is($joined->{rc}, 0, 'the snapshot cut below carries a memprof mark (it joins)') or diag $joined->{err};
my $bin = do { open my $fh, '<:raw', "$dir/small.bin" or die; local $/; <$fh> };
my $cuts = 0;
my @offsets = (0 .. 40, map { int(length($bin) * $_ / 60) } 1 .. 59);
my $bad = 0;
my $prev = -1;
for my $len (@offsets) {
  next if $len >= length $bin;
  my $cut = "$dir/cut.bin";
  open my $fh, '>:raw', $cut or die;
  print $fh substr($bin, 0, $len);
  close $fh;
  my $r = ljprof('heap', '--format=json', $cut);
  my @lines = split /\n/, $r->{err};
  my $doc = eval { decode_json($r->{out}) };
  my $ok = $r->{rc} == 1 && @lines == 1
        && $lines[0] =~ /^ljprof: \S+cut\.bin: (truncated at offset \d+: expected .+; the stream ends at offset $len|corrupt at offset \d+: .+)$/
        && $doc && $doc->{error};
  $bad++, diag("cut at $len: rc=$r->{rc} err=$r->{err}") unless $ok;
  $cuts++;
}
is($bad, 0, "cut at $cuts offsets: one clear line, exit 1, a JSON report with the error");
my $half = "$dir/half.bin";
{ open my $fh, '>:raw', $half or die; print $fh substr($bin, 0, int(length($bin) * 0.9)); }
my $r = ljprof('heap', $half);
like($r->{out}, qr/^WARNING: damaged stream/m, 'the text report of a cut snapshot warns');
like($r->{out}, qr/^HEAP SNAPSHOT .*no pause recorded/m, 'and says the pause is missing');
like($r->{out}, qr/^\s+\S+ \S+\s+\d+  _G\.t\[\*\]$/m, 'and still reports what came: _G.t[*]');

my $corrupt = "$dir/corrupt.bin";
{ open my $fh, '>:raw', $corrupt or die; print $fh substr($bin, 0, 10) . "\x7f" . substr($bin, 11); }
$r = ljprof('heap', $corrupt);
is($r->{rc}, 1, 'a corrupt record: exit 1');
like($r->{err}, qr/^ljprof: \S+: corrupt at offset \d+: /, 'a corrupt record: says where');
$r = ljprof('heap', "$dir/mem.bin");
like($r->{err}, qr/not a heap snapshot/, 'a memprof stream is not a heap snapshot');

done_testing();
