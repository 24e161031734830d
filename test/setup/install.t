#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# make install as a packager runs it, PREFIX=/opt/ljprof-test into a
# DESTDIR: every file under DESTDIR/PREFIX and none elsewhere, luajit.pc
# naming PREFIX. A host built from that luajit.pc alone links with
# `pkg-config --static` (static libluajit, libelf, liblzma, ...) and with
# the shared library, and each runs a profile (LJPROF=mem) whose report
# names the line that allocates.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use File::Find;
use JSON::PP;
use LJProf::Run;

my $build = native_build('its installed tree');
plan skip_all => 'pkg-config is not installed (Debian pkgconf)'
  unless system('command -v pkg-config >/dev/null 2>&1') == 0;

my $dir = scratch_dir();
my $dest = "$dir/dest";
my $prefix = '/opt/ljprof-test';
my $top = "$dest$prefix";

# -- make install ------------------------------------------------------------

my $r = run_make("PREFIX=$prefix", "DESTDIR=$dest", 'install');
is($r->{rc}, 0, 'make install PREFIX=/opt/ljprof-test DESTDIR=...')
  or do { diag "$r->{out}$r->{err}"; done_testing(); exit 1 };

my @outside;
find({ no_chdir => 1, wanted => sub {
  push @outside, $_ if (-f || -l) && index($_, "$top/") != 0;
} }, $dest);
is_deeply(\@outside, [], 'every file is under DESTDIR/PREFIX');
for my $f (qw(bin/ljprof lib/libluajit-5.1.a lib/libluajit-5.1.so.2
              include/luajit-2.1/lua.h include/luajit-2.1/lmisclib.h
              lib/pkgconfig/luajit.pc)) {
  ok(-e "$top/$f", "$f is installed");
}
ok(-l "$top/bin/luajit" && -x "$top/bin/luajit", 'bin/luajit links to the tree\'s luajit');
ok(scalar(glob("$top/share/luajit-*/jit/bc.lua")), 'the jit.* modules are installed');
ok(scalar(glob("$top/share/luajit-*/ljprof/nginx.lua")), 'and ours, ljprof.nginx, beside them');

my $pc = do { local (@ARGV, $/) = "$top/lib/pkgconfig/luajit.pc"; <> } // '';
like($pc, qr/^prefix=\Q$prefix\E$/m, 'luajit.pc: prefix is PREFIX');
unlike($pc, qr/\Q$dest\E/, 'luajit.pc: DESTDIR appears nowhere');
like($pc, qr/^Libs\.private:.* -lelf .*-llzma -lpthread -lm -ldl$/m,
     'luajit.pc: Libs.private names libelf, liblzma, pthread, libm, libdl');

# -- Hosts built from luajit.pc ------------------------------------------------

local $ENV{PKG_CONFIG_PATH} = "$top/lib/pkgconfig";
local $ENV{PKG_CONFIG_SYSROOT_DIR} = $dest;
sub pkg_config {
  my $r = run_program('pkg-config', @_, 'luajit');
  is($r->{rc}, 0, "pkg-config @_ luajit") or diag $r->{err};
  return split ' ', $r->{out};
}
my @static = pkg_config('--static', '--cflags', '--libs');
ok((grep { $_ eq "-I$top/include/luajit-2.1" } @static) &&
   (grep { $_ eq "-L$top/lib" } @static), 'its -I and -L are the installed tree\'s')
  or diag "@static";

my $host = "$FindBin::Bin/host.c";
$r = run_program('cc', '-static', '-o', "$dir/host-static", $host, @static);
is($r->{rc}, 0, 'cc -static host.c $(pkg-config --static --cflags --libs luajit)')
  or diag $r->{err};
like(run_program('readelf', '-d', "$dir/host-static")->{out}, qr/no dynamic section/,
     'the host is static: libluajit-5.1.a is linked in');

# The library's own needs are what --static adds: without them, no link.
my @shared = pkg_config('--cflags', '--libs');
$r = run_program('cc', '-static', '-o', "$dir/host-nostatic", $host, @shared);
isnt($r->{rc}, 0, 'without --static, a static link fails');
like($r->{err}, qr/undefined reference to `g?(?:elf|lzma)_\w+'/,
     'libluajit needs libelf and liblzma');

$r = run_program('cc', '-o', "$dir/host-shared", $host, @shared);
is($r->{rc}, 0, 'cc host.c $(pkg-config --cflags --libs luajit)') or diag $r->{err};

open my $fh, '>', "$dir/alloc.lua" or die $!;
print $fh "local keep = {}\nfor i = 1, 5000 do\n  keep[i] = { i }\nend\n";
close $fh;

for my $kind (qw(static shared)) {
  my $bin = "$dir/mem-$kind.bin";
  local $ENV{LJPROF} = "mem:path=$bin";
  local $ENV{LD_LIBRARY_PATH} = "$top/lib";
  if ($kind eq 'shared') {
    like(run_program('ldd', "$dir/host-shared")->{out},
         qr{libluajit-5\.1\.so\.2 => \Q$top\E/lib/libluajit-5\.1\.so\.2},
         'the shared host loads the installed libluajit');
  }
  $r = run_program("$dir/host-$kind", "$dir/alloc.lua");
  is($r->{rc}, 0, "the $kind host runs the script under LJPROF=mem") or diag $r->{err};
  # Read by the installed ljprof.
  $r = run_program("$top/bin/ljprof", 'report', '--format=json', $bin);
  is($r->{rc}, 0, "the installed ljprof reads the $kind host's profile") or diag $r->{err};
  my $doc = eval { JSON::PP->new->decode($r->{out}) } || {};
  my ($loc) = grep { $_->{location} eq "\@$dir/alloc.lua:3" } @{ $doc->{locations} || [] };
  cmp_ok($loc ? $loc->{alloc_events} : 0, '>=', 5000,
         "$kind host: alloc.lua:3 allocated the 5000 tables");
}

done_testing;
