#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# luajit -t<tool> (ljprof -t<tool>), the reference's tools flag: -tm's
# sections, sizes and heap summary, -ts's collapsed stacks, their options,
# the reference's error lines and exit statuses; luajit hands its command
# line to the ljprof beside it, and says so when there is none.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Copy qw(copy);
use Test::More;
use LJProf::Stream;
use LJProf::Run;
use LJProf::Lua;

my $dir = scratch_dir();
my $chunk = "local s = ...\nreturn s";

# Two blocks of 2 KiB at @test.lua:5, one grown to 4 KiB at line 9 (its
# owner stays line 5); 2585 bytes at line 6, freed by the GC; 1 MiB in a
# chunk loaded from a string; a C function frees memory from before the
# profile.
my $mem = write_file("$dir/mem.bin",
  symtab(sym_lfunc(0x100, '@test.lua', 1), sym_lfunc(0x300, $chunk, 0),
         sym_cfunc(0x7000, 'cmod_alloc'))
  . memprof(ev_alloc(lua(0x100, 5), 0x1000, 2048), ev_alloc(lua(0x100, 5), 0x2000, 2048),
            ev_alloc(lua(0x100, 6), 0x3000, 2585), ev_alloc(lua(0x300, 2), 0x4000, 1048576),
            ev_realloc(lua(0x100, 9), 0x1000, 2048, 0x5000, 4096),
            ev_free(internal(), 0x3000, 2585), ev_free(cfunc(0x7000), 0x9000, 100)));

my $heap = <<"EOF";
HEAP SUMMARY:
CHUNK 1:2 holds 1048576B: 1 allocs, 0 frees
\@test.lua:5 holds 6144B: 2 allocs, 0 frees

ALIASES:
CHUNK 1:
1\t| local s = ...
2\t| return s

EOF
my $r = run_program('luajit', '-tm', $mem);
is($r->{rc}, 0, '-tm: exit 0');
is($r->{err}, '', '-tm: nothing on stderr');
is($r->{out}, <<"EOF" . $heap, '-tm: every section, most events first, sizes in bytes');
ALLOCATIONS
\@test.lua:5: 2 events\t+4096B\t-0B
CHUNK 1:2: 1 events\t+1048576B\t-0B
\@test.lua:6: 1 events\t+2585B\t-0B

REALLOCATIONS
\@test.lua:9: 1 events\t+4096B\t-2048B
\tOverrides:
\t\t\@test.lua:5


DEALLOCATIONS
INTERNAL: 1 events\t+0B\t-2585B
\tOverrides:
\t\t\@test.lua:6

cmod_alloc: 1 events\t+0B\t-100B
\tOverrides:
\t\tUNKNOWN (allocated before profiling started)


EOF

$r = run_program('luajit', '-tm', '--leak-only', $mem);
is($r->{out}, $heap, '--leak-only: the heap summary alone');

$r = run_program('luajit', '-tm', '--human-readable', $mem);
like($r->{out}, qr/^\@test\.lua:5: 2 events\t\+4KiB\t-0B$/m, '--human-readable: whole KiB');
like($r->{out}, qr/^\@test\.lua:6: 1 events\t\+2\.52KiB\t-0B$/m, '--human-readable: two decimals');
like($r->{out}, qr/^CHUNK 1:2: 1 events\t\+1MiB\t-0B$/m, '--human-readable: MiB');
like($r->{out}, qr/^cmod_alloc: 1 events\t\+0B\t-100B$/m, '--human-readable: below 1 KiB in B');
like($r->{out}, qr/^\@test\.lua:5 holds 6KiB: 2 allocs, 0 frees$/m, '--human-readable: heap summary');
$r = run_program('luajit', '-tm', $mem, '--human-readable', '--leak-only');
like($r->{out}, qr/\AHEAP SUMMARY:\nCHUNK 1:2 holds 1MiB/, 'options after FILE count too');

# -ts: a sysprof v3 stream as collapsed stacks, most samples first.
my $sys = write_file("$dir/sys.bin",
  symtab(sym_lfunc(0x100, '@a.lua', 1), sym_cfunc(0x401000, 'main'), sym_cfunc(0x402000, 'lua_pcall'))
  . sysprof(3, sp_config(MODE_C, 10000, 0),
            (sp_sample(LFUNC, f_lua(0x100, 3), f_native(0x402010), f_native(0x401050))) x 3,
            sp_sample(LFUNC, f_lua(0x100, 4), f_native(0x402010), f_native(0x401050)),
            sp_stats(4, [0, 4], 0, 0, 40_000_000)));
$r = run_program('luajit', '-ts', $sys);
is($r->{rc}, 0, '-ts: exit 0');
is($r->{out}, "main;lua_pcall;\@a.lua:3 3\nmain;lua_pcall;\@a.lua:4 1\n", '-ts: collapsed stacks');

# The reference's error lines: on stderr, exit 1.
sub fails_with {
  my ($args, $pattern, $what) = @_;
  my $r = run_program('luajit', @$args);
  is($r->{rc}, 1, "$what: exit 1");
  like($r->{err}, $pattern, "$what: says so");
}
write_file("$dir/data.bin", 'data');
write_file("$dir/cut.bin", substr(file_bytes($mem), 0, index(file_bytes($mem), 'ljm')));
write_file("$dir/damaged.bin", substr(file_bytes($mem), 0, -3));
for my $tool ('-tm', '-ts') {
  fails_with([$tool, "$dir/missing.bin"],
             qr/\AFailed to open \S+missing\.bin\.\n\tfopen, errno: 2 \(No such file or directory\)\n\z/,
             "$tool, a missing file");
  fails_with([$tool, "$dir/data.bin"],
             qr/\AFailed to parse symtab from \S+data\.bin\.\n\tnot a profile: /, "$tool, not a profile");
  fails_with([$tool, "$dir/cut.bin"],
             qr/\AFailed to parse profile data from \S+cut\.bin\.\n\ttruncated at offset \d+: /,
             "$tool, a symbol table alone");
}
fails_with(['-tm', $sys], qr/\ta sysprof stream, not a memprof one: read it with -ts\n\z/,
           '-tm, a sysprof stream');
fails_with(['-ts', $mem], qr/\ta memprof stream, not a sysprof one: read it with -tm\n\z/,
           '-ts, a memprof stream');
$r = run_program('luajit', '-tm', "$dir/damaged.bin");
is($r->{rc}, 1, 'a damaged stream: exit 1');
like($r->{err}, qr/\AFailed to parse profile data from \S+damaged\.bin\.\n\ttruncated at offset \d+/,
     'a damaged stream: says where');
like($r->{out}, qr/^ALLOCATIONS\n\@test\.lua:5: 2 events/,
     'a damaged stream: what came before the damage is reported');

# Command lines: exit 2.
sub usage_is {
  my ($args, $pattern, $what) = @_;
  my $r = run_program('luajit', @$args);
  is($r->{rc}, 2, "$what: exit 2");
  like($r->{err}, $pattern, "$what: says so");
  is($r->{out}, '', "$what: nothing on stdout");
}
my $tools = qr/\nAvailable tools:\n  luajit -tm \[--leak-only\] \[--human-readable\] FILE\n  luajit -ts FILE\n/;
usage_is(['-t', $mem], qr/\Aluajit -t: which tool\?$tools/, '-t alone');
usage_is(['-ta', $mem], qr/\Aluajit -ta: unknown tool 'a'$tools/, 'an unknown tool');
usage_is(['-tm', '--wrong', $mem], qr/\Aluajit -tm: unrecognized option '--wrong'/, '-tm, an unknown option');
usage_is(['-ts', '--leak-only', $sys], qr/\Aluajit -ts: unrecognized option '--leak-only'/,
         "-ts, a memprof option");
usage_is(['-tm'], qr/\Aluajit -tm: no FILE given/, '-tm, no FILE');
usage_is(['-ts', $sys, $sys], qr/one FILE at a time/, '-ts, two files');

$r = run_program('luajit', '-tm', '--help');
is($r->{rc}, 0, '-tm --help: exit 0');
like($r->{out}, qr/\AUsage: luajit -tm \[--leak-only\] \[--human-readable\] FILE\n/, '-tm --help: usage');
like($r->{out}, qr/^  --leak-only .*\n  --human-readable /m, '-tm --help: its options');
$r = run_program('luajit', '-ts', '-h');
like($r->{out}, qr/\AUsage: luajit -ts FILE\n.*collapsed stacks/s, '-ts -h: usage');

# Where the tools are named.
$r = run_program('luajit', '-h');
like($r->{err}, qr/^  -tm \.\.\. .*memprof.*\n  -ts \.\.\. .*sysprof/m, "luajit's usage lists -tm and -ts");
$r = ljprof('--help');
like($r->{out}, qr/^       ljprof -t<tool> \[OPTIONS\] FILE$/m, 'ljprof --help: the -t synopsis');
like($r->{out}, qr/^  -tm .*memprof.*\n(?: {13}.*\n)*  -ts .*sysprof/m, 'ljprof --help lists -tm and -ts');
$r = ljprof('-tm', $mem);
like($r->{out}, qr/\AALLOCATIONS\n/, 'ljprof -tm is the same tool');
like(ljprof('-ts', '--bad', $sys)->{err}, qr/\Aljprof -ts: unrecognized option/,
     'ljprof -t names itself ljprof');

# luajit runs the ljprof of its own directory: alone, it says what it needs.
copy(`which luajit` =~ s/\n//r, "$dir/luajit") or die "copy: $!";
chmod 0755, "$dir/luajit";
$r = run_program("$dir/luajit", '-tm', $mem);
is($r->{rc}, 1, 'luajit without ljprof beside it: exit 1');
like($r->{err}, qr{\A\S*luajit: -t needs ljprof beside luajit: \Q$dir\E/ljprof: No such file or directory\n\z},
     'luajit without ljprof beside it: says which file it needs');

# End to end: a profile the VM wrote, read by the tool.
my $run = run_lua(<<'EOF', args => ["$dir/vm.bin"]);
jit.off()
assert(misc.memprof.start(arg[1]))
local t = {}
for i = 1, 100 do t[i] = string.rep("x", 100 + i) end
assert(misc.memprof.stop())
EOF
is($run->{rc}, 0, 'the VM wrote a memprof stream') or diag($run->{err});
$r = run_program('luajit', '-tm', '--leak-only', "$dir/vm.bin");
# 100 strings of 101 to 200 bytes, and the table's array part.
my ($bytes, $allocs) = $r->{out} =~ /^\@\Q$run->{script}\E:4 holds (\d+)B: (\d+) allocs, 0 frees$/m;
ok(defined $allocs && $allocs >= 100 && $bytes >= 100 * 100 + 5050,
   'luajit -tm --leak-only: the line that holds the strings') or diag($r->{out});

done_testing();

sub file_bytes {
  my ($path) = @_;
  open my $fh, '<:raw', $path or die "$path: $!";
  local $/;
  return scalar <$fh>;
}
