#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# The HTML flame graph: one self-contained file (nothing fetched), opened
# in a real headless Chromium: the page names the hot frames, a search
# (#search=TEXT in the address) selects them and gives their total and
# share, CPU and memory profiles alike; the embedded totals equal the JSON
# report's; thousands of frames draw quickly. A screenshot of a search is
# left at $LJPROF_BUILD_DIR/flamegraph.png.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Cwd ();
use JSON::PP;
use Test::More;
use LJProf::Lua ();
use LJProf::Profiles;
use LJProf::Stream;
use LJProf::Chromium;

plan skip_all => 'chromium is not installed (Debian chromium)' unless chromium_path();

my $dir = LJProf::Lua::scratch();

sub html_report {
  my ($bin, $name, @opts) = @_;
  my $file = "$dir/$name.html";
  my ($rc, undef, $err) = ljprof_out('report', '--format=html', @opts, '-o', $file, $bin);
  is($rc, 0, "$name: html written") or diag $err;
  return $file;
}

sub first_top_frame {
  my ($dom) = @_;
  my ($name) = $dom =~ m{<tr class="frame"><td class="name">(.*?)</td>};
  return unescape_html($name // '');
}

{ # CPU
  my $cpu = cpu_profile();
  my $file = html_report($cpu->{bin}, 'cpu');
  self_contained($file, 'cpu');
  my $json = json_report($cpu->{bin});
  my $data = embedded($file);
  is($data->{total}, $json->{samples_with_stacks}, 'cpu round trip: the page total is the samples of the JSON report');
  is($data->{unit}, 'samples', 'cpu: in samples');

  my $hot = "$cpu->{name}:$cpu->{hot_line}";
  my $dom = dom($file);
  is(first_top_frame($dom), $hot, 'cpu: the hottest frame heads the table');
  like($dom, qr/data-draw-ms="[\d.]+"/, 'cpu: the flame graph was drawn');

  my $needle = (split m{/}, $cpu->{script})[-1] . ":$cpu->{hot_line}";
  $dom = dom($file, $needle);
  my ($info) = $dom =~ m{<span id="match-info">(.*?)</span>};
  my ($value) = $dom =~ /data-matched-value="(\d+)"/;
  my %stacks = map { join(';', @{ $_->{frames} }) => $_->{count} } @{ $json->{stacks} };
  my $expect = 0;
  $expect += $stacks{$_} for grep { /(^|;)\Q$hot\E(;|$)/ } keys %stacks;
  is($value, $expect, "cpu search '$needle': the matched total is the samples under it ($expect)");
  like($info // '', qr/^Matched: $expect samples, [\d.]+ ms \([\d.]+% of all\) in 1 frame$/, 'cpu search: total and share shown');
  my @matches = map { unescape_html($_) } $dom =~ m{<li class="match">(.*?) — }g;
  is_deeply(\@matches, [$hot], 'cpu search: the matched frame listed');

  # The screenshot: a search highlighted.
  my $png = ($ENV{LJPROF_BUILD_DIR} // $dir) . '/flamegraph.png';
  unlink $png;
  my ($rc) = chromium("--screenshot=$png", "file://$file#search=" . uri_escape($needle));
  is($rc, 0, 'cpu: screenshot taken');
  is(substr(file_text($png), 0, 8), "\x89PNG\r\n\x1a\n", "cpu: $png is a PNG");
}

{ # memory
  my $mem = memory_profile();
  my $t = json_report($mem->{bin})->{totals};
  my $file = html_report($mem->{bin}, 'mem');
  self_contained($file, 'memory');
  my $data = embedded($file);
  is($data->{total}, $t->{alloc_bytes} + $t->{realloc_new_bytes}, 'memory round trip: bytes allocated');
  is($data->{unit}, 'bytes', 'memory: in bytes');
  is(first_top_frame(dom($file)), "$mem->{name}:$mem->{garbage_line}", 'memory: the site allocating the most first');

  $file = html_report($mem->{bin}, 'mem-live', '--leak-only');
  $data = embedded($file);
  is($data->{total}, $t->{live_bytes}, 'memory in use round trip: bytes live');
  my $live = "$mem->{name}:$mem->{live_line}";
  my $dom = dom($file, ":$mem->{live_line}");
  is(first_top_frame($dom), $live, 'memory in use: the site holding the most first');
  my ($info) = $dom =~ m{<span id="match-info">(.*?)</span>};
  like($info // '', qr/^Matched: [\d.]+ [KM]iB \([\d,]+ bytes\) \([\d.]+% of all\)/, 'memory search: bytes and share');
}

{ # Thousands of frames: 4,000 distinct stacks over 2,000 functions.
  my (@syms, @samples);
  push @syms, sym_lfunc(0x1000 + $_ * 16, "\@mod$_.lua", 1) for 0 .. 1999;
  for my $s (0 .. 3999) {
    my @frames = map { f_lua(0x1000 + (($s * 7 + $_ * 13) % 2000) * 16, $_ + 1) } 0 .. 15;
    push @samples, sp_sample(LFUNC, @frames, f_native(0x400000)) for 1 .. 1 + $s % 3;
  }
  my $bin = write_file("$dir/wide.bin", symtab(@syms, sym_cfunc(0x400000, 'main'))
    . sysprof(3, sp_config(MODE_C, 1000, 0), @samples));
  my $file = html_report($bin, 'wide');
  my $data = embedded($file);
  cmp_ok(scalar @{ $data->{frames} }, '>=', 5000, 'wide: thousands of frames (' . scalar(@{ $data->{frames} }) . ')');
  my $dom = dom($file, 'mod7.lua');
  # Drawn (how fast is a measure, not a test: it failed under load).
  my ($ms) = $dom =~ /data-draw-ms="([\d.]+)"/;
  ok(defined $ms, 'wide: the flame graph was drawn (' . ($ms // '?') . ' ms)');
  like($dom, qr/<span id="match-info">Matched: \d+ samples/, 'wide: the search ran');
}

# What ran: a loop compiled again after every jit.flush(), most of its
# time in the compiler. The page's legend gives each kind's share, as the
# stacks it embeds add up; frames are coloured by the kind.
{
  my $bin = compiler_profile()->{bin};
  my $file = html_report($bin, 'kinds');
  my $data = embedded($file);
  is(scalar @{ $data->{stack_kinds} }, scalar @{ $data->{stacks} }, 'kinds: each stack says what ran');
  my %sum;
  $sum{ $data->{kinds}[ $data->{stack_kinds}[$_] ] } += $data->{values}[$_] for 0 .. $#{ $data->{stacks} };
  my $dom = dom($file);
  my %legend;
  $legend{ unescape_html($1) } = $2 while $dom =~ m{<li data-kind="([^"]*)" data-value="(\d+)">}g;
  is_deeply(\%legend, { map { $_ => $sum{$_} // 0 } @{ $data->{kinds} } }, 'kinds: the legend gives each kind its stacks\' samples')
    or diag explain \%legend;
  cmp_ok($legend{'JIT compiler'} // 0, '>', 0.5 * $data->{total}, "kinds: most of the time is the JIT compiler's ($legend{'JIT compiler'} of $data->{total})");
  like($dom, qr{<li data-kind="JIT compiler" data-value="\d+"><span class="swatch" style="background: rgb\(80, 140, 230\);">}, 'kinds: the compiler\'s swatch is blue')
    or diag(($dom =~ m{(<ul id="kind-legend".*?</ul>)}s)[0]);
  my ($note) = $dom =~ m{<pre id="note">(.*?)</pre>}s;
  like(unescape_html($note // ''), qr/^WHAT THE JIT SAYS .*\n- \d+% of the time is the JIT compiler; most on the trace at \@\S+:1 /,
       'kinds: above the graph, what the JIT says, as the text report does') or diag $dom;

  # --jit: the whole story above the same graph.
  $file = html_report($bin, 'kinds-jit', '--jit');
  $dom = dom($file);
  ($note) = $dom =~ m{<pre id="note">(.*?)</pre>}s;
  my $text = `ljprof report --jit '$bin' 2>&1`;
  is(unescape_html($note // ''), $text, '--jit --format=html: the page tells the text report\'s story');
  like($dom, qr/data-draw-ms="[\d.]+"/, '--jit --format=html: ... above the flame graph');
}

# The bundled example, as `make demo` shows it: its flame graph names the
# example's own lines, and its screenshot is the one the README shows
# (docs/demo-flamegraph.png is a copy of $LJPROF_BUILD_DIR/demo-flamegraph.png).
{
  my $root = Cwd::abs_path("$FindBin::Bin/../..");
  my $file = "$dir/demo.html";
  my ($rc, undef, $err) = ljprof_out('record', '--cpu', '--interval=1', '-o', "$dir/demo.bin",
    '--format=html', "--report-out=$file", '--', "$root/examples/cache.lua");
  is($rc, 0, 'demo: examples/cache.lua recorded as a flame graph') or diag $err;
  my $dom = dom($file);
  like(unescape_html($dom), qr/examples\/cache\.lua:\d+/, 'demo: the page names the example\'s lines');
  my $png = ($ENV{LJPROF_BUILD_DIR} // $dir) . '/demo-flamegraph.png';
  unlink $png;
  ($rc) = chromium("--screenshot=$png", "file://$file");
  is(substr(file_text($png), 0, 8), "\x89PNG\r\n\x1a\n", "demo: $png is a PNG");
}

{ # Labels: a selector of KEY=VALUE; #label=KEY=VALUE keeps the stacks
  # carrying it. A page without labels has none.
  my $head = symtab(sym_lfunc(0x100, '@app.lua', 1));
  my $bin = write_file("$dir/labels.bin", $head . sysprof(4, sp_config(MODE_C, 1000, 0),
    sp_labelset(1, ['route', '/costly']), sp_labelset(2, ['route', '/api']),
    sp_labels(1), (sp_sample(LFUNC, f_lua(0x100, 3))) x 75,
    sp_labels(2), (sp_sample(LFUNC, f_lua(0x100, 5))) x 25,
    sp_stats(100, [0, 100], 0, 0, 100_000_000, 0)));
  my $file = html_report($bin, 'labels');
  my $data = embedded($file);
  is_deeply($data->{labelsets}, [['route', '/costly'], ['route', '/api']], 'labels: the sets in the data');
  my $dom = dom($file);
  my @options = map { unescape_html($_) } $dom =~ m{<option value="[^"]*">(.*?)</option>}g;
  is_deeply(\@options, ['all labels', 'route=/api (25)', 'route=/costly (75)'], 'labels: the selector lists each value with its samples');
  my ($rc, $picked) = chromium('--dump-dom', "file://$file#label=" . uri_escape('route=/api'));
  is($rc, 0, 'labels: rendered with #label=route=/api');
  like($picked, qr/data-label="route=\/api"/, 'labels: the label chosen');
  like(unescape_html($picked), qr/<div id="summary">CPU profile, samples by stack, label route=\/api: 25 samples/, 'labels: only its 25 samples');
  is(first_top_frame($picked), '@app.lua:5', 'labels: its hot frame heads the table');
  unlike(file_text(html_report(write_file("$dir/nolabels.bin", $head . sysprof(3, sp_config(MODE_C, 1000, 0),
    sp_sample(LFUNC, f_lua(0x100, 3)), sp_stats(1, [0, 1], 0, 0, 1_000_000))), 'nolabels')), qr/labelsets|select\.id/,
    'labels: a page without labels has no selector');
}

done_testing();
