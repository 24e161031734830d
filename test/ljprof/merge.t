#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# One profile from many streams (`ljprof report A B ...`): CPU streams of
# processes whose code sits at other addresses merge by what frames name,
# each sample keeping its stream (the text and JSON tables by stream,
# pprof's `stream` label, collapsed's root frame on request); streams of
# another kind, interval or clock are refused naming the file; a damaged
# one is reported up to its damage; two real processes, one three times
# the other's samples on the same hot line, come out 75/25.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Temp qw(tempdir);
use Test::More;
use JSON::PP;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();

# The same program in two processes: its function and C symbols at other
# addresses in each (ASLR), samples 30 and 10 on its hot line; the
# process record (@process: pid, host, start), if any.
sub worker {
  my ($base, $hot, $cold, @process) = @_;
  return symtab(sym_lfunc($base + 0x100, '@hot.lua', 5), sym_cfunc($base + 0x401000, 'main'))
    . sysprof(3, sp_config(MODE_C, 1000, 0), (@process ? sp_process(@process) : ()),
	      (sp_sample(LFUNC, f_lua($base + 0x100, 7), f_native($base + 0x401050))) x $hot,
	      (sp_sample(LFUNC, f_lua($base + 0x100, 9), f_native($base + 0x401050))) x $cold,
	      sp_stats($hot + $cold, [0, $hot + $cold], 0, 0, ($hot + $cold) * 1_000_000));
}
my $a = write_file("$dir/ljprof-cpu-101.bin", worker(0, 30, 6));
my $b = write_file("$dir/ljprof-cpu-202.bin", worker(0x5500000000, 10, 2));

my $r = ljprof('report', $a, $b);
is($r->{rc}, 0, 'two streams: exit 0') or diag $r->{err};
my $t = $r->{out};
like($t, qr/^SYSPROF REPORT: \Q$a\E, \Q$b\E\n/, 'text: both streams in the title');
like($t, qr/^Samples: 48 in 0\.048 s/m, 'text: the samples and times summed');
like($t, qr/^SAMPLES BY PROCESS\n\Q$a\E: 36 \(75\.0%\)\n\Q$b\E: 12 \(25\.0%\)\n\n/m,
     'text: each stream with its samples and share');
like($t, qr/^LINES BY SELF\n\@hot\.lua:7: 40 self \(83\.3%\), 40 total \(83\.3%\)\n\@hot\.lua:9: 8 self/m,
     'text: the hot line of both processes summed, by name not address');
like($t, qr/^FUNCTIONS BY SELF\n\@hot\.lua:5: 48 self/m, 'text: the function of both summed');
unlike($t, qr/unknown proto/, 'text: every address named by its own stream');

my $one = ljprof('report', $a);
unlike($one->{out}, qr/BY PROCESS/, 'one stream: no table by process');

$r = ljprof_json($a, $b);
is_deeply($r->{json}{streams}, [{ name => $a, samples => 36 }, { name => $b, samples => 12 }],
	  'json: the streams and their samples');
is($r->{json}{samples}, 48, 'json: the samples summed');

$r = ljprof('report', '--format=collapsed', $a, $b);
is($r->{out}, "main;\@hot.lua:7 40\nmain;\@hot.lua:9 8\n", 'collapsed: equal stacks of both streams summed');
$r = ljprof('report', '--format=collapsed', '--root=process', $a, $b);
is($r->{out}, "[stream $a];main;\@hot.lua:7 30\n[stream $b];main;\@hot.lua:7 10\n"
	      . "[stream $a];main;\@hot.lua:9 6\n[stream $b];main;\@hot.lua:9 2\n",
   'collapsed --root=process: each stack under its stream');
$r = ljprof('report', '--format=collapsed', '--root=host', $a, $b);
is($r->{rc}, 2, 'an unknown root: exit 2');
like($r->{err}, qr/unknown root 'host' \(process\)/, 'an unknown root: said');

for my $format (qw(speedscope html)) {
  $r = ljprof('report', "--format=$format", $a, $b);
  is($r->{rc}, 0, "$format: exit 0");
  like($r->{out}, qr/hot\.lua/, "$format: the merged profile");
}

# Streams that say their process: the same pid on two hosts told apart.
my $w1 = write_file("$dir/web-1.bin", worker(0, 30, 6, 4242, 'web-1', 1_700_000_000_000_000_000));
my $w2 = write_file("$dir/web-2.bin", worker(0x5500000000, 10, 2, 4242, 'web-2', 1_700_000_001_000_000_000));
$r = ljprof('report', $w1, $w2);
like($r->{out}, qr/^SAMPLES BY PROCESS\n\Q$w1\E \(pid 4242 on web-1\): 36 \(75\.0%\)\n\Q$w2\E \(pid 4242 on web-2\): 12 \(25\.0%\)\n/m,
     'text: each stream with its pid and host');
$r = ljprof_json($w1, $w2);
is_deeply([map { [$_->{pid}, $_->{host}, $_->{started_ns}] } @{ $r->{json}{streams} }],
	  [[4242, 'web-1', 1_700_000_000_000_000_000], [4242, 'web-2', 1_700_000_001_000_000_000]],
	  'json: pid, host and start of each stream');
$r = ljprof('report', '--format=collapsed', '--root=process', $w1, $w2);
like($r->{out}, qr/\A\[pid 4242 on web-1\];main;\@hot\.lua:7 30\n\[pid 4242 on web-2\];main;\@hot\.lua:7 10\n/,
     'collapsed --root=process: the process as the root frame');
# The windows of one process (rotate=): one row.
my $w1b = write_file("$dir/web-1.bin.2", worker(0, 4, 0, 4242, 'web-1', 1_700_000_002_000_000_000));
$r = ljprof('report', $w1, $w2, $w1b);
like($r->{out}, qr/^SAMPLES BY PROCESS\npid 4242 on web-1 \(\Q$w1\E \.\.\. \Q$w1b\E, 2 streams\): 40 \(76\.9%\)\n\Q$w2\E \(pid 4242 on web-2\): 12 \(23\.1%\)\n/m,
     'text: the streams of one process in one row');
$r = ljprof('report', $w1);
is($r->{rc}, 0, 'one stream with a process record: exit 0');
unlike($r->{out}, qr/pid 4242/, 'one stream: no table, no pid');
my $mp = write_file("$dir/mem-pid.bin", symtab(sym_lfunc(0x100, '@alloc.lua', 5))
		    . memprof_v5(info_config(1, 0), info_process(77, 'db-1', 5), upd_stack(1, sf_lua(0x100, 7)),
				 ev_stack(1, lua(0x100, 7), 1, 0x1000, 64)));
my $mp2 = write_file("$dir/mem-pid2.bin", symtab(sym_lfunc(0x100, '@alloc.lua', 5))
		     . memprof_v5(info_config(1, 0), upd_stack(1, sf_lua(0x100, 7)),
				  ev_stack(1, lua(0x100, 7), 1, 0x1000, 64)));
$r = ljprof('report', $mp, $mp2);
like($r->{out}, qr/^\Q$mp\E \(pid 77 on db-1\): 64 bytes \(50\.0%\), 64 bytes \(50\.0%\)\n\Q$mp2\E: 64 bytes/m,
     'memory: the process of a stream that says, the file of one that does not');
my $cutp = worker(0, 1, 0, 4242, 'web-1', 5);
$cutp = write_file("$dir/cut-process.bin", substr($cutp, 0, index($cutp, 'web-1') + 2));
$r = ljprof('report', $w1, $cutp);
is($r->{rc}, 1, 'a process record cut: exit 1');
like($r->{err}, qr/^ljprof: \Q$cutp\E: truncated at offset \d+: expected more bytes \(process: host name\)/m, 'a process record cut: said');

# Streams that do not merge: refused, naming the file and why.
my $mem = write_file("$dir/mem.bin", symtab(sym_lfunc(0x100, '@hot.lua', 5))
		     . memprof(ev_alloc(lua(0x100, 7), 0x1000, 64)));
$r = ljprof('report', $a, $mem);
is($r->{rc}, 2, 'a memory profile among CPU ones: exit 2');
like($r->{err}, qr/^ljprof: \Q$mem\E: a memory profile \(memprof\), \Q$a\E is a CPU profile \(sysprof\): only streams of one kind merge$/m,
     'a memory profile among CPU ones: the file and why');
is($r->{out}, '', 'refused: no report');

my $slow = write_file("$dir/slow.bin", symtab(sym_lfunc(0x100, '@hot.lua', 5))
		      . sysprof(3, sp_config(MODE_C, 10000, 0), sp_sample(LFUNC, f_lua(0x100, 7))));
$r = ljprof('report', $a, $slow);
is($r->{rc}, 2, 'another interval: exit 2');
like($r->{err}, qr/^ljprof: \Q$slow\E: sampled every 10000 us, the others every 1000 us/m,
     'another interval: the file and the intervals');
my $wall = write_file("$dir/wall.bin", symtab(sym_lfunc(0x100, '@hot.lua', 5))
		      . sysprof(3, sp_config(MODE_C, 1000, 1), sp_sample(LFUNC, f_lua(0x100, 7))));
$r = ljprof('report', $a, $wall);
is($r->{rc}, 2, 'another clock: exit 2');
like($r->{err}, qr/^ljprof: \Q$wall\E: sampled on wall time, the others on CPU time/m,
     'another clock: the file and the clocks');
my $perf = write_file("$dir/perf.bin", symtab(sym_lfunc(0x100, '@hot.lua', 5))
		      . sysprof(3, sp_config(MODE_C, 1000, 2), sp_sample(LFUNC, f_lua(0x100, 7))));
$r = ljprof('report', $a, $perf);
is($r->{rc}, 0, 'CPU time by a timer and by perf: they merge') or diag $r->{err};

# A damaged stream among several: the rest reported, exit 1, its name said.
my $whole = worker(0x7700000000, 10, 0);
my $cut = write_file("$dir/cut.bin", substr($whole, 0, length($whole) - 25));
$r = ljprof('report', '--format=collapsed', $a, $cut, $b);
is($r->{rc}, 1, 'a damaged stream among three: exit 1');
like($r->{err}, qr/\Aljprof: \Q$cut\E: truncated at offset \d+/, 'a damaged stream: the message names it');
like($r->{out}, qr/^main;\@hot\.lua:7 4\d$/m, 'a damaged stream: what came before its damage merged too');
$r = ljprof('report', $a, "$dir/missing.bin", $b);
is($r->{rc}, 1, 'a missing file among three: exit 1');
like($r->{err}, qr/^ljprof: \S*missing\.bin: No such file or directory$/m, 'a missing file: said');
like($r->{out}, qr/^\Q$b\E: 12 \(25\.0%\)$/m, 'a missing file: the others reported');

# Memory profiles: every event merged by site, what each stream allocated
# and still held; sampled and every-event streams refused.
sub mem_worker {
  my ($base, $n, $keep) = @_;
  my $at = sub { $base + 0x10000 + $_[0] * 0x100 };
  return symtab(sym_lfunc($base + 0x100, '@alloc.lua', 5))
    . memprof_v4((map { ev_alloc(lua($base + 0x100, 7), $at->($_), 100) } 1 .. $n),
		 (map { ev_free(lua($base + 0x100, 9), $at->($_), 100) } $keep + 1 .. $n));
}
my $m1 = write_file("$dir/ljprof-mem-101.bin", mem_worker(0, 30, 10));
my $m2 = write_file("$dir/ljprof-mem-202.bin", mem_worker(0x5500000000, 10, 5));
$r = ljprof('report', $m1, $m2);
is($r->{rc}, 0, 'memory: exit 0') or diag $r->{err};
like($r->{out}, qr/^Totals: 40 allocations \(4000 bytes\).*25 frees \(2500 bytes\); live at the end: 1500 bytes in 15 blocks$/m,
     'memory: the totals of both');
like($r->{out}, qr/^BY PROCESS.*\n\Q$m1\E: 3000 bytes \(75\.0%\), 1000 bytes \(66\.7%\)\n\Q$m2\E: 1000 bytes \(25\.0%\), 500 bytes \(33\.3%\)\n/m,
     'memory: each stream, allocated and in use');
like($r->{out}, qr/^\@alloc\.lua:9: 25 events .*\n\tOverrides:\n\t\t\@alloc\.lua:7: 25 events, 2500 bytes$/m,
     'memory: the frees of both, over the sites of both');
like($r->{out}, qr/^\@alloc\.lua:7 holds 1500 bytes \(100\.0%\) in 15 blocks: 40 allocs, 25 frees$/m,
     'memory: what the site holds in both');
$r = ljprof_json($m1, $m2);
is_deeply($r->{json}{streams}, [{ name => $m1, alloc_bytes => 3000, inuse_bytes => 1000 },
				{ name => $m2, alloc_bytes => 1000, inuse_bytes => 500 }], 'memory json: the streams');
$r = ljprof('report', '--format=collapsed', $m1, $m2);
is($r->{out}, "\@alloc.lua:7 4000\n", 'memory collapsed: the site of both');

sub stack_worker {
  my ($base, $n, $sample) = @_;
  return symtab(sym_lfunc($base + 0x100, '@alloc.lua', 5))
    . memprof_v5(info_config(1, $sample), upd_stack(1, sf_lua($base + 0x100, 7), sf_lua($base + 0x100, 20)),
		 map { ev_stack(1, lua($base + 0x100, 7), 1, $base + 0x10000 + $_ * 0x100, 100) } 1 .. $n);
}
my $s1 = write_file("$dir/stacks-1.bin", stack_worker(0, 30, 0));
my $s2 = write_file("$dir/stacks-2.bin", stack_worker(0x5500000000, 10, 0));
$r = ljprof('report', $s1, $s2);
like($r->{out}, qr/^\t3000 bytes in 30 blocks from \@alloc\.lua:7 <- \@alloc\.lua:20, in \Q$s1\E\n\t1000 bytes in 10 blocks from \@alloc\.lua:7 <- \@alloc\.lua:20, in \Q$s2\E$/m,
     'memory with stacks: each stream\'s stacks under the site, named');
$r = ljprof('report', '--format=collapsed', $s1, $s2);
is($r->{out}, "\@alloc.lua:20;\@alloc.lua:7 4000\n", 'memory with stacks, collapsed: one stack');
$r = ljprof('report', '--format=collapsed', '--root=process', $s1, $s2);
is($r->{out}, "[stream $s1];\@alloc.lua:20;\@alloc.lua:7 3000\n[stream $s2];\@alloc.lua:20;\@alloc.lua:7 1000\n",
   'memory with stacks, --root=process: a stack per stream');

# A stream cut before its events, first: the whole one's pairs go to an
# aggregation that has none yet.
my $s1cut = write_file("$dir/stacks-cut.bin",
		       substr(stack_worker(0, 30, 0), 0, length(symtab(sym_lfunc(0x100, '@alloc.lua', 5))) + 7
			      + length(info_config(1, 0)) + 2));
$r = ljprof('report', '--format=collapsed', $s1cut, $s2, $s1);
is($r->{rc}, 1, 'a cut stream first: exit 1');
is($r->{out}, "\@alloc.lua:20;\@alloc.lua:7 4000\n", 'a cut stream first: the others merged');

my $sampled = write_file("$dir/sampled.bin", stack_worker(0x5500000000, 10, 4096));
$r = ljprof('report', $s1, $sampled);
is($r->{rc}, 2, 'sampled with every event: exit 2');
like($r->{err}, qr/^ljprof: \Q$sampled\E: sampled, the others every event: its events do not add up with theirs$/m,
     'sampled with every event: the file and why');
$r = ljprof('report', $m1, $s1);
is($r->{rc}, 2, 'versions 4 and 5: exit 2');
like($r->{err}, qr/^ljprof: \Q$s1\E: version 5 \(call stacks\), the others version 3 or 4: its events do not add up/m,
     'versions 4 and 5: the file and why');

# pprof: a `stream` label on each sample, for -tags and -tagfocus.
SKIP: {
  skip 'go is not installed (Debian golang-go)', 6 unless `sh -c 'command -v go' 2>/dev/null`;
  my $gohome = tempdir(CLEANUP => 1);
  local @ENV{qw(HOME GOCACHE GOPATH PPROF_TMPDIR GOTOOLCHAIN GOPROXY GOFLAGS)} =
    (map({ mkdir "$gohome/$_"; "$gohome/$_" } qw(home cache gopath pprof)), 'local', 'off', '');
  $r = ljprof('report', '--format=pprof', '-o', "$dir/cpu.pb.gz", $a, $b);
  is($r->{rc}, 0, 'pprof: exit 0');
  my $tags = `go tool pprof -tags $dir/cpu.pb.gz 2>&1`;
  like($tags, qr/stream: Total 48\.0ms\n\s+36\.0ms \(75\.00%\): \Q$a\E\n\s+12\.0ms \(25\.00%\): \Q$b\E\n/,
       'pprof: -tags gives each stream its share') or diag $tags;
  my $top = `go tool pprof -lines -top -tagfocus=stream=cpu-202 $dir/cpu.pb.gz 2>&1`;
  like($top, qr/^\s*10ms\s.*hot\.lua:7/m, 'pprof: -tagfocus keeps one stream\'s samples') or diag $top;
  ljprof('report', '--format=pprof', '-o', "$dir/web.pb.gz", $w1, $w2);
  $top = `go tool pprof -lines -top -tagfocus=host=web-2 $dir/web.pb.gz 2>&1`;
  like($top, qr/^\s*10ms\s.*hot\.lua:7/m, 'pprof: -tagfocus=host keeps one host\'s samples') or diag $top;
  $tags = `go tool pprof -tags $dir/web.pb.gz 2>&1`;
  like($tags, qr/ pid: Total 48\.0ms\n\s+48\.0ms \(  100%\): 4242\n/, 'pprof: pid a string label') or diag $tags;
  ljprof('report', '--format=pprof', '-o', "$dir/mem.pb.gz", $s1, $s2);
  $tags = `go tool pprof -tags -sample_index=inuse_space $dir/mem.pb.gz 2>&1`;
  like($tags, qr/stream: Total .*\n.*\(75\.00%\): \Q$s1\E\n.*\(25\.00%\): \Q$s2\E\n/,
       'pprof, memory with stacks: each stream\'s share') or diag $tags;
}

# diff: each side a set, merged as report merges it.
$r = ljprof('diff', $a, '--', $a, $b);
is($r->{rc}, 0, 'diff of sets: exit 0') or diag $r->{err};
like($r->{out}, qr/^DIFF: \Q$a\E -> \Q$a\E, \Q$b\E \(CPU, cpu, by site\)\nTotal: 36000000 -> 48000000 \(\+12000000\)\n/,
     'diff of sets: the sides and their totals');
like($r->{out}, qr/^GREW\n\+10000000 \(30000000 nanoseconds -> 40000000 nanoseconds\)  \@hot\.lua:7\n\+2000000 .*\@hot\.lua:9\n/m,
     'diff of sets: the hot line of both processes against one');
$r = ljprof('diff', '--by=stack', $m1, $m2, '--', $m1);
like($r->{out}, qr/^SHRANK\n-1000 \(4000 bytes -> 3000 bytes\)  \@alloc\.lua:7\n/m, 'diff of sets, memory: what shrank');
$r = ljprof('diff', $a, '--');
is($r->{rc}, 2, 'diff: nothing after --: exit 2');
like($r->{err}, qr/wants files on both sides of '--'/, 'diff: nothing after --: said');
$r = ljprof('diff', $a, $m1, '--', $b);
is($r->{rc}, 2, 'diff: a side of two kinds: exit 2');
like($r->{err}, qr/^ljprof: \Q$m1\E: a memory profile/m, 'diff: a side of two kinds: the file named');

# Two real processes, the same hot line, one with three times the other's
# samples: 75/25 within a few samples, the line of both summed.
my $lua = <<'LUA';
local ffi = require("ffi")
ffi.cdef("int getpid(void);")
print(ffi.C.getpid())
jit.off()
local function hot(n)
  local x = 0
  for i = 1, n do x = x + i % 7 end
  return x
end
assert(misc.sysprof.start({ mode = "C", interval = 1, path = arg[1] }))
while misc.sysprof.report().samples < tonumber(arg[2]) do hot(20000) end
assert(misc.sysprof.stop())
LUA
my $script = write_file("$dir/hot.lua", $lua);
my @bins = map { "$dir/real-$_.bin" } 1, 2;
my @pids;
for ([0, 300], [1, 100]) {
  my $run = run_program('luajit', $script, $bins[$_->[0]], $_->[1]);
  is($run->{rc}, 0, "real process $_->[0]: exit 0") or diag $run->{err};
  push @pids, $run->{out} =~ /(\d+)/ ? $1 : -1;
}
$r = ljprof_json(@bins);
is($r->{rc}, 0, 'real: exit 0') or diag $r->{err};
my @s = map { $_->{samples} } @{ $r->{json}{streams} || [] };
ok(@s == 2 && abs($s[0] / ($s[0] + $s[1]) - 0.75) < 0.02, "real: shares 75/25 (@s)");
chomp(my $host = `hostname`);
is_deeply([map { [$_->{pid}, $_->{host}] } @{ $r->{json}{streams} || [] }], [map { [$_, $host] } @pids],
	  'real: each stream says its process and host');
my ($line) = grep { $_->{name} eq "\@$script:7" } @{ $r->{json}{lines} || [] };
ok($line && $line->{self} >= 0.9 * ($s[0] + $s[1]), 'real: the hot line holds the samples of both')
  or diag explain $r->{json}{lines};

# Two real processes' memory profiles with call stacks: each stream's
# process, the allocating line of both summed.
my $mem_lua = write_file("$dir/alloc.lua", <<'LUA');
local ffi = require("ffi")
ffi.cdef("int getpid(void);")
print(ffi.C.getpid())
jit.off()
assert(misc.memprof.start({ path = arg[1], stacks = true }))
local keep = {}
for i = 1, tonumber(arg[2]) do keep[i] = { i } end
assert(misc.memprof.stop())
LUA
my @mbins = map { "$dir/real-mem-$_.bin" } 1, 2;
my @mpids;
for ([0, 3000], [1, 1000]) {
  my $run = run_program('luajit', $mem_lua, $mbins[$_->[0]], $_->[1]);
  is($run->{rc}, 0, "real memory profile $_->[0]: exit 0") or diag $run->{err};
  push @mpids, $run->{out} =~ /(\d+)/ ? $1 : -1;
}
$r = ljprof('report', @mbins);
is($r->{rc}, 0, 'real memory: exit 0') or diag $r->{err};
like($r->{out}, qr/^\Q$mbins[0]\E \(pid $mpids[0] on \Q$host\E\): .*\n\Q$mbins[1]\E \(pid $mpids[1] on \Q$host\E\): /m,
     'real memory: each stream with its process');
like($r->{out}, qr/^\@\Q$mem_lua\E:7: 400\d events/m, 'real memory: the allocating line of both, 3000 + 1000 tables');

done_testing();
