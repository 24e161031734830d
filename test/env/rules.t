#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# One rule per option, whatever the entry point: misc.*.start from Lua and
# LJPROF in the environment take and refuse the same values (each profiler
# checks its own options, src/lj_sysprof.c and src/lj_memprof.c), each
# entry point saying so in its own words. The defaults that differ between
# them differ on purpose: sysprof's mode (D from Lua, the reference's; C
# from LJPROF, read for its stacks) and memprof's stream (v3 for the
# reference's call start(path), v4 for ours).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;

my $dir = scratch();

# [profile, key, value in LJPROF, value in Lua, taken?]
my @cases = (
  [ 'cpu', 'interval', '0',             '0',           0 ],
  [ 'cpu', 'interval', '0.0005',        '0.0005',      0 ],
  [ 'cpu', 'interval', '0.001',         '0.001',       1 ],
  [ 'cpu', 'interval', '1000000',       '1000000',     1 ],
  [ 'cpu', 'interval', '1000001',       '1000001',     0 ],
  [ 'cpu', 'interval', 'inf',           '1/0',         0 ],
  [ 'cpu', 'mode',     'D',             '"D"',         1 ],
  [ 'cpu', 'mode',     'L',             '"L"',         1 ],
  [ 'cpu', 'mode',     'C',             '"C"',         1 ],
  [ 'cpu', 'mode',     'X',             '"X"',         0 ],
  [ 'cpu', 'clock',    'wall',          '"wall"',      1 ],
  [ 'cpu', 'clock',    'sun',           '"sun"',       0 ],
  [ 'mem', 'sample',   '0',             '0',           0 ],
  [ 'mem', 'sample',   '1',             '1',           1 ],
  [ 'mem', 'sample',   '1099511627776', '2^40',        1 ],
  [ 'mem', 'sample',   '1099511627777', '2^40 + 1',    0 ],
  [ 'mem', 'stack_budget', '1048575',   '2^20 - 1',    0 ],
  [ 'mem', 'stack_budget', '1048576',   '2^20',        1 ],
  [ 'mem', 'stack_budget', '1099511627776', '2^40',    1 ],
  [ 'mem', 'stack_budget', '1099511627777', '2^40 + 1', 0 ],
);

# Every case from Lua, in one run: "ok", or the message.
my $lua = "local n = 0\n";
for my $c (@cases) {
  my ($prof, $key, undef, $val) = @$c;
  my $lib = $prof eq 'cpu' ? 'sysprof' : 'memprof';
  $lua .= "n = n + 1\n"
        . "do local ok, msg = misc.$lib.start({ path = '/dev/null', $key = $val })\n"
        . "  if ok then misc.$lib.stop() end\n"
        . "  print(n .. '\\t' .. (ok and 'ok' or msg)) end\n";
}
my $run = run_lua($lua);
is($run->{rc}, 0, 'the Lua cases ran') or diag $run->{err};
my %fromlua = map { split /\t/, $_, 2 } split /\n/, $run->{out};

my $n = 0;
for my $c (@cases) {
  my ($prof, $key, $envval, $luaval, $taken) = @$c;
  my $name = "$prof $key=$envval";
  my $said = $fromlua{++$n} // '';
  if ($taken) {
    is($said, 'ok', "$name: taken from Lua");
  } else {
    like($said, qr/^profiler misuse: \Q$key\E must be/, "$name: refused from Lua, naming $key");
  }
  unlink "$dir/env.bin";
  my $r = run_lua('', env => { LJPROF => "$prof:$key=$envval,path=$dir/env.bin" });
  if ($taken) {
    is($r->{err}, '', "$name: taken from LJPROF") or diag $r->{err};
    ok(-s "$dir/env.bin", "$name: LJPROF's profile written");
  } else {
    like($r->{err}, qr/^LJPROF: bad setting .*: $prof: \Q$key\E must be .*; not profiling$/,
         "$name: refused from LJPROF, naming $key");
    ok(!-e "$dir/env.bin", "$name: no profile from LJPROF");
  }
}

# -- What is implied: stacks by native frames or sampling, v5 by stacks -------

# The version byte of a stream's ljm section.
sub ljm_version {
  my ($file) = @_;
  open my $fh, '<:raw', $file or return -1;
  local $/;
  my $s = <$fh> // '';
  my $at = index $s, 'ljm';
  return $at < 0 ? -1 : ord substr $s, $at + 3, 1;
}

my $alloc = "local t = {} for i = 1, 1000 do t[i] = { i } end\n";
for my $opt ([ 'native', '1', 'true' ], [ 'sample', '64', '64' ], [ 'stacks', '1', 'true' ]) {
  my ($key, $envval, $luaval) = @$opt;
  run_lua("assert(misc.memprof.start({ path = '$dir/lua-$key.bin', $key = $luaval }))\n"
          . $alloc . "assert(misc.memprof.stop())\n");
  run_lua($alloc, env => { LJPROF => "mem:$key=$envval,path=$dir/env-$key.bin" });
  is(ljm_version("$dir/lua-$key.bin"), 6, "$key from Lua: a v6 stream");
  is(ljm_version("$dir/env-$key.bin"), 6, "$key from LJPROF: a v6 stream");
  my ($l, $e) = map { memprof_report("$dir/$_-$key.bin")->{json}{stacks} } 'lua', 'env';
  ok($l && $l->{distinct} >= 1, "$key from Lua: with call stacks");
  ok($e && $e->{distinct} >= 1, "$key from LJPROF: with call stacks");
  is(!!$l->{native}, $key eq 'native', "$key from Lua: native frames only if asked");
  is(!!$e->{native}, $key eq 'native', "$key from LJPROF: native frames only if asked");
}

# -- Defaults that differ on purpose ------------------------------------------

run_lua("assert(misc.sysprof.start({ path = '$dir/lua-cpu.bin' }))\n"
        . "assert(misc.sysprof.stop())\n"
        . "assert(misc.memprof.start('$dir/lua-ref.bin')) assert(misc.memprof.stop())\n"
        . "assert(misc.memprof.start({ path = '$dir/lua-mem.bin' })) assert(misc.memprof.stop())\n");
run_lua('', env => { LJPROF => "cpu:path=$dir/env-cpu.bin;mem:path=$dir/env-mem.bin" });
my ($lcpu) = sysprof_json("$dir/lua-cpu.bin");
my ($ecpu) = sysprof_json("$dir/env-cpu.bin");
is_deeply([ @$lcpu{qw(mode interval_ms)} ], [ 'D', 10 ], 'misc.sysprof.start{}: mode D, 10 ms');
is_deeply([ @$ecpu{qw(mode interval_ms)} ], [ 'C', 10 ], 'LJPROF=cpu: mode C, 10 ms');
is($lcpu->{clock}, $ecpu->{clock}, 'both on the same clock');
is(ljm_version("$dir/lua-ref.bin"), 3, 'misc.memprof.start(path): v3, the reference\'s');
is(ljm_version("$dir/lua-mem.bin"), 4, 'misc.memprof.start{path}: v4');
is(ljm_version("$dir/env-mem.bin"), 4, 'LJPROF=mem: v4');

done_testing();
