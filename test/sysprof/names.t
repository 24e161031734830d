#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Native names are true: a PC inside a function gets its name, from the
# object's .symtab, its MiniDebugInfo or its separate debug file; a PC past
# the end of every symbol that could name it is `object+0xOFFSET`, never
# the name of the symbol below it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Lua;
use LJProf::Pace qw(scaled);

my $dir = scratch();

# Leaf frames of collapsed stacks: { name => samples }, and all samples.
sub leaves {
  my ($stacks) = @_;
  my (%leaf, $all);
  while (my ($k, $c) = each %$stacks) {
    my @f = split /;/, $k;
    $leaf{ $f[-1] } += $c;
    $all += $c;
  }
  return (\%leaf, $all || 0);
}

sub share {
  my ($leaf, $re) = @_;
  my $n = 0;
  $n += $leaf->{$_} for grep { $_ =~ $re } keys %$leaf;
  return $n;
}

# -- libc and libm, with their debug symbols (libc6-dbg) -------------------

SKIP: {
  skip 'libc6-dbg is not installed: libc has no function names past .dynsym', 6
    unless system('dpkg-query -W -f=\'${Status}\' libc6-dbg 2>/dev/null | grep -q "ok installed"') == 0;

  my $script = "$dir/libc.lua";
  open my $fh, '>', $script or die $!;
  print $fh <<'LUA';
local big = string.rep("x", 100000)
local needle = string.rep("x", 2000) .. "y"
local n = 0
while misc.sysprof.report().samples < 1000 do
  local s = big .. big
  if not s:find(needle, 1, true) then n = n + 1 end
  n = n + #string.rep("ab", 100000)
end
print(n)
LUA
  close $fh;
  my $out = `timeout @{[ scaled(120) ]} ljprof record --cpu=C --interval=1 -o '$dir/libc.bin' --format=collapsed -- '$script' 2>&1`;
  is($? >> 8, 0, 'libc: recorded') or diag $out;
  my ($stacks) = collapsed("$dir/libc.bin");
  my ($leaf, $all) = leaves($stacks);
  my $mem = share($leaf, qr/^__(mem(cmp|cpy|move|chr|set)|wmem)\w*$/);
  cmp_ok($all, '>=', 50, "libc: enough samples ($all)");
  cmp_ok($mem, '>', 0.5 * $all, "libc: the mem* routines by their own names hold most samples ($mem of $all)")
    or diag explain $leaf;
  ok(!grep({ /__nss_database_lookup/ } keys %$stacks), 'libc: no frame named __nss_database_lookup');

  my $r = run_lua(<<"LUA", timeout => 120);
local sin, x = math.sin, 0
assert(misc.sysprof.start({ mode = "C", interval = 1, path = "$dir/sin.bin" }))
while misc.sysprof.report().samples < 500 do for i = 1, 100000 do x = x + sin(i) end end
assert(misc.sysprof.stop())
print(x)
LUA
  ($stacks) = collapsed("$dir/sin.bin");
  ($leaf, $all) = leaves($stacks);
  my $sin = share($leaf, qr/^(__)?sin(_\w+)?$/);
  cmp_ok($sin, '>', 0.5 * $all, "libm: sin is named sin or __sin_* ($sin of $all)")
    or diag explain $leaf;
  ok(!grep({ /f64xsubf128/ } keys %$stacks), 'libm: no frame named f64xsubf128');
}

# -- Objects of our own: stripped, .symtab, MiniDebugInfo, debug link ------

# spin() is exported; inner(), where the time goes, is static: only the
# object's .symtab (or its MiniDebugInfo) names it.
open my $src, '>', "$dir/tiny.c" or die $!;
print $src <<'C';
static __attribute__((noinline)) double inner(double x, long n) {
  for (long i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
  return x;
}
double spin(long n) { return inner(1.0, n) + 1.0; }
double after(double x) { return x * 2; }
C
close $src;

# The tools for the VM's machine: a cross-build names their prefix
# (LJPROF_CROSS, from the Makefile: aarch64-linux-gnu-).
my $cross = $ENV{LJPROF_CROSS} // '';
my ($cc, $objcopy, $strip) = $cross eq '' ? ('cc', 'objcopy', 'strip') :
  ("${cross}gcc", "${cross}objcopy", "${cross}strip");

sub build_so {
  my ($name, @flags) = @_;
  my $so = "$dir/$name";
  system($cc, '-O1', '-shared', '-fPIC', @flags, '-o', $so, "$dir/tiny.c") == 0
    or die "cc $name failed";
  return $so;
}

# A leaf-frame table of spin() called through the FFI, 500 samples.
sub profile_so {
  my ($so, $tag) = @_;
  my $r = run_lua(<<"LUA", timeout => 120);
local ffi = require("ffi")
ffi.cdef("double spin(long n);")
local lib = ffi.load("$so")
assert(misc.sysprof.start({ mode = "C", interval = 1, path = "$dir/$tag.bin" }))
local x = 0
while misc.sysprof.report().samples < 500 do x = x + lib.spin(100000) end
assert(misc.sysprof.stop())
LUA
  is($r->{rc}, 0, "$tag: ran") or diag $r->{err};
  my ($stacks) = collapsed("$dir/$tag.bin");
  return leaves($stacks);
}

# Profiles $so: inner() must be named in 80% of the samples, and no sample
# may take a neighbour's name. A sample may truly land in spin(), after
# inner() returned (a few instructions a call, about one sample in 2000
# here): 1% of them is allowed; a name taken by inner's code would be 80%.
sub inner_named {
  my ($so, $tag, $what) = @_;
  my ($leaf, $all) = profile_so($so, $tag);
  cmp_ok($leaf->{inner} || 0, '>', 0.8 * $all, "$what: inner() is named ($all samples)")
    or diag explain $leaf;
  cmp_ok(share($leaf, qr/^(spin|after)$/), '<=', 0.01 * $all,
         "$what: no sample takes a neighbour's name");
}

{
  my ($leaf, $all) = profile_so(build_so('libtiny-stripped.so', '-s'), 'stripped');
  my $off = share($leaf, qr/^libtiny-stripped\.so\+0x[0-9a-f]+$/);
  cmp_ok($off, '>', 0.8 * $all, "stripped: inner() is libtiny-stripped.so+0x... ($off of $all)")
    or diag explain $leaf;
  cmp_ok(share($leaf, qr/^(spin|after)$/), '<=', 0.01 * $all,
         'stripped: no sample takes a neighbour\'s name');
}

inner_named(build_so('libtiny-symtab.so'), 'symtab', 'symtab');

SKIP: {
  # MiniDebugInfo as distributions build it: the functions .dynsym lacks, in
  # the .symtab of an xz-compressed ELF in .gnu_debugdata of a stripped object.
  my $so = build_so('libtiny-mini.so');
  my $mini = "$dir/mini.debug";
  my $ok = system("$objcopy --only-keep-debug '$so' '$mini' && " .
                  "$objcopy -S --keep-symbol=inner '$mini' '$mini.1' && " .
                  "xz -f '$mini.1' && $strip --strip-all '$so' && " .
                  "$objcopy --add-section .gnu_debugdata='$mini.1.xz' '$so'") == 0;
  skip 'binutils or xz could not build a MiniDebugInfo section', 3 unless $ok;
  inner_named($so, 'minidebuginfo', 'MiniDebugInfo');
}

SKIP: {
  # A separate debug file beside the object, named (and CRC'd) by its
  # .gnu_debuglink: no build-id, so the link alone finds it.
  my $so = build_so('libtiny-link.so', '-Wl,--build-id=none');
  my $ok = system("$objcopy --only-keep-debug '$so' '$dir/libtiny-link.debug' && " .
                  "$strip --strip-all '$so' && cd '$dir' && " .
                  "$objcopy --add-gnu-debuglink=libtiny-link.debug '$so'") == 0;
  skip 'binutils could not split a debug file off', 3 unless $ok;
  inner_named($so, 'debuglink', '.gnu_debuglink');
}

# The functions of each object are read once per process: a second
# profile, and one in a forked child, write the first one's symbols byte
# for byte (nothing new was loaded or compiled in between). C symbols
# follow the header, written by the drain thread: the streams are
# compared up to their statistics record, which holds the run's length
# (with no sample taken: the record type, 13 zeros, that ULEB, no label
# set folded, the end),
# and without their process record (its pid and clock are the run's).
{
  my $r = run_lua(<<"LUA");
jit.off()
local ffi = require("ffi")
ffi.cdef("int fork(void); int waitpid(int pid, int *status, int options);")
local function prof(path)
  assert(misc.sysprof.start({ mode = "C", interval = 10, path = path }))
  assert(misc.sysprof.stop())
end
local function past_uleb(s, i)
  while s:byte(i) >= 128 do i = i + 1 end
  return i + 1
end
local function without_process(s)
  local config = s:find("ljp\4\0\0\0", 1, true) + 7
  local at = past_uleb(s, past_uleb(s, past_uleb(s, config + 1)))
  assert(s:byte(at) == 23, "the process record after the config record")
  local host = past_uleb(s, at + 1)
  return s:sub(1, at - 1) .. s:sub(past_uleb(s, host + 1 + s:byte(host)))
end
local function symtab(path)
  local f = assert(io.open(path, "rb"))
  local s = without_process(f:read("*a"))
  f:close()
  return s:match("^(.-)\\15" .. ("%z"):rep(13) .. "[\\128-\\255]*[\\1-\\127]%z\\128\$") or ""
end
prof("$dir/first.bin")
prof("$dir/second.bin")
local pid = ffi.C.fork()
if pid == 0 then prof("$dir/child.bin") os.exit(0) end
ffi.C.waitpid(pid, nil, 0)
local first = symtab("$dir/first.bin")
print(#first > 1000, symtab("$dir/second.bin") == first, symtab("$dir/child.bin") == first)
LUA
  is($r->{rc}, 0, 'twice: ran') or diag $r->{err};
  is($r->{out}, "true\ttrue\ttrue\n", 'twice: the second profile and a forked child\'s write the same symbol table');
}

done_testing();
