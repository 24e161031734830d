#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Sysprof v2 streams (the reference's): a Lua stack then a host stack for
# LFUNC, FFUNC and CFUNC samples, a host stack alone for the VM's internal
# states, the trace alone for TRACE. Host frames go outermost, the Lua
# frames after them (v2 cannot say where they nest).
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();
my $syms = symtab(sym_lfunc(0x100, '@a.lua', 1), sym_lfunc(0x200, '@b.lua', 10),
                  sym_cfunc(0x401000, 'main'), sym_cfunc(0x402000, 'lua_pcall'),
                  sym_cfunc(0x7f0000003000, 'cmod_call'), sym_cfunc(0x7f0000005000, 'gc_step'));
my $bin = $syms . sysprof(2,
  (v2_sample(LFUNC, [f_lua(0x200, 10), f_lua(0x100, 1)], [0x402010, 0x401050])) x 3,
  v2_sample(FFUNC, [f_ffunc(4), f_lua(0x100, 1)], [0x402010, 0x401050]),
  v2_sample(CFUNC, [f_cfunc(0x7f0000003000), f_lua(0x100, 1)], [0x7f0000003010, 0x402010, 0x401050]),
  v2_sample(GC, [], [0x7f0000005040, 0x401050]),
  v2_sample(INTERP, [], []),
  sp_upd_lfunc(0x300, '@late.lua', 7),
  sp_upd_cfunc(0x7f0000006000, 'late_c'),
  v2_sample(LFUNC, [f_lua(0x300, 7)], [0x7f0000006001]),
  v2_trace(5, 0x300, 7),
  sp_upd_trace(6, 0x100, 3),
);
my $file = write_file("$dir/v2.bin", $bin);

my $r = ljprof('report', '--format=collapsed', $file);
is($r->{rc}, 0, 'v2: exit 0') or diag $r->{err};
is($r->{out}, <<'OUT', 'v2 collapsed: host frames outermost, then the Lua frames');
main;lua_pcall;@a.lua:1;@b.lua:10 3
main;lua_pcall;@a.lua:1;ffunc #4 1
main;lua_pcall;cmod_call;@a.lua:1;cmod_call 1
main;gc_step 1
[INTERP] 1
late_c;@late.lua:7 1
TRACE [5] @late.lua:7 1
OUT

$r = ljprof('report', $file);
like($r->{out}, qr/^Stream: sysprof v2 \(no mode, interval or clock recorded\)\nSamples: 9 \(no statistics recorded\)\n/m,
     'v2 text: says what the stream does not record');
unlike($r->{out}, qr/^Rate:/m, 'v2 text: no rate');
like($r->{out}, qr/^INTERP: 1 \(11\.1%\)\nLFUNC: 4 \(44\.4%\)\nFFUNC: 1 \(11\.1%\)\nCFUNC: 1 \(11\.1%\)\nGC: 1 \(11\.1%\)\n/m,
     'v2 text: samples by VM state, counted');
like($r->{out}, qr/^LINES BY SELF\n\@b\.lua:10: 3 self \(33\.3%\), 3 total \(33\.3%\)\n/m, 'v2 text: lines');
like($r->{out}, qr/^cmod_call: 1 self \(11\.1%\), 1 total \(11\.1%\)$/m,
     'v2 text: a C function seen twice in a sample counts once in total');

my $j = ljprof_json($file)->{json};
is_deeply([@$j{qw(version mode interval_ms samples dropped rate_achieved)}], [2, undef, undef, 9, undef, undef],
          'v2 json: version, nothing the stream does not say');
is($j->{vmstate}{TRACE}, 1, 'v2 json: the trace sample');

# Records of v3 are not v2's.
$r = ljprof('report', write_file("$dir/v2-stats.bin", $syms . sysprof(2, v2_sample(GC, [], [0x401050]),
                                                                       sp_stats(1, [], 0, 0, 1))));
is($r->{rc}, 1, 'v2 with a v3 record: exit 1');
like($r->{err}, qr/\Aljprof: \S+: corrupt at offset \d+: unknown sysprof record 0x0f\n\z/, 'v2 with a v3 record: named');
is(ljprof('report', '--format=collapsed', "$dir/v2-stats.bin")->{out}, "main 1\n",
   'v2 with a v3 record: the sample before it is reported');
$r = ljprof('report', write_file("$dir/v2-tag.bin", $syms . sysprof(2, v2_sample(LFUNC, [f_native(0x401050)], []))));
like($r->{err}, qr/corrupt at offset \d+: unknown frame tag 0x04/, 'v2: no native frames in a Lua stack');

done_testing();
