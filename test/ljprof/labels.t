#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Labels (sysprof v4, memprof v6): the table by label (text, JSON), what
# --label keeps, --by's split, collapsed's --label-frames and how values
# with separators or bytes that are not UTF-8 are escaped, a stream past
# its 1024 sets (the folded ones reported), mode D's samples by set, two
# streams that number the same labels differently merged into one set,
# and memory by label, a filtered block followed to its free.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use JSON::PP;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();
my $head = symtab(sym_lfunc(0x100, '@app.lua', 1), sym_lfunc(0x200, '@costly.lua', 1));

# 100 samples: 75 under route=/costly, 20 under {plugin=auth, route=/api}
# (3 distinct stacks), 5 under none.
my @api = (sp_sample(LFUNC, f_lua(0x100, 5), f_lua(0x100, 30)), sp_sample(LFUNC, f_lua(0x100, 6), f_lua(0x100, 30)),
           sp_sample(CFUNC, f_cfunc(0x9000), f_lua(0x100, 31)));
my $cpu = write_file("$dir/cpu.bin", $head . sysprof(4, sp_config(MODE_C, 1000, 0),
  sp_labelset(1, ['route', '/costly']), sp_labelset(2, ['plugin', 'auth'], ['route', '/api']),
  sp_labels(1), (sp_sample(LFUNC, f_lua(0x200, 3), f_lua(0x100, 10))) x 75,
  sp_labels(2), (@api) x 6, $api[0], $api[1],
  sp_labels(0), (sp_sample(LFUNC, f_lua(0x100, 7))) x 5,
  sp_stats(100, [0, 93, 0, 7], 0, 0, 100_000_000, 0)));

my $r = ljprof('report', $cpu);
is($r->{rc}, 0, 'v4: exit 0') or diag $r->{err};
my ($table) = $r->{out} =~ /^SAMPLES BY LABEL\n(.*?)\n\n/ms;
is($table, join("\n",
  "plugin=(none): 80 (80.0%)", "\t\@costly.lua:3 <- \@app.lua:10",
  "plugin=auth: 20 (20.0%)", "\t\@app.lua:5 <- \@app.lua:30",
  "route=/costly: 75 (75.0%)", "\t\@costly.lua:3 <- \@app.lua:10",
  "route=/api: 20 (20.0%)", "\t\@app.lua:5 <- \@app.lua:30",
  "route=(none): 5 (5.0%)", "\t\@app.lua:7"),
  'text: route=/costly holds 75 of 100 samples, each value with its top stack');

$r = ljprof_json($cpu);
my %by = map { ($_->{key} . '=' . ($_->{value} // '(none)')) => $_ } @{ $r->{json}{by_label}{rows} };
is($by{'route=/costly'}{samples}, 75, 'json: by_label route=/costly 75');
is_deeply($by{'route=/api'}{top}, ['@app.lua:30', '@app.lua:5'], 'json: by_label top stack, outermost first');
my ($costly) = grep { $_->{count} == 75 } @{ $r->{json}{stacks} };
is_deeply($costly->{labels}, {route => '/costly'}, 'json: a stack carries its labels');
my ($bare) = grep { $_->{count} == 5 } @{ $r->{json}{stacks} };
ok(!exists $bare->{labels}, 'json: a stack under no labels carries none');

# --label keeps exactly the samples carrying it.
$r = ljprof_json('--label=route=/api', $cpu);
my @kept = sort map { join(';', @{ $_->{frames} }) . " $_->{count}" } @{ $r->{json}{stacks} };
is_deeply(\@kept, ['@app.lua:30;@app.lua:5 7', '@app.lua:30;@app.lua:6 7', '@app.lua:31;0x9000 6'],
          '--label=route=/api keeps exactly these 3 stacks');
is($r->{json}{samples}, 20, '--label: samples counted are those kept');
$r = ljprof_json('--label=route=/api', '--label=plugin=none', $cpu);
is(scalar @{ $r->{json}{stacks} }, 0, '--label twice: both must hold');
$r = ljprof_json('--label=plugin', $cpu);
is($r->{json}{samples}, 80, '--label=KEY: the samples without that key');
$r = ljprof('report', '--label=route=/api', $cpu);
like($r->{out}, qr/^Only what carries: route=\/api$/m, 'text: says what it keeps');
like($r->{out}, qr/^\@app.lua:5: 7 self \(35.0%\)/m, 'text: shares of what is kept');

# --by: a report for each value, (none) among them, most first.
$r = ljprof('report', '--by=route', $cpu);
is($r->{rc}, 0, '--by: exit 0') or diag $r->{err};
my @parts = $r->{out} =~ /^BY LABEL (.*)$/mg;
is_deeply(\@parts, ['route=/costly: 75 samples of 100', 'route=/api: 20 samples of 100', 'route=(none): 5 samples of 100'],
          '--by=route: a part per value, (none) among them, most first');
my @samples = $r->{out} =~ /^Samples: (\d+)/mg;
is_deeply(\@samples, [75, 20, 5], '--by=route: each part counts its own samples');
$r = ljprof('report', '--by=route', '--format=json', $cpu);
is($r->{rc}, 2, '--by with json: a usage error');
$r = ljprof('report', '--by=tenant', $cpu);
like($r->{out}, qr/^BY LABEL: no samples or events carry label tenant$/m, '--by on a key nothing carries: said');

# Collapsed, a root frame by route.
$r = ljprof('report', '--format=collapsed', '--label-frames=route', $cpu);
my %root;
for (split /\n/, $r->{out}) { /^([^;]*);.* (\d+)$/ and $root{$1} += $2 }
is_deeply(\%root, {'/costly' => 75, '/api' => 20, '(none)' => 5}, 'collapsed --label-frames route: the first frame is the route');
$r = ljprof('report', '--format=collapsed', $cpu);
is(scalar(grep { /^\@app.lua:10;\@costly.lua:3 75$/ } split /\n/, $r->{out}), 1, 'collapsed without: one line per stack');

# Escaping: `;`, newline, `=`, `%` and bytes not UTF-8; UTF-8 kept.
my $odd = write_file("$dir/odd.bin", $head . sysprof(4, sp_config(MODE_C, 1000, 0),
  sp_labelset(1, ['k=1', "a;b\n=c"]), sp_labelset(2, ['k=1', "\xff%\xc3\xa9"]),
  sp_labels(1), (sp_sample(LFUNC, f_lua(0x100, 5))) x 3, sp_labels(2), sp_sample(LFUNC, f_lua(0x100, 6)),
  sp_stats(4, [0, 4], 0, 0, 4_000_000, 0)));
$r = ljprof('report', '--format=collapsed', '--label-frames=k%3D1', $odd);
is($r->{out}, "a%3Bb%0A%3Dc;\@app.lua:5 3\n%FF%25\xc3\xa9;\@app.lua:6 1\n", 'collapsed: separators and a byte not UTF-8 escaped, UTF-8 kept');
$r = ljprof('report', $odd);
like($r->{out}, qr/^k%3D1=a%3Bb%0A%3Dc: 3 \(75.0%\)$/m, 'text: the same escaping');
$r = ljprof_json("--label=k%3D1=a%3Bb%0A%3Dc", $odd);
is($r->{json}{samples}, 3, '--label takes the escaped bytes back');
$r = ljprof('report', '--label=k=%4', $odd);
is($r->{rc}, 2, '--label: a broken escape is a usage error');

# Past 1024 sets: the folded set and the stats' count.
my @many = map { (sp_labelset($_, ['req', "r$_"]), sp_labels($_), sp_sample(LFUNC, f_lua(0x100, 5))) } 1 .. 1024;
my $folded = write_file("$dir/folded.bin", $head . sysprof(4, sp_config(MODE_C, 1000, 0), @many,
  sp_labels(LABELS_OTHER), (sp_sample(LFUNC, f_lua(0x100, 8))) x 6,
  sp_stats(1030, [0, 1030], 0, 0, 1_030_000_000, 6)));
$r = ljprof('report', $folded);
is($r->{rc}, 0, '1030 sets: exit 0') or diag $r->{err};
like($r->{out}, qr/^req=\(other: 6 sets folded\): 6 \(0.6%\)\n\t\@app.lua:8$/m, '1030 sets: the folded ones as one value');
like($r->{out}, qr/^Folded: 6 label sets past the 1024 a stream names, counted as \(other\)$/m, '1030 sets: the stats\' count said');
$r = ljprof_json($folded);
is($r->{json}{by_label}{folded}, 6, 'json: folded count');
my ($other) = grep { $_->{folded} } @{ $r->{json}{by_label}{rows} };
is($other->{samples}, 6, 'json: the folded row');
# A writer tells 2048 folded sets apart: a count of 2048 is that or more.
my $saturated = write_file("$dir/saturated.bin", $head . sysprof(4, sp_config(MODE_C, 1000, 0),
  sp_labelset(1, ['req', 'r1']), sp_labels(1), sp_sample(LFUNC, f_lua(0x100, 5)),
  sp_labels(LABELS_OTHER), sp_sample(LFUNC, f_lua(0x100, 8)),
  sp_stats(2, [0, 2], 0, 0, 2_000_000, 2048)));
$r = ljprof('report', $saturated);
like($r->{out}, qr/^Folded: at least 2048 label sets past the 1024/m, '2048 folded: at least');
like($r->{out}, qr/^req=\(other: at least 2048 sets folded\): 1 \(50.0%\)$/m,
     '2048 folded: the folded value says so too');
is(ljprof_json($saturated)->{json}{by_label}{folded_at_least}, JSON::PP::true, 'json: folded_at_least');

# Mode D: samples by set before the stats.
my $d = write_file("$dir/d.bin", $head . sysprof(4, sp_config(MODE_D, 1000, 0),
  sp_labelset(1, ['route', '/costly']), sp_labelset(2, ['route', '/api']),
  sp_labelcounts([1, 30], [2, 10], [0, 2]), sp_stats(42, [0, 42], 0, 0, 42_000_000, 0)));
$r = ljprof('report', $d);
is($r->{rc}, 0, 'mode D: exit 0') or diag $r->{err};
like($r->{out}, qr/^route=\/costly: 30 \(71.4%\)\nroute=\/api: 10 \(23.8%\)\nroute=\(none\): 2 \(4.8%\)$/m,
     'mode D: samples by label from its record');

$r = ljprof_json('--label=route=/costly', $d);
is($r->{json}{samples}, 30, 'mode D --label: the samples of that set');
$r = ljprof('report', '--by=route', $d);
is_deeply([$r->{out} =~ /^Samples: (\d+)/mg], [30, 10, 2], 'mode D --by: each part its set\'s samples');

# Two streams, the same sets under other numbers: merged by content.
sub worker {
  my ($first, $second, $n1, $n2) = @_;
  return $head . sysprof(4, sp_config(MODE_C, 1000, 0),
    sp_labelset(1, @$first), sp_labelset(2, @$second),
    sp_labels(1), (sp_sample(LFUNC, f_lua(0x100, 5))) x $n1,
    sp_labels(2), (sp_sample(LFUNC, f_lua(0x100, 6))) x $n2,
    sp_stats($n1 + $n2, [0, $n1 + $n2], 0, 0, 1_000_000, 0));
}
my $w1 = write_file("$dir/w1.bin", worker([['route', '/a']], [['route', '/b']], 3, 1));
my $w2 = write_file("$dir/w2.bin", worker([['route', '/b']], [['route', '/a']], 2, 4));
$r = ljprof('report', $w1, $w2);
is($r->{rc}, 0, 'merge: exit 0') or diag $r->{err};
like($r->{out}, qr/^route=\/a: 7 \(70.0%\)\n\t\@app.lua:6\nroute=\/b: 3 \(30.0%\)\n\t\@app.lua:5$/m,
     'merge: sets numbered differently meet by their labels (the top stack, of w2, 4 of 7)');
$r = ljprof_json('--label=route=/a', $w1, $w2);
is($r->{json}{samples}, 7, 'merge: --label keeps the set of both streams');

# A v3 stream has no labels: its reports have no table.
my $v3 = write_file("$dir/v3.bin", $head . sysprof(3, sp_config(MODE_C, 1000, 0), sp_sample(LFUNC, f_lua(0x100, 5)),
  sp_stats(1, [0, 1], 0, 0, 1_000_000)));
$r = ljprof('report', $v3);
unlike($r->{out}, qr/BY LABEL/, 'v3: no table by label');

# Memory by label (v6, stacks): allocations under a set, a realloc
# without a stack (none), a block allocated under /a freed.
my $mhead = symtab(sym_lfunc(0x100, '@m.lua', 1));
my $mem = write_file("$dir/mem.bin", $mhead . memprof_v6(info_config(1, 0),
  info_labelset(1, ['route', '/a']), info_labelset(2, ['route', '/b']),
  upd_stack(1, sf_lua(0x100, 5), sf_lua(0x100, 20)), upd_stack(2, sf_lua(0x100, 6), sf_lua(0x100, 21)),
  info_labels(1), ev_stack(1, lua(0x100, 5), 1, 0x1000, 300), ev_stack(1, lua(0x100, 5), 1, 0x2000, 100),
  info_labels(2), ev_stack(1, lua(0x100, 6), 2, 0x3000, 50), ev_stack(3, lua(0x100, 6), 2, 0x2000, 100, 0x4000, 120),
  ev_free(internal(), 0x1000, 300),
  info_stats(2, 0, 0, 0, 0, 0)));
$r = ljprof('report', $mem);
is($r->{rc}, 0, 'memprof v6: exit 0') or diag $r->{err};
like($r->{out}, qr/^BY LABEL \(allocated\)\nroute=\/a: 400 bytes \(70.2%\)\n\t\@m.lua:5 <- \@m.lua:20\nroute=\/b: 170 bytes \(29.8%\)\n\t\@m.lua:6 <- \@m.lua:21\n\n/m,
     'memprof: bytes allocated by label, the top stack under each');
$r = ljprof('report', '--leak-only', $mem);
like($r->{out}, qr/^BY LABEL \(in use at the end\)\nroute=\/a: 120 bytes \(70.6%\)\n\t[^\n]+\nroute=\/b: 50 bytes \(29.4%\)$/m,
     'memprof --leak-only: in use by the label of the allocation that made the block (reallocated under /b, still /a\'s)');
$r = ljprof_json('--label=route=/a', $mem);
is($r->{json}{totals}{alloc_bytes}, 400, 'memprof --label=route=/a: its allocations');
is($r->{json}{totals}{freed_bytes}, 400, 'memprof --label=route=/a: its block reallocated under /b counts as freed, the other freed');
is($r->{json}{totals}{live_bytes}, 0, 'memprof --label=route=/a: nothing held');
$r = ljprof_json('--label=route=/b', $mem);
is($r->{json}{totals}{alloc_bytes}, 170, 'memprof --label=route=/b: the block it reallocated counts as allocated');
is($r->{json}{totals}{freed_bytes}, 0, 'memprof --label=route=/b: a free of another label\'s block is not its');
$r = ljprof('report', '--by=route', $mem);
is_deeply([$r->{out} =~ /^BY LABEL (route=.*)$/mg], ['route=/a: 400 bytes of 570', 'route=/b: 170 bytes of 570'],
          'memprof --by: a part per value');
is_deeply([$r->{out} =~ /^Totals: (\d+ allocations? \(\d+ bytes\))/mg], ['2 allocations (400 bytes)', '2 allocations (170 bytes)'],
          'memprof --by: each part its own allocations (/b\'s reallocation of /a\'s block starts a block)');

# Sampled (v6): what each label allocated is estimated from the weights.
my $sampled = write_file("$dir/sampled.bin", $mhead . memprof_v6(info_config(1, 4096),
  info_labelset(1, ['route', '/a']), info_labelset(2, ['route', '/b']), upd_stack(1, sf_lua(0x100, 5)),
  info_labels(1), ev_sampled(lua(0x100, 5), 1, 0x1000, 32, 4112), ev_sampled(lua(0x100, 5), 1, 0x2000, 64, 4128),
  info_labels(2), ev_sampled(lua(0x100, 5), 1, 0x3000, 8000, 9000),
  info_stats(1, 0, 0, 3, 0, 0)));
$r = ljprof_json($sampled);
my %est = map { $_->{value} => $_->{alloc_bytes} } @{ $r->{json}{by_label}{rows} };
is_deeply(\%est, {'/a' => 8240, '/b' => 9000}, 'sampled: bytes by label are the weights\' sums');

# From a pipe the events are aggregated on a second thread, behind the
# filter's gate: the same report as from the file.
my $piped = `cat '$mem' | ljprof report --label=route=/a --format=json - 2>/dev/null`;
my $filed = ljprof('report', '--label=route=/a', '--format=json', $mem)->{out};
s/"source": *"[^"]*"//g for $piped, $filed;
is($piped, $filed, 'memprof --label from a pipe (two threads): the report read from the file');
$r = ljprof('report', '--format=collapsed', '--label-frames=route', $mem);
is($r->{out}, "/a;\@m.lua:20;\@m.lua:5 400\n/b;\@m.lua:21;\@m.lua:6 170\n", 'memprof collapsed --label-frames');

# diff by label: each value's diff, both sides read with it.
sub routes {
  my ($a, $b, $none) = @_;
  return $head . sysprof(4, sp_config(MODE_C, 1000, 0), sp_labelset(1, ['route', '/a']), sp_labelset(2, ['route', '/b']),
    sp_labels(1), (sp_sample(LFUNC, f_lua(0x100, 5))) x $a, sp_labels(2), (sp_sample(LFUNC, f_lua(0x100, 6))) x $b,
    sp_labels(0), (sp_sample(LFUNC, f_lua(0x100, 7))) x $none, sp_stats($a + $b + $none, [0, $a + $b + $none], 0, 0, 1e6, 0));
}
my $base = write_file("$dir/base.bin", routes(10, 5, 1));
my $new = write_file("$dir/new.bin", routes(10, 25, 0));
$r = ljprof('diff', '--by-label=route', $base, $new);
is($r->{rc}, 0, 'diff --by-label: exit 0') or diag $r->{err};
my @heads = $r->{out} =~ /^BY LABEL (.*)$/mg;
is_deeply(\@heads, ['route=/a', 'route=/b', 'route=(none)'], 'diff --by-label: a diff per value of either side');
my %totals = $r->{out} =~ /^BY LABEL route=(\S+)\nDIFF: .*\nTotal: (\d+ -> \d+)/mg;
is_deeply(\%totals, {'/a' => '10000000 -> 10000000', '/b' => '5000000 -> 25000000', '(none)' => '1000000 -> 0'},
          'diff --by-label: each value\'s totals (ns)');
like($r->{out}, qr/^BY LABEL route=\/b\n(?:.*\n){3}GREW\n\+20000000 \(5000000 nanoseconds -> 25000000 nanoseconds\)  \@app.lua:6$/m,
     'diff --by-label: what grew under /b');
$r = ljprof('diff', '--label=route=/b', $base, $new);
like($r->{out}, qr/^Total: 5000000 -> 25000000 \(\+20000000\)$/m, 'diff --label: only what carries it');

done_testing();
