#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Sysprof v3 streams (ours): how frames are named, stacks in collapsed
# form, symtab updates rebinding between samples, self and total counts in
# the text and JSON reports, mode D, the sampling rate, and frames a trace
# runs inlined, named and counted as any other.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Stream;
use LJProf::Run;
use LJProf::Profiles qw(inlined_stream);

my $dir = scratch_dir();
my $chunk = "local x = 1\nreturn x";

my $syms = symtab(
  sym_lfunc(0x100, '@a.lua', 1), sym_lfunc(0x200, '@b.lua', 5), sym_lfunc(0x300, $chunk, 0),
  sym_cfunc(0x401000, 'main'), sym_cfunc(0x402000, 'lua_pcall'), sym_cfunc(0x402100, 'lua_call'),
  sym_cfunc(0x7f0000003000, 'cmod_call'), sym_cfunc(0x7f0000004000, 'cmod_helper'),
);
# main -> lua_pcall -> a.lua:3 -> cmod_call -> lua_call -> b.lua:7, innermost first.
my $nested = sp_sample(LFUNC, f_lua(0x200, 7), f_native(0x402110), f_native(0x7f0000003020),
                       f_lua(0x100, 3), f_native(0x402010), f_native(0x401050));
my $bin = $syms . sysprof(3,
  sp_config(MODE_C, 1000, 0), sp_ffname(1, 'assert'), sp_ffname(2, 'string.rep'),
  ($nested) x 5,
  sp_sample(FFUNC, f_ffunc(1), f_lua(0x100, 4), f_native(0x401050)),        # a named fast function
  sp_sample(FFUNC, f_ffunc(9), f_lua(0x100, 4), f_native(0x401050)),        # an unnamed one
  sp_sample(CFUNC, f_cfunc(0x7f0000004000), f_lua(0x100, 5), f_native(0x401050)),  # tag 2
  sp_sample(CFUNC, f_native(0x7f0000004abc), f_native(0x7f0000003001), f_lua(0x100, 6),
            f_native(0x401050)),                                             # nearest below
  sp_sample(INTERP, f_native(0x1234), f_native(0x401050)),                  # below every symbol
  sp_sample(TRACE, f_trace(3, 0x100, 2), f_lua(0x100, 9), f_native(0x401050)),
  sp_sample(TRACE, f_trace(4, 0x999, 8), f_native(0x401050)),               # unknown start proto
  sp_sample(LFUNC, f_lua(0x300, 2), f_lua(0x888, 3), f_native(0x401050)),   # multi-line chunk, unknown proto
  sp_sample(GC),                                                             # no frames
  sp_stats(14, [1, 6, 2, 2, 1, 0, 0, 0, 0, 2], 0, 0, 14_000_000),
);
my $file = write_file("$dir/v3.bin", $bin);

my $r = ljprof('report', '--format=collapsed', $file);
is($r->{rc}, 0, 'collapsed: exit 0') or diag $r->{err};
is($r->{out}, <<'OUT', 'collapsed: one line per stack, outermost first, most samples first');
main;lua_pcall;@a.lua:3;cmod_call;lua_call;@b.lua:7 5
main;@a.lua:4;assert 1
main;@a.lua:4;ffunc #9 1
main;@a.lua:5;cmod_helper 1
main;@a.lua:6;cmod_call;cmod_helper 1
main;0x1234 1
main;@a.lua:9;TRACE [3] @a.lua:2 1
main;TRACE [4] @<unknown proto 0x999>:8 1
main;@<unknown proto 0x888>:3;local x = 1\nreturn x:2 1
[GC] 1
OUT

# Text: header, VM states, functions and lines by self and total.
$r = ljprof('report', $file);
is($r->{rc}, 0, 'text: exit 0');
my $t = $r->{out};
like($t, qr/^SYSPROF REPORT: \Q$file\E\nStream: sysprof v3, mode C \(call graph\), interval 1 ms asked, clock: thread CPU time \(timer\)\n/,
     'text: the stream and what was asked');
like($t, qr/^Samples: 14 in 0\.014 s \(0 dropped, 0 timer overruns\), 14 with stacks$/m, 'text: samples');
like($t, qr/^Rate: 1000\.0 samples\/s achieved, 1000\.0 asked$/m, 'text: the rate asked was achieved');
like($t, qr/^SAMPLES BY VM STATE\nINTERP: 1 \(7\.1%\)\nLFUNC: 6 \(42\.9%\)\nFFUNC: 2 \(14\.3%\)\nCFUNC: 2 \(14\.3%\)\nGC: 1 \(7\.1%\)\n/m,
     'text: samples by VM state');
sub section {
  my ($text, $title) = @_;
  return $text =~ /^\Q$title\E\n(.*?)\n\n/ms ? $1 : '';
}
my $fself = section($t, 'FUNCTIONS BY SELF');
like($fself, qr/\A\@b\.lua:5: 5 self \(35\.7%\), 5 total \(35\.7%\)\n/, 'functions: a Lua function by its proto and first line, most self first');
like($fself, qr/^cmod_helper: 2 self \(14\.3%\), 2 total \(14\.3%\)$/m, 'functions: tag 2 and the nearest symbol below');
like($fself, qr/^\@a\.lua:1: 0 self \(0\.0%\), 10 total \(71\.4%\)$/m, 'functions: total counts every sample under a function');
like($fself, qr/^main: 0 self \(0\.0%\), 13 total \(92\.9%\)$/m, 'functions: main');
like($fself, qr/^cmod_call: 0 self \(0\.0%\), 6 total \(42\.9%\)$/m, 'functions: native frames by symbol');
like($fself, qr/^CHUNK 1 \(main chunk\): 1 self/m, 'functions: a multi-line chunk is aliased');
like($fself, qr/^\@<unknown proto 0x888>: 0 self \(0\.0%\), 1 total/m, 'functions: an unknown proto');
like(section($t, 'FUNCTIONS BY TOTAL'), qr/\Amain: 0 self \(0\.0%\), 13 total \(92\.9%\)\n\@a\.lua:1: 0 self \(0\.0%\), 10 total/,
     'functions by total: most total first');
my $lself = section($t, 'LINES BY SELF');
like($lself, qr/\A\@b\.lua:7: 5 self \(35\.7%\), 5 total \(35\.7%\)\n/, 'lines: the innermost Lua line');
like($lself, qr/^\@a\.lua:6: 1 self \(7\.1%\), 1 total/m, 'lines: a Lua line is charged for the C code it calls');
like($lself, qr/^\@a\.lua:3: 0 self \(0\.0%\), 5 total \(35\.7%\)$/m, 'lines: a calling line has total only');
like($lself, qr/^\@a\.lua:9: 1 self/m, 'lines: a line a trace runs has the self');
unlike($lself, qr/^TRACE/m, 'lines: traces are the code running lines, not lines');
like($lself, qr/^CHUNK 1:2: 1 self/m, 'lines: a multi-line chunk is aliased');
unlike($lself, qr/^main:/m, 'lines: no native frames');
like($t, qr/^ALIASES\nCHUNK 1: local x = 1\nreturn x$/m, 'text: ALIASES');

$r = ljprof('report', '--top', '2', $file);
like(section($r->{out}, 'LINES BY TOTAL'), qr/\A[^\n]+\n[^\n]+\n... 9 more\z/, '--top 2: two lines and how many more');

# JSON.
my $j = ljprof_json($file)->{json};
is($j->{kind}, 'sysprof', 'json: kind');
is_deeply([@$j{qw(version mode interval_ms clock samples dropped overruns elapsed_ns)}],
          [3, 'C', 1, 'thread-cpu', 14, 0, 0, 14_000_000], 'json: the stream and its stats');
is_deeply($j->{vmstate}, { INTERP => 1, LFUNC => 6, FFUNC => 2, CFUNC => 2, GC => 1, EXIT => 0,
                           RECORD => 0, OPT => 0, ASM => 0, TRACE => 2 }, 'json: vmstate');
is_deeply($j->{stacks}[0], { frames => ['main', 'lua_pcall', '@a.lua:3', 'cmod_call', 'lua_call', '@b.lua:7'],
                             count => 5 }, 'json: the first stack, outermost first');
is(scalar @{ $j->{stacks} }, 10, 'json: every stack');
is_deeply($j->{stacks}[8]{frames}, ['main', '@<unknown proto 0x888>:3', "$chunk:2"], 'json: names in full');
is_deeply($j->{functions}[0], { name => '@b.lua:5', self => 5, total => 5 }, 'json: functions by self');
my %lines = map { $_->{name} => $_ } @{ $j->{lines} };
is_deeply($lines{'@a.lua:3'}, { name => '@a.lua:3', self => 0, total => 5 }, 'json: lines');
ok(!exists $j->{error}, 'json: no error');
$j = ljprof_json('--top', '1', $file)->{json};
is(scalar @{ $j->{functions} } . '/' . scalar @{ $j->{lines} }, '1/1', 'json --top 1: one function, one line');

# Symtab updates rebind between samples; a recursing line counts once in total.
$bin = $syms . sysprof(3, sp_config(MODE_C, 10000, 1),
  sp_sample(LFUNC, f_lua(0x200, 6), f_native(0x402010)),
  sp_upd_cfunc(0x402008, 'my_entry'),           # a symbol nearer below 0x402010
  sp_upd_lfunc(0x200, '@c.lua', 20),            # the proto address now names another function
  sp_sample(LFUNC, f_lua(0x200, 6), f_native(0x402010)),
  sp_upd_cfunc(0x402008, 'my_entry2'),          # the same address renamed
  sp_sample(LFUNC, f_lua(0x200, 6), f_lua(0x200, 6), f_lua(0x200, 6), f_native(0x402010)),
  sp_stats(3, [0, 3], 0, 2, 60_000_000),
);
$file = write_file("$dir/rebind.bin", $bin);
$r = ljprof('report', '--format=collapsed', $file);
is($r->{out}, "lua_pcall;\@b.lua:6 1\nmy_entry;\@c.lua:6 1\nmy_entry2;\@c.lua:6;\@c.lua:6;\@c.lua:6 1\n",
   'updates: each sample named by the bindings in force');
$j = ljprof_json($file)->{json};
my %f = map { $_->{name} => [$_->{self}, $_->{total}] } @{ $j->{functions} };
is_deeply(\%f, { '@b.lua:5' => [1, 1], '@c.lua:20' => [2, 2], lua_pcall => [0, 1], my_entry => [0, 1],
                 my_entry2 => [0, 1] }, 'updates: functions by first line as bound; recursion counted once in total');
%lines = map { $_->{name} => [$_->{self}, $_->{total}] } @{ $j->{lines} };
is_deeply($lines{'@c.lua:6'}, [2, 2], 'a recursing line: self and total once per sample');
is_deeply([@$j{qw(mode interval_ms clock overruns)}], ['C', 10, 'monotonic', 2], 'json: mode, interval, clock, overruns');
$t = ljprof('report', $file)->{out};
like($t, qr/^Stream: sysprof v3, mode C \(call graph\), interval 10 ms asked, clock: monotonic$/m, 'text: monotonic clock');
like($t, qr/^Rate: 50\.0 samples\/s achieved, 100\.0 asked: LOWER than asked \(50% of it; /m,
     'text: says when the rate achieved is lower than asked');

# Mode D: no samples, the stats record carries the counts.
$file = write_file("$dir/mode-d.bin", $syms . sysprof(3, sp_config(MODE_D, 2000, 0),
  sp_ffname(1, 'assert'), sp_stats(100, [10, 50, 0, 20, 15, 0, 0, 0, 0, 5], 1, 0, 200_000_000)));
$r = ljprof('report', $file);
is($r->{rc}, 0, 'mode D: exit 0');
like($r->{out}, qr/^Stream: sysprof v3, mode D \(VM states only\), interval 2 ms asked/m, 'mode D: the mode');
like($r->{out}, qr/^Samples: 100 in 0\.200 s \(1 dropped, 0 timer overruns\), 0 with stacks$/m, 'mode D: samples from the stats');
like($r->{out}, qr/^Rate: 500\.0 samples\/s achieved, 500\.0 asked$/m, 'mode D: rate');
like($r->{out}, qr/^INTERP: 10 \(10\.0%\)\nLFUNC: 50 \(50\.0%\)\nFFUNC: 0 \(0\.0%\)\nCFUNC: 20 \(20\.0%\)\nGC: 15 \(15\.0%\)\n(?:.*\n){4}TRACE: 5 \(5\.0%\)$/m,
     'mode D: VM states from the stats');
like($r->{out}, qr/^FUNCTIONS BY SELF\n\(none\)$/m, 'mode D: no functions');
$j = ljprof_json($file)->{json};
is_deeply([$j->{mode}, $j->{samples}, $j->{vmstate}{LFUNC}, scalar @{ $j->{stacks} }], ['D', 100, 50, 0], 'mode D: json');
is(ljprof('report', '--format=collapsed', $file)->{out}, '', 'mode D: no stacks to collapse');

# Mode L: the innermost Lua frame and the innermost native frame.
$file = write_file("$dir/mode-l.bin", $syms . sysprof(3, sp_config(MODE_L, 1000, 0),
  sp_sample(LFUNC, f_lua(0x100, 3), f_native(0x402010)), sp_sample(LFUNC, f_lua(0x100, 3), f_native(0x402010)),
  sp_stats(2, [0, 2], 0, 0, 2_000_000)));
is(ljprof('report', '--format=collapsed', $file)->{out}, "lua_pcall;\@a.lua:3 2\n", 'mode L: leaf stacks');
like(ljprof('report', $file)->{out}, qr/^Stream: sysprof v3, mode L \(leaf\),/m, 'mode L: the mode');

# Without stats (a stream cut short), samples are counted from the records.
$j = ljprof_json(write_file("$dir/nostats.bin", $syms . sysprof(3, sp_config(MODE_C, 1000, 0),
  ($nested) x 3, sp_sample(GC))))->{json};
is_deeply([$j->{samples}, $j->{vmstate}{LFUNC}, $j->{vmstate}{GC}, $j->{rate_achieved}], [4, 3, 1, undef],
          'no stats record: counts from the samples, no rate');

# A Lua frame whose line the VM could not tell (0xffffffff): named by the
# function's first line and "(line ?)" in every form, and counted.
$file = write_file("$dir/noline.bin", $syms . sysprof(3, sp_config(MODE_C, 1000, 0),
  sp_sample(LFUNC, f_lua(0x200, 0xffffffff), f_lua(0x100, 3), f_native(0x401050)),
  sp_sample(LFUNC, f_lua(0x999, 0xffffffff), f_native(0x401050)),
  sp_sample(LFUNC, f_lua(0x300, 0xffffffff), f_native(0x401050)),
  ($nested) x 2, sp_stats(5, [0, 5], 0, 0, 5_000_000)));
is(ljprof('report', '--format=collapsed', $file)->{out},
   "main;lua_pcall;\@a.lua:3;cmod_call;lua_call;\@b.lua:7 2\n"
   . "main;\@a.lua:3;\@b.lua:5 (line ?) 1\nmain;\@<unknown proto 0x999> (line ?) 1\n"
   . "main;local x = 1\\nreturn x (line ?) 1\n",
   'line unknown: @chunk:FIRSTLINE (line ?) (a main chunk by its name), never a line of its own');
$r = ljprof('report', $file);
like($r->{out}, qr/^Line unknown: 3 samples \(60\.0%\) have a Lua frame whose line/m,
     'line unknown: the text report says how many samples');
unlike($r->{out}, qr/:4294967295|:0 \(line/, 'line unknown: the raw value and line 0 are never printed');
is(ljprof_json($file)->{json}{samples_line_unknown}, 3, 'line unknown: JSON counts them');

# Frames a trace runs inlined (tag 6): only pprof shows them as such
# (test/formats/pprof.t); the other reports name and count them as before.
$file = inlined_stream("$dir/inlined.bin");
$r = ljprof('report', '--format=collapsed', $file);
is($r->{out}, <<'OUT', 'inlined: collapsed names every frame as before') or diag $r->{err};
main;@m.lua:11;@m.lua:5;TRACE [1] @m.lua:10 4
main;@m.lua:11;@m.lua:6;@m.lua:21;TRACE [1] @m.lua:10;memset 3
main;@m.lua:13;@m.lua:7;TRACE [1] @m.lua:10 2
main;@m.lua:11;memset;@m.lua:5;TRACE [1] @m.lua:10 1
main;@m.lua:12;TRACE [1] @m.lua:10 1
@m.lua:5;TRACE [1] @m.lua:10 1
main;@m.lua:11;@m.lua:5 1
OUT
$t = ljprof('report', $file)->{out};
$lself = section($t, 'LINES BY SELF');
like($lself, qr/\A\@m\.lua:5: 7 self \(53\.8%\), 7 total \(53\.8%\)\n/, 'inlined: a line inlined or not is one row of lines');
is(scalar(() = $lself =~ /^\@m\.lua:5:/mg), 1, 'inlined: and only one');
like(section($t, 'FUNCTIONS BY SELF'), qr/^\@m\.lua:4: 1 self \(7\.7%\), 12 total \(92\.3%\)$/m,
     'inlined: the function inlined or not is one row of functions');
my $speedscope = JSON::PP->new->decode(ljprof('report', '--format=speedscope', $file)->{out});
my %frames;
$frames{ $_->{name} }++ for @{ $speedscope->{shared}{frames} };
is_deeply([grep { $frames{$_} > 1 } sort keys %frames], [], 'inlined: speedscope has each frame once, inlined or not');
is(scalar keys %frames, 10, 'inlined: speedscope has every frame');

# Samples met again are found by their bytes, first guessed by their
# innermost frames: stacks that share those (three native frames, more
# bytes than the guess reads) but not their callers, interleaved, and a
# sample shorter than the guess before other records, each counted as
# itself.
{
  my @inner = (f_native(0x7f0000004010), f_native(0x7f0000003020), f_native(0x402110));
  my %of = (a => sp_sample(CFUNC, @inner, f_lua(0x100, 3), f_native(0x401050)),
            b => sp_sample(CFUNC, @inner, f_lua(0x200, 7), f_native(0x401050)),
            c => sp_sample(CFUNC, @inner, f_native(0x401050)),
            s => sp_sample(LFUNC, f_lua(0x100, 2)));
  my $order = 'abaabcbbacsasbsc' x 5;
  my $file = write_file("$dir/guess.bin", $syms . sysprof(3, sp_config(MODE_C, 1000, 0),
                                                           map { $of{$_} } split //, $order));
  is(ljprof('report', '--format=collapsed', $file)->{out}, <<'OUT', 'met again: each stack counted as itself');
main;@a.lua:3;lua_call;cmod_call;cmod_helper 25
main;@b.lua:7;lua_call;cmod_call;cmod_helper 25
main;lua_call;cmod_call;cmod_helper 15
@a.lua:2 15
OUT
}

# End marks (docs/formats.md): past a function's end an object's code is
# object+0xOFFSET, past an empty name it is no object's.
my $marks = symtab(
  sym_cfunc(0x7f0000005000, 'libx.so+0x5000'), sym_cfunc(0x7f0000005100, 'x_func'),
  sym_cfunc(0x7f0000005180, 'libx.so+0x5180'), sym_cfunc(0x7f0000006000, ''),
) . sysprof(3, sp_config(MODE_C, 1000, 0),
  sp_sample(CFUNC, f_native(0x7f0000005010)), sp_sample(CFUNC, f_native(0x7f000000517f)),
  sp_sample(CFUNC, f_native(0x7f00000051c4)), sp_sample(CFUNC, f_native(0x7f0000006010)),
);
$r = ljprof('report', '--format=collapsed', write_file("$dir/marks.bin", $marks));
is(join('', sort split /^/, $r->{out}), <<'OUT', 'end marks: offsets past a function, none past the object') or diag $r->{err};
0x7f0000006010 1
libx.so+0x5010 1
libx.so+0x51c4 1
x_func 1
OUT

# stdin, -o.
$r = ljprof({ stdin => "$dir/v3.bin" }, 'report', '--format=collapsed', '-o', "$dir/out.folded", '-');
is($r->{rc}, 0, 'stdin and -o: exit 0');
open my $fh, '<', "$dir/out.folded" or die;
my $first = <$fh>;
is($first, "main;lua_pcall;\@a.lua:3;cmod_call;lua_call;\@b.lua:7 5\n", 'stdin and -o: the collapsed stacks in the file');

done_testing();
