#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# format = "v2": the reference's sysprof stream, written by our VM, byte by
# byte as its grammar has it (read here by a strict reader of our own), and
# read by ljprof and by the reference's own parser (tools/sysprof.lua of
# ../shared/upstreams/tarantool-luajit-tests-*.tar.gz, unpacked under the
# build directory for this run), in modes C, L and D, with the JIT off and
# on.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use File::Temp qw(tempdir);
use LJProf::Lua;
use LJProf::Run;

use constant { LFUNC => 1, FFUNC => 2, CFUNC => 3, TRACE => 9 };

# -- A strict reader of ljs v3 + ljp v2 --------------------------------------

# { samples => [{ state, lua => [[tag, a, b]], host => [addr], trace }],
#   first => {proto => first line}, chunk => {proto => chunk}, after => ljp
#   payload } or { error }.
sub read_v2 {
  my ($bin) = @_;
  my $pos = 0;
  my %r = (samples => [], first => {}, chunk => {}, traces => {});
  my $byte = sub {
    die "cut at $pos\n" if $pos >= length $bin;
    return ord substr($bin, $pos++, 1);
  };
  my $uleb = sub {
    my ($v, $shift) = (0, 0);
    while (1) {
      my $b = $byte->();
      $v |= ($b & 0x7f) << $shift;
      $shift += 7;
      return $v unless $b & 0x80;
    }
  };
  my $str = sub {
    my $n = $uleb->();
    die "cut string at $pos\n" if $pos + $n > length $bin;
    $pos += $n;
    return substr($bin, $pos - $n, $n);
  };
  my $proto = sub { my $a = $uleb->(); $r{chunk}{$a} = $str->(); $r{first}{$a} = $uleb->() };
  my $trace = sub { my $no = $uleb->(); $r{traces}{$no} = [$uleb->(), $uleb->()] };
  my $prologue = sub {
    my ($magic) = @_;
    die "no $magic prologue at $pos\n" unless substr($bin, $pos, 7) eq $magic;
    $pos += 7;
  };
  my $ok = eval {
    $prologue->("ljs\x03\0\0\0");
    while (1) {
      my $h = $byte->();
      last if $h & 0x80;
      my $type = $h & 3;
      if ($type == 0) { $proto->() }
      elsif ($type == 1) { $uleb->(); $str->() }
      elsif ($type == 2) { $trace->() }
      else { die "symtab entry type 3 at $pos\n" }
    }
    $prologue->("ljp\x02\0\0\0");
    $r{after} = substr($bin, $pos);
    while (1) {
      my $rec = $byte->();
      if ($rec == 0x80) { die "bytes after the end\n" if $pos != length $bin; last }
      if ($rec == 10) { $proto->(); next }
      if ($rec == 11) { $uleb->(); $str->(); next }
      if ($rec == 12) { $trace->(); next }
      die "record $rec at $pos\n" if $rec > TRACE;
      my %s = (state => $rec, lua => [], host => []);
      push @{ $r{samples} }, \%s;
      if ($rec == TRACE) { $s{trace} = [$uleb->(), $uleb->(), $uleb->()]; next }
      if ($rec >= LFUNC && $rec <= CFUNC) {
        while ((my $tag = $byte->()) != 0x80) {
          die "frame tag $tag at $pos\n" if $tag < 1 || $tag > 3;
          push @{ $s{lua} }, [$tag, $uleb->(), $tag == 1 ? $uleb->() : undef];
        }
      }
      while ((my $addr = $uleb->()) != 0) { push @{ $s{host} }, $addr }
    }
    1;
  };
  return $ok ? \%r : { error => $@ };
}

# -- The reference's parser --------------------------------------------------

my $build = $ENV{LJPROF_BUILD_DIR} // "$FindBin::Bin/../../build";
my ($tgz) = $ENV{LJPROF_REFERENCE_TGZ} // glob("$FindBin::Bin/../../../shared/upstreams/tarantool-luajit-tests-*.tar.gz");
my $tools;
if (defined $tgz && -f $tgz) {
  my $dir = tempdir('reference-XXXXXX', DIR => $build, CLEANUP => 1);
  system('tar', '-xzf', $tgz, '-C', $dir, '--strip-components=1', '--wildcards', '*/tools/*') == 0
    or BAIL_OUT("cannot unpack $tgz");
  $tools = "$dir/tools";
}

# { rc, err, stacks => { chain => count } } of tools/sysprof.lua on a file.
sub reference_parse {
  my ($file) = @_;
  local $ENV{LUA_PATH} = "$tools/?.lua;;";
  my $out = `luajit -e 'require("sysprof")({ "$file" })' 2>'$file.err'`;
  my %r = (rc => $? >> 8, err => LJProf::Lua::slurp("$file.err"), stacks => {});
  for (split /\n/, $out) { $r{stacks}{$1} += $2 if /^(.*)\t(\d+)$/ }
  return \%r;
}

sub sum { my $n = 0; $n += $_ for @_; return $n }

# -- Profiles ----------------------------------------------------------------

# The payload runs in a coroutine. The reference's parser places the Lua
# stack of a sample at the first lua_pcall or lua_call of its host stack,
# from the bottom up to the first C function, and drops one Lua frame for
# each lua_cpcall: in the standalone interpreter the stack of the main
# coroutine starts with the C function pmain, which lua_cpcall entered, and
# that parser shows none of its Lua frames. A coroutine's stack starts with
# a Lua function.
sub profile {
  my ($mode, $jit) = @_;
  my $bin = scratch() . "/v2-$mode-$jit.bin";
  my $run = run_lua(<<"LUA", timeout => 120);
jit.$jit()
local function fib(n)
  if n <= 1 then return n end
  return fib(n - 1) + fib(n - 2)
end
local function hot()
  while misc.sysprof.report().samples < 1000 do
    fib(22) end
end
assert(misc.sysprof.start({ mode = "$mode", interval = 1, path = "$bin", format = "v2" }))
coroutine.wrap(hot)()
assert(misc.sysprof.stop())
print(misc.sysprof.report().samples)
LUA
  is($run->{rc}, 0, "mode $mode, JIT $jit: payload ran") or diag $run->{err};
  chomp $run->{out};
  open my $fh, '<:raw', $bin or die "$bin: $!";
  local $/;
  my $bytes = <$fh>;
  return ($bin, $bytes, $run);
}

# Protos of the script by first line: fib 2, hot 6.
sub script_protos {
  my ($s, $script) = @_;
  my %by;
  for my $a (keys %{ $s->{chunk} }) {
    $by{ $s->{first}{$a} } = $a if $s->{chunk}{$a} eq "\@$script";
  }
  return \%by;
}

for my $mode ('C', 'L') {
  my ($bin, $bytes, $run) = profile($mode, 'off');
  my $s = read_v2($bytes);
  ok(!$s->{error}, "mode $mode: the stream is ljs v3 + ljp v2, every record as v2 has it")
    or diag $s->{error};
  next if $s->{error};
  my @samples = @{ $s->{samples} };
  my $n = @samples;
  cmp_ok($n, '>=', 100, "mode $mode: samples in the stream ($n)");
  cmp_ok($n, '>=', 0.95 * $run->{out}, "mode $mode: nearly all that report() counted ($run->{out})");
  my $pt = script_protos($s, $run->{script});
  ok($pt->{2} && $pt->{6}, 'fib (line 2) and hot (line 6) are in the symbol table');
  my @lua = grep { $_->{state} == LFUNC } @samples;
  cmp_ok(scalar @lua, '>=', 0.8 * $n, "mode $mode: LFUNC samples (" . @lua . ')');
  my @lines = map { [$_->[1], $_->[2]] } grep { $_->[0] == 1 } map { @{ $_->{lua} } } @samples;
  is(scalar(grep { !exists $s->{first}{ $_->[0] } || $_->[1] != $s->{first}{ $_->[0] } } @lines), 0,
     "mode $mode: each of " . @lines . " Lua frames is at its function's first line");
  # The coroutine's whole Lua stack: fib innermost, hot at the bottom.
  my $shape = grep {
    my @f = @{ $_->{lua} };
    @f >= 2 && $f[0][0] == 1 && $f[0][1] == $pt->{2} && $f[-1][0] == 1 && $f[-1][1] == $pt->{6}
      && !grep { $_->[0] != 1 || ($_->[1] != $pt->{2} && $_->[1] != $pt->{6}) } @f
  } @lua;
  cmp_ok($shape, '>=', 0.9 * @lua, "mode $mode: LFUNC samples with fib ... hot as their Lua stack ($shape)");
  my @nhost = map { scalar @{ $_->{host} } } @samples;
  if ($mode eq 'L') {
    is(scalar(grep { $_ != 1 } @nhost), 0, 'mode L: one native frame in every sample, the innermost');
  } else {
    cmp_ok(scalar(grep { $_ >= 5 } @nhost), '>=', 0.95 * $n, 'mode C: the native stack in every sample');
  }

  my ($stacks, $rc) = collapsed($bin);
  is($rc, 0, "mode $mode: ljprof reads it");
  is(sum(values %$stacks), $n, "mode $mode: ljprof counts every sample");
  my $src = quotemeta('@' . $run->{script});
  my $hot = sum(map { $stacks->{$_} } grep { /;$src:6;$src:2(;|$)/ && /$src:2$/ } keys %$stacks);
  cmp_ok($hot, '>=', 0.8 * $n, "mode $mode: ljprof names fib, under hot, innermost ($hot of $n)");
  if ($mode eq 'C') {
    my $vm = sum(map { $stacks->{$_} } grep { /(^|;)main;.*;lua_pcall;.*;lj_(BC|vm|ff)_\w+;$src:6;/ } keys %$stacks);
    cmp_ok($vm, '>=', 0.8 * $n, "mode C: the native frames run from main through lua_pcall and the interpreter's own ($vm)");
  }

  SKIP: {
    skip 'no ../shared/upstreams/tarantool-luajit-tests-*.tar.gz: the reference parser is not at hand', 4
      unless $tools;
    my $ref = reference_parse($bin);
    ok($ref->{rc} == 0 && $ref->{err} eq '', "mode $mode: the reference's parser reads it") or diag $ref->{err};
    is(sum(values %{ $ref->{stacks} }), $n, "mode $mode: the reference's parser counts every sample");
    if ($mode eq 'C') {
      my $named = sum(map { $ref->{stacks}{$_} } grep { /lua_pcall:0x[0-9a-f]+;$src:6;$src:2;/ } keys %{ $ref->{stacks} });
      cmp_ok($named, '>=', 0.8 * $n, "mode C: the reference's parser names fib under hot, at lua_pcall ($named of $n)");
      my %lines = map { $_ => 1 } map { /$src:(\d+)/g } keys %{ $ref->{stacks} };
      is_deeply([sort keys %lines], [2, 6], 'mode C: fib and hot by their first lines, no other line');
    } else {
      # That parser places Lua frames only at a lua_pcall among the native
      # ones: a leaf sample shows its native frame alone.
      my $one = sum(map { $ref->{stacks}{$_} } grep { /^[^;@]+;$/ } keys %{ $ref->{stacks} });
      is($one, $n, 'mode L: the reference\'s parser shows the native leaf of every sample');
      my $vm = sum(map { $ref->{stacks}{$_} } grep { /^lj_(BC|vm|ff)_\w+:0x/ } keys %{ $ref->{stacks} });
      cmp_ok($vm, '>=', 0.8 * $n, "mode L: mostly the interpreter's code ($vm)");
    }
  }
}

{ # Mode D: counts only; v2 has nowhere to put them.
  my ($bin, $bytes, $run) = profile('D', 'off');
  my $s = read_v2($bytes);
  ok(!$s->{error}, 'mode D: the stream is ljs v3 + ljp v2') or diag $s->{error};
  is($s->{after}, "\x80", 'mode D: nothing after the ljp v2 prologue but the end');
  cmp_ok($run->{out}, '>=', 100, "mode D: report() counted the samples ($run->{out})");
  my $r = ljprof('report', $bin);
  is($r->{rc}, 0, 'mode D: ljprof reads it');
  like($r->{out}, qr/^Stream: sysprof v2 .*\nSamples: 0 /m, 'mode D: ljprof: a v2 stream without samples');
  SKIP: {
    skip 'no ../shared/upstreams/tarantool-luajit-tests-*.tar.gz: the reference parser is not at hand', 2
      unless $tools;
    my $ref = reference_parse($bin);
    is($ref->{rc}, 0, "mode D: the reference's parser reads it") or diag $ref->{err};
    is_deeply($ref->{stacks}, {}, "mode D: and finds no sample");
  }
}

{ # The JIT on: a trace is its number, start proto and that one's first line.
  my ($bin, $bytes, $run) = profile('C', 'on');
  my $s = read_v2($bytes);
  ok(!$s->{error}, 'JIT on: the stream is ljs v3 + ljp v2') or diag $s->{error};
  my @tr = grep { $_->{state} == TRACE } @{ $s->{samples} || [] };
  my $n = @{ $s->{samples} || [] };
  cmp_ok($n, '>=', 100, "JIT on: samples in the stream ($n)");
  cmp_ok(scalar @tr, '>=', 0.5 * $n, 'JIT on: TRACE samples (' . @tr . " of $n)");
  my $pt = script_protos($s, $run->{script});
  is(scalar(grep { !$s->{traces}{ $_->{trace}[0] } || $_->{trace}[2] != ($s->{first}{ $_->{trace}[1] } // -1) } @tr), 0,
     'JIT on: each names a trace announced, and its start proto at its first line');
  cmp_ok(scalar(grep { $_->{trace}[1] == $pt->{2} || $_->{trace}[1] == $pt->{6} } @tr), '>=', 0.9 * @tr,
     "JIT on: the traces start in fib or hot");
  my ($stacks, $rc) = collapsed($bin);
  is($rc, 0, 'JIT on: ljprof reads it');
  my $src = quotemeta('@' . $run->{script});
  is(sum(map { $stacks->{$_} } grep { /^TRACE \[\d+\] $src:[26]$/ } keys %$stacks), scalar @tr,
     'JIT on: ljprof shows each trace sample as the trace alone');
  SKIP: {
    skip 'no ../shared/upstreams/tarantool-luajit-tests-*.tar.gz: the reference parser is not at hand', 2
      unless $tools;
    my $ref = reference_parse($bin);
    is($ref->{rc}, 0, "JIT on: the reference's parser reads it") or diag $ref->{err};
    is(sum(values %{ $ref->{stacks} }), $n, "JIT on: the reference's parser counts every sample");
  }
}

done_testing;
