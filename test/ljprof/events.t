#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Every event type from every source, counted and charged to the right
# locations, with the right owners ("Overrides") and what stays live.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Stream;
use LJProf::Run;

my $file = scratch_dir() . '/events.bin';
my @ev;
# 20 blocks of 32 bytes at @test.lua:5, 5 of 16 at @a.lua:7.
push @ev, ev_alloc(lua(0x100, 5), 0x10000 + $_ * 0x40, 32) for 0 .. 19;
push @ev, ev_alloc(lua(0x200, 7), 0x20000 + $_ * 0x20, 16) for 0 .. 4;
# The GC frees 2 blocks of @a.lua:7 and 4 of @test.lua:5.
push @ev, ev_free(internal(), 0x20000 + $_ * 0x20, 16) for 0 .. 1;
push @ev, ev_free(internal(), 0x10000 + $_ * 0x40, 32) for 0 .. 3;
# @test.lua:9 grows a block of @test.lua:5; a C function frees it later:
# the owner stays @test.lua:5.
push @ev, ev_realloc(lua(0x100, 9), 0x10400, 32, 0x30000, 64);
push @ev, ev_free(cfunc(0x7000), 0x30000, 64);
# Memory from before the profile: freed by C, reallocated internally.
push @ev, ev_free(cfunc(0x7000), 0xdead00, 100);
push @ev, ev_realloc(internal(), 0xbeef00, 16, 0xbeef80, 48);
# C functions (resolved or not), traces (resolved or not), the VM.
push @ev, ev_alloc(cfunc(0x7000), 0x40000 + $_ * 0x20, 24) for 0 .. 2;
push @ev, ev_alloc(cfunc(0x7777), 0x41000, 8);
push @ev, ev_alloc(trace(1), 0x50000 + $_ * 0x40, 48) for 0 .. 1;
push @ev, ev_realloc(trace(1), 0x50040, 48, 0x50100, 96);
push @ev, ev_free(trace(1), 0x50000, 48);
push @ev, ev_alloc(trace(9), 0x51000, 8);
push @ev, ev_alloc(internal(), 0x60000, 100);
push @ev, ev_realloc(cfunc(0x7000), 0x60000, 100, 0x60200, 200);

my $bin = symtab(sym_lfunc(0x100, '@test.lua', 1), sym_lfunc(0x200, '@a.lua', 3),
                 sym_cfunc(0x7000, 'cmod_alloc'), sym_trace(1, 0x100, 10))
        . memprof(@ev);
write_file($file, $bin);

my $r = ljprof_json($file);
is($r->{rc}, 0, 'a clean stream exits 0');
is($r->{err}, '', 'nothing on stderr');
my %loc = %{ $r->{loc} };

sub loc_is {
  my ($name, $want) = @_;
  my $got = $loc{$name};
  ok($got, "location '$name' is reported") or return;
  for my $k (sort keys %$want) {
    is($got->{$k}, $want->{$k}, "$name: $k = $want->{$k}");
  }
}

loc_is('@test.lua:5', { alloc_events => 20, alloc_bytes => 640, live_blocks => 15,
                        live_bytes => 15 * 32, allocs_freed => 5 });
loc_is('@a.lua:7', { alloc_events => 5, alloc_bytes => 80, live_blocks => 3,
                     live_bytes => 48, allocs_freed => 2 });
loc_is('@test.lua:9', { realloc_events => 1, realloc_new_bytes => 64,
                        realloc_old_bytes => 32, live_blocks => 0 });
loc_is('INTERNAL', { free_events => 6, freed_bytes => 2 * 16 + 4 * 32,
                     realloc_events => 1, realloc_new_bytes => 48,
                     realloc_old_bytes => 16, alloc_events => 1, alloc_bytes => 100,
                     live_blocks => 2, live_bytes => 48 + 200 });
loc_is('cmod_alloc', { alloc_events => 3, alloc_bytes => 72, free_events => 2,
                       freed_bytes => 164, realloc_events => 1,
                       realloc_new_bytes => 200, realloc_old_bytes => 100 });
loc_is('CFUNC 0x7777', { alloc_events => 1, alloc_bytes => 8 });
loc_is('TRACE [1] started at @test.lua:10', { alloc_events => 2, alloc_bytes => 96,
    realloc_events => 1, free_events => 1, freed_bytes => 48, live_blocks => 1,
    live_bytes => 96 });
loc_is('TRACE [9]', { alloc_events => 1, alloc_bytes => 8 });

my %t = %{ $r->{json}{totals} };
is($t{alloc_events}, 20 + 5 + 3 + 1 + 2 + 1 + 1, 'total alloc events');
is($t{free_events}, 6 + 2 + 1, 'total free events');
is($t{realloc_events}, 4, 'total realloc events');
is($r->{json}{kind}, 'memprof', 'kind is memprof');
ok(!exists $r->{json}{error}, 'no error member for a clean stream');

sub overrides {
  my ($name, $kind) = @_;
  return { map { $_->{location} => [$_->{events}, $_->{bytes}] } @{ $loc{$name}{$kind} } };
}
is_deeply(overrides('INTERNAL', 'free_overrides'),
          { '@test.lua:5' => [4, 128], '@a.lua:7' => [2, 32] },
          'GC frees override @test.lua:5 (4 blocks) and @a.lua:7 (2 blocks)');
my $before = 'UNKNOWN (allocated before profiling started)';
is_deeply(overrides('cmod_alloc', 'free_overrides'),
          { '@test.lua:5' => [1, 64], $before => [1, 100] },
          'a free of a reallocated block overrides its original site; unknown memory is marked');
is_deeply(overrides('INTERNAL', 'realloc_overrides'), { $before => [1, 16] },
          'a realloc of memory from before the profile has no known owner');
is_deeply(overrides('@test.lua:9', 'realloc_overrides'), { '@test.lua:5' => [1, 32] },
          'realloc overrides the allocating site');
is_deeply(overrides('cmod_alloc', 'realloc_overrides'), { 'INTERNAL' => [1, 100] },
          'realloc by C of an internal block');

# The text report says the same.
my $text = ljprof('report', $file)->{out};
like($text, qr/^ALLOCATIONS\n\@test\.lua:5: 20 events \(\d+\.\d%\)  Allocated: 640 bytes /m,
     'text: @test.lua:5 leads ALLOCATIONS with 20 events, 640 bytes');
like($text, qr/^DEALLOCATIONS\n(?:.*\n)*?cmod_alloc: 2 events .*Freed: 164 bytes.*\n\tOverrides:\n\t\t\Q$before\E: 1 event, 100 bytes\n\t\t\@test\.lua:5: 1 event, 64 bytes$/m,
     'text: cmod_alloc frees override unknown memory and @test.lua:5, most bytes first');
like($text, qr/^\@a\.lua:7 holds 48 bytes \(\d+\.\d%\) in 3 blocks: 5 allocs, 2 frees$/m,
     'text: HEAP SUMMARY shows 3 blocks live at @a.lua:7');
like($text, qr/^Totals: 33 allocations .* 4 reallocations .* 9 frees /m, 'text: totals line');
for my $section (qw(ALLOCATIONS REALLOCATIONS DEALLOCATIONS), 'HEAP SUMMARY') {
  like($text, qr/^\Q$section\E$/m, "text: section $section");
}
unlike($text, qr/ALIASES/, 'text: no ALIASES without multi-line chunks');

# v4: a trace's allocations charged to the Lua line it runs (source 5),
# and freed elsewhere; the same source in a v3 stream is damage.
my $syms = symtab(sym_lfunc(0x100, '@test.lua', 1), sym_trace(1, 0x100, 10));
my @v4 = (upd_traceloc(0, 1, 0x100, 11), upd_traceloc(1, 1, 0x100, 12),
          (map { ev_alloc(trace_lua(1), 0x70000 + $_ * 0x40, 40) } 0 .. 2),
          ev_alloc(trace_lua(0), 0x72000, 16),
          ev_free(internal(), 0x70000, 40), ev_alloc(trace(1), 0x71000, 8));
my $j4 = ljprof_json(write_file(scratch_dir() . '/v4.bin', $syms . memprof_v4(@v4)));
is($j4->{rc}, 0, 'v4: reads back complete') or diag $j4->{err};
is_deeply([map { $j4->{loc}{$_} ? $j4->{loc}{$_}{alloc_events} : 0 } '@test.lua:12', '@test.lua:11', 'TRACE [1] started at @test.lua:10'],
          [3, 1, 1], 'v4: source 5 is charged to the line its trace location names, source 4 still to its trace');
is($j4->{loc}{'@test.lua:12'}{live_blocks}, 2, 'v4: its blocks are owned by the line');
my $j3 = ljprof_json(write_file(scratch_dir() . '/v3-5.bin', $syms . memprof(@v4)));
is($j3->{rc}, 1, 'source 5 in a v3 stream: damaged, exit 1');
like($j3->{err}, qr/unknown symtab update kind in event header 0x14/, 'source 5 in a v3 stream: says so');

# A trace location used before it is announced, or announced out of
# order: damage, named, with the events before it kept.
my $early = ljprof_json(write_file(scratch_dir() . '/v4-early.bin',
  $syms . memprof_v4(ev_alloc(internal(), 0x73000, 8), ev_alloc(trace_lua(0), 0x70000, 40))));
is($early->{rc}, 1, 'v4, a trace location not announced: damaged, exit 1');
like($early->{err}, qr/event names trace location 0, not announced before/, 'v4, a trace location not announced: says so');
is($early->{json}{totals}{alloc_events}, 1, 'v4, a trace location not announced: the event before it counts');
my $skip = ljprof_json(write_file(scratch_dir() . '/v4-skip.bin',
  $syms . memprof_v4(upd_traceloc(1, 1, 0x100, 12))));
like($skip->{err}, qr/trace location 1 announced where 0 comes next/, 'v4, trace locations out of order: says so');

# v4: the VM's own events of a kind (source 6); the compiler's name the
# trace it compiles and where that starts, whatever is known of it; a
# block they made is owned by them. A proto the symtab does not name
# keeps its address.
my @vm = (ev_alloc(jit(VM_RECORD, 3, 0x100, 11), 0x80000, 100), ev_alloc(jit(VM_RECORD, 3, 0x100, 11), 0x80100, 60),
          ev_realloc(jit(VM_OPT, 3, 0x100, 11), 0x80000, 100, 0x80200, 200),
          ev_alloc(jit(VM_ASM, 0, 0x100, 11), 0x80400, 24), ev_alloc(jit(VM_ASM, 4, 0x900, NO_LINE >> 32), 0x80500, 8),
          ev_alloc(jit(VM_RECORD, 0, 0, NO_LINE >> 32), 0x80600, 8),
          ev_realloc(vm(VM_STACK), 0x81000, 400, 0x82000, 800), ev_alloc(vm(VM_EXIT), 0x83000, 32),
          ev_free(vm(VM_GC), 0x80100, 60));
my $jv = ljprof_json(write_file(scratch_dir() . '/v4-vm.bin', $syms . memprof_v4(@vm)));
is($jv->{rc}, 0, 'v4, the VM\'s own events: read back complete') or diag $jv->{err};
my %want = ('JIT compiler (record): trace 3 at @test.lua:11' => [2, 160, 0, 1, 200],
            'JIT compiler (opt): trace 3 at @test.lua:11' => [0, 0, 1, 0, 0],
            'JIT compiler (asm): trace at @test.lua:11' => [1, 24, 0, 1, 24],
            'JIT compiler (asm): trace 4 at @<unknown proto 0x900> (line ?)' => [1, 8, 0, 1, 8],
            'JIT compiler (record)' => [1, 8, 0, 1, 8],
            'INTERNAL (stack moved)' => [0, 0, 1, 1, 800],
            'INTERNAL (trace exit)' => [1, 32, 0, 1, 32],
            'INTERNAL (GC)' => [0, 0, 0, 0, 0]);
is_deeply({ map { my $l = $jv->{loc}{$_}; ($_ => $l && [@$l{qw(alloc_events alloc_bytes realloc_events live_blocks live_bytes)}]) } keys %want },
          \%want, 'v4, the VM\'s own events: each charged to its kind, the compiler\'s to its trace, blocks owned by them (a realloc keeps its owner)');
my %folded = map { /^(.*) (\d+)$/ ? ($1 => $2) : () }
  split /\n/, ljprof('report', '--format=collapsed', scratch_dir() . '/v4-vm.bin')->{out};
is_deeply(\%folded, {
    'JIT compiler;JIT compiler: trace at @test.lua:11;JIT compiler (record): trace 3 at @test.lua:11' => 160,
    'JIT compiler;JIT compiler: trace at @test.lua:11;JIT compiler (opt): trace 3 at @test.lua:11' => 200,
    'JIT compiler;JIT compiler: trace at @test.lua:11;JIT compiler (asm): trace at @test.lua:11' => 24,
    'JIT compiler;JIT compiler: trace at @<unknown proto 0x900> (line ?);JIT compiler (asm): trace 4 at @<unknown proto 0x900> (line ?)' => 8,
    'JIT compiler;JIT compiler (record)' => 8,
    'INTERNAL (stack moved)' => 800, 'INTERNAL (trace exit)' => 32 },
  'v4, collapsed: the compiler\'s sites under their trace\'s start, under the compiler; the VM\'s kinds alone');
like(ljprof('report', scratch_dir() . '/v4-vm.bin')->{out},
  qr/^Totals: .*\nJIT compiler: 400 bytes allocated \(32\.5%\), 6 events, traces at 2 starts; largest: JIT compiler: trace at \@test\.lua:11 \(384 bytes\)$/m,
  'v4, text: what the compiler allocated and grew in all, and where most');
unlike(ljprof('report', $file)->{out}, qr/^JIT compiler/m, 'text: no compiler line when it allocated nothing');
is($jv->{loc}{'INTERNAL (GC)'}{free_events}, 1, 'v4, a free of the GC\'s (our writer keeps frees source 1): charged to the GC');

# What each location holds at the end: a block allocated where one is
# live (the stream lost its free) takes the place of the old one, which
# its owner no longer holds, big sizes (4 GiB on, kept aside) too; live
# bytes of 2^64 and more saturate as the report's other sums do.
my $gib = 1 << 32;
my $lost = symtab(sym_lfunc(0x100, '@x.lua', 1), sym_lfunc(0x200, '@y.lua', 1)) . memprof(
  ev_alloc(lua(0x100, 2), 0x1000, 10), ev_alloc(lua(0x200, 3), 0x1000, 20),
  ev_alloc(lua(0x100, 2), 0x2000, 5 * $gib), ev_alloc(lua(0x200, 3), 0x2000, 8),
  ev_alloc(lua(0x200, 3), 0x3000, 8), ev_alloc(lua(0x100, 2), 0x3000, 6 * $gib),
  ev_alloc(lua(0x100, 2), 0x4000, 7 * $gib), ev_realloc(lua(0x200, 3), 0x4000, 7 * $gib, 0x1000, 30));
my $jl = ljprof_json(write_file(scratch_dir() . '/lost-free.bin', $lost));
is($jl->{rc}, 0, 'lost frees: read back complete') or diag $jl->{err};
is_deeply([map { [@{ $jl->{loc}{$_} }{qw(live_blocks live_bytes)}] } '@x.lua:2', '@y.lua:3'],
          [[2, 6 * $gib + 30], [1, 8]],
          'lost frees: a block put where one was live replaces it, for its owner too, big sizes as small ones');
my $half = 1 << 63;
my $sat = symtab(sym_lfunc(0x100, '@big.lua', 1)) . memprof(
  (map { ev_alloc(lua(0x100, 2), 0x1000 * $_, $half) } 1 .. 3), ev_alloc(lua(0x100, 3), 0x9000, 16));
my $sl = ljprof('report', write_file(scratch_dir() . '/saturated.bin', $sat))->{out};
like($sl, qr/^\@big\.lua:2 holds 18446744073709551615 bytes \(\d+\.\d%\) in 3 blocks:/m,
     'live bytes past 2^64: saturated');
like($sl, qr/^\@big\.lua:3 holds 16 bytes \(0\.0%\) in 1 block:/m, 'live bytes past 2^64 elsewhere: a small site keeps its own');

done_testing();
