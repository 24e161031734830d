#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Heap over time (#11 step 4): a program that builds up ~50 MB over half a
# second and lets it go gives a series that rises then falls, its peak
# within 20% of what the program held, the holding line first in the
# legend (exact and sampled, through `record --stacks` / `--sample`); the
# HTML embeds the series and draws the chart. Streams without marks (v3,
# v4) render without a chart and with a note; marks are read exactly,
# merged when there are too many, a cut stream still renders, and a mark
# going back in time is damage after a partial report. record's new flags
# refuse bad values.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use JSON::PP;
use Test::More;
use LJProf::Lua qw(run_lua scratch);
use LJProf::Pace qw(scaled);
use LJProf::Run;
use LJProf::Stream;

my $dir = scratch_dir();

sub html_data {
  my ($file) = @_;
  my ($json) = LJProf::Run::slurp($file) =~ m{<script type="application/json" id="profile-data">(.*?)</script>}s;
  return JSON::PP->new->decode($json // 'null');
}

# --- A live run: up, then down ----------------------------------------------

# Tables sized up front: a sampled small block that grows keeps its scale
# (docs/formats.md), a bias this test is not about.
my $program = <<'LUA';
local new = require("table.new")
local function hold(step, n)
  local t = new(n, 0)
  for i = 1, n do t[i] = string.rep("x", 1000) .. step .. ":" .. i end -- HOLD
  return t
end
collectgarbage()
local before = collectgarbage("count")
local keep, t0 = new(50, 0), os.clock()
for step = 1, 50 do
  keep[step] = hold(step, 1000)
  while os.clock() - t0 < step * 0.01 do end
end
local held = (collectgarbage("count") - before) * 1024
keep = nil
collectgarbage()
collectgarbage()
io.stderr:write(string.format("HELD %d\n", held))
LUA
my $script = "$dir/grow_shrink.lua";
open my $fh, '>', $script or die $!;
print $fh $program;
close $fh;
my $hold_line = 4;

for my $mode (['--stacks'], ['--sample=65536']) {
  my $what = $mode->[0];
  my $html = "$dir/heap.html";
  my $r = ljprof('record', '--mem', @$mode, '-o', "$dir/heap.bin", '--format=json', '--report-out', "$dir/heap.json",
                 '--', $script);
  is($r->{rc}, 0, "$what: recorded") or diag $r->{err};
  my ($held) = $r->{err} =~ /HELD (\d+)/;
  my $doc = JSON::PP->new->decode(LJProf::Run::slurp("$dir/heap.json"));
  my $h = $doc->{heap_over_time};
  ok($h && $h->{points} >= 10, "$what: a series of $h->{points} points") or next;
  my @total = @{ $h->{total} };
  my ($imax) = sort { $total[$b] <=> $total[$a] } 0 .. $#total;
  my $peak = $total[$imax];
  ok($imax > 0 && $imax < $#total, "$what: the peak is neither first nor last");
  cmp_ok($total[0], '<', 0.2 * $peak, "$what: it rises from $total[0]");
  cmp_ok($total[-1], '<', 0.2 * $peak, "$what: and falls to $total[-1]");
  my @rising = grep { $total[$_] >= $total[$_ - 1] * 0.9 } 1 .. $imax;
  is(scalar @rising, $imax, "$what: it rises all the way up");
  cmp_ok(abs($peak - $held), '<=', 0.2 * $held, "$what: peak $peak within 20% of the $held bytes held");
  cmp_ok(abs($h->{peak_bytes} - $held), '<=', 0.2 * $held, "$what: so is peak_bytes, $h->{peak_bytes}");
  is($h->{sites}[0]{location}, "\@$script:$hold_line", "$what: the holding line leads the sites");
  my @ns = @{ $h->{time_ns} };
  ok(!grep({ $ns[$_] < $ns[$_ - 1] } 1 .. $#ns), "$what: time goes forward");
  cmp_ok($ns[$imax], '>', 0.3e9, "$what: the peak comes after 0.3 s ($ns[$imax] ns)");
  is(scalar @{ $h->{sites}[0]{bytes} }, scalar @total, "$what: a value per point for each site");
  my $sum_ok = !grep {
    my $i = $_;
    my $s = $h->{other}[$i];
    $s += $_->{bytes}[$i] for @{ $h->{sites} };
    $s != $total[$i];
  } 0 .. $#total;
  ok($sum_ok, "$what: sites and other add up to the total at every point");

  $r = ljprof('report', '--format=html', '-o', $html, "$dir/heap.bin");
  is($r->{rc}, 0, "$what: html written") or diag $r->{err};
  my $data = html_data($html);
  is_deeply($data->{heap}, $h, "$what: the page embeds the series the JSON report gives");
  ok(!exists $data->{heap_note}, "$what: no note");
  like(LJProf::Run::slurp($html), qr/id="heap-chart"/, "$what: the page has the chart");
}

# The page as a browser draws it: the chart shown, the legend naming the site.
SKIP: {
  my ($chromium) = grep { -x } map { "/usr/bin/$_" } qw(chromium chromium-browser);
  skip 'chromium is not installed', 3 unless $chromium && -s "$dir/heap.html";
  my $dom = `timeout @{[ scaled(90) ]} '$chromium' --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking --user-data-dir='$dir/chromium' --dump-dom 'file://$dir/heap.html' 2>/dev/null`;
  like($dom, qr/<section id="heap">/, 'the chart section is shown');
  like($dom, qr/<canvas id="heap-chart" data-points="\d+" data-peak="\d+"/, 'the chart is drawn');
  like($dom, qr/<li class="heap-site">.*?\@\Q$script\E:$hold_line — peak \d/, 'the legend names the holding line');
}

# --- Old streams: no marks, no chart ----------------------------------------

my $v3 = run_lua(<<"LUA");
assert(misc.memprof.start("$dir/v3.bin"))
local t = {} for i = 1, 100 do t[i] = {} end
assert(misc.memprof.stop())
LUA
is($v3->{rc}, 0, 'a v3 stream written') or diag $v3->{err};
is(ord(substr(LJProf::Run::slurp("$dir/v3.bin"), index(LJProf::Run::slurp("$dir/v3.bin"), 'ljm') + 3, 1)), 3, 'it is v3');
my $v4 = write_file("$dir/v4.bin", symtab() . memprof_v4(ev_alloc(internal(), 0x10, 8), ev_free(internal(), 0x10, 8)));
for my $old (["$dir/v3.bin", 'v3'], [$v4, 'v4']) {
  my ($file, $what) = @$old;
  my $r = ljprof('report', '--format=html', '-o', "$dir/old.html", $file);
  is($r->{rc}, 0, "$what: html without error") or diag $r->{err};
  is($r->{err}, '', "$what: nothing on stderr");
  my $data = html_data("$dir/old.html");
  ok($data && !defined $data->{heap}, "$what: no series");
  like($data->{heap_note} // '', qr/no time marks/, "$what: a note says why");
  my $j = ljprof_json($file);
  ok($j->{json} && exists $j->{json}{heap_over_time} && !defined $j->{json}{heap_over_time},
     "$what: JSON heap_over_time is null");
}

# --- Marks as the reader meets them -----------------------------------------

my ($pa, $pb) = (0x5612ab000100, 0x5612ab000200);
my $head = symtab(sym_lfunc($pa, '@a.lua', 1), sym_lfunc($pb, '@b.lua', 1)) . prologue('ljm', 5) . info_config(1, 0);
my @items = (
  upd_stack(1, sf_lua($pa, 3)), upd_stack(2, sf_lua($pb, 5)),
  info_mark(0),
  ev_stack(1, lua($pa, 3), 1, 0x1000, 4000),
  info_mark(10_000_000),
  ev_stack(1, lua($pb, 5), 2, 0x2000, 1000),
  ev_stack(3, lua($pa, 3), 1, 0x1000, 4000, 0x3000, 6000),
  info_mark(20_000_000),
  ev_free(internal(), 0x3000, 6000),
  ev_free(internal(), 0x9999, 77),    # from before the start: moves nothing
  info_mark(30_000_000),
  info_stats(2, 0, 0, 0, 0),
);
my ($bin, $complete) = memprof_items($head, @items);
my $full = write_file("$dir/marks.bin", $bin);
my $j = ljprof_json($full);
is($j->{rc}, 0, 'marks: read') or diag $j->{err};
my $h = $j->{json}{heap_over_time};
is_deeply($h->{time_ns}, [0, 10_000_000, 20_000_000, 30_000_000], 'marks: a point per mark, at its time');
is_deeply($h->{total}, [0, 4000, 7000, 1000], 'marks: the live total at each');
is_deeply($h->{events}, [0, 1, 3, 5], 'marks: the events before each');
is_deeply([map { $_->{location} } @{ $h->{sites} }], ['@a.lua:3', '@b.lua:5'], 'marks: sites by peak');
is_deeply($h->{sites}[0]{bytes}, [0, 4000, 6000, 0], 'marks: the reallocated block stays its owner\'s');
is_deeply($h->{sites}[1]{bytes}, [0, 0, 1000, 1000], 'marks: the other site');
is($h->{peak_bytes}, 7000, 'marks: peak_bytes');
is($h->{peak_ns}, 20_000_000, 'marks: and when');

# Cut anywhere: one clear line, every event before the cut, and a page.
is(check_every_cut($bin, length($head) - length(info_config(1, 0)), $complete,
                   sub { my $t = $_[0]{totals}; $t->{alloc_events} + $t->{realloc_events} + $t->{free_events} }),
   0, 'a stream with marks cut at every offset is reported up to the cut');
my $cut = write_file("$dir/cut.bin", substr($bin, 0, $complete->[7][0] + 2));
my $r = ljprof('report', '--format=html', '-o', "$dir/cut.html", $cut);
is($r->{rc}, 1, 'cut after three marks: exit 1');
like($r->{err}, qr/truncated at offset/, 'cut: says where');
is_deeply(html_data("$dir/cut.html")->{heap}{total}, [0, 4000, 7000], 'cut: the page charts the marks before the cut');

# A mark going back in time: damage, after a report of what came before.
my $back = write_file("$dir/back.bin", $head . upd_stack(1, sf_lua($pa, 3)) . info_mark(500)
                      . ev_stack(1, lua($pa, 3), 1, 0x1000, 4000) . info_mark(1000) . info_mark(999)
                      . ev_free(internal(), 0x1000, 4000) . "\x80");
$j = ljprof_json($back);
is($j->{rc}, 1, 'a mark back in time: exit 1');
like($j->{err}, qr/corrupt at offset \d+: time mark 999 ns goes back before 1000 ns/, 'it says so');
is_deeply($j->{json}{heap_over_time}{total}, [0, 4000], 'the marks before it are charted');
is($j->{json}{totals}{alloc_events}, 1, 'the events before it are reported');
my $bad = write_file("$dir/badmark.bin", $head . "\x1C\x02" . "\xff" x 11 . "\x80");
$j = ljprof_json($bad);
is($j->{rc}, 1, 'a mark with a broken number: exit 1');
like($j->{err}, qr/time mark/, 'the error names the time mark');

# --- Many marks: bounded, the peak kept -------------------------------------

my $many = $head . upd_stack(1, sf_lua($pa, 3));
for my $i (1 .. 2500) {
  my $size = $i == 1234 ? 1_000_000 : 100;
  $many .= ev_stack(1, lua($pa, 3), 1, 0x10000 + $i * 16, $size) . info_mark($i * 1000)
         . ev_free(internal(), 0x10000 + $i * 16, $size);
}
$many .= info_mark(2_600_000) . "\x80";
$j = ljprof_json(write_file("$dir/many.bin", $many));
$h = $j->{json}{heap_over_time};
is($h->{marks}, 2501, '2501 marks read');
cmp_ok($h->{points}, '<=', 1001, "kept in $h->{points} points");
cmp_ok($h->{points}, '>=', 500, 'and not fewer than half the bound');
is((sort { $b <=> $a } @{ $h->{total} })[0], 1_000_000, 'the spike survives the merging');
is($h->{time_ns}[-1], 2_600_000, 'the last mark is the last point');

# --- record: --stacks and --sample -----------------------------------------

for my $bad_value ('0', '-1', '1.5', 'abc', '1099511627777', '') {
  my $r = ljprof('record', '--mem', "--sample=$bad_value", '--', $script);
  is($r->{rc}, 2, "--sample=$bad_value: a usage error");
  like($r->{err}, qr/--sample wants a whole number of bytes from 1 to 1099511627776 \(2\^40\), not '\Q$bad_value\E'/,
       "--sample=$bad_value: says what it wants");
}
$r = ljprof('record', '--cpu', '--stacks', '--', $script);
is($r->{rc}, 2, '--stacks with --cpu: a usage error');
like($r->{err}, qr/--stacks, --native and --sample are for --mem/, 'it says so');
$r = ljprof('record', '--help');
like($r->{out}, qr/--sample=BYTES/, 'help tells of --sample');
like($r->{out}, qr/--stacks/, 'and of --stacks');

done_testing;
