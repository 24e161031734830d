#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# make deb's package serves nginx (docs/nginx.md): it holds the build's
# library and OpenResty's flavour, each in a directory of its own with the
# soname libluajit-5.1.so.2, the second with the API nginx's Lua module
# needs (lua_setexdata). Extracted (dpkg-deb -x, no root needed), Debian's
# nginx with its Lua module runs on the package's OpenResty library the
# way the docs' systemd drop-in starts it (LD_LIBRARY_PATH, LJPROF, and
# env LJPROF; in nginx.conf): each worker serves and writes a CPU profile
# that the package's ljprof reads, the handler's line on top.
# LJPROF_DEB=FILE takes that package instead of building one.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use File::Temp qw(tempdir);
use LJProf::Run;
use LJProf::Nginx;

my $build = native_build('its package');
plan skip_all => 'dpkg-deb is not installed (not a Debian machine)'
  unless system('command -v dpkg-deb >/dev/null 2>&1') == 0;

my $arch = `dpkg --print-architecture`;
chomp $arch;
my $deb = $ENV{LJPROF_DEB};
unless ($deb) {
  my $r = run_make('deb');
  is($r->{rc}, 0, 'make deb') or do { diag "$r->{out}$r->{err}"; done_testing(); exit 1 };
  ($deb) = glob("$build/ljprof_*_$arch.deb");
}
ok($deb && -f $deb, "the package: " . ($deb // 'none')) or do { done_testing(); exit 1 };

# Readable by nginx's workers (nobody), as /usr/lib is.
my $root = tempdir(CLEANUP => 1);
chmod 0755, $root;
my $r = run_program('dpkg-deb', '-x', $deb, $root);
is($r->{rc}, 0, 'dpkg-deb -x') or diag $r->{err};
my $prefix = "$root/usr/lib/ljprof";
my $or = "$prefix/openresty";

# -- Two libraries, one soname, a directory each -------------------------------

sub soname {
  my ($lib) = @_;
  return run_program('readelf', '-d', $lib)->{out} =~ /\(SONAME\)\s+Library soname: \[(.+)\]/
    ? $1 : '';
}
sub exports {
  my ($lib, $sym) = @_;
  return run_program('nm', '-D', '--defined-only', $lib)->{out} =~ /\s[TW] \Q$sym\E$/m;
}
my %lib = (build => "$prefix/lib/libluajit-5.1.so.2", openresty => "$or/lib/libluajit-5.1.so.2");
for my $which (sort keys %lib) {
  ok(-f $lib{$which}, "the $which library: /usr/lib/ljprof" . substr($lib{$which}, length $prefix));
  is(soname($lib{$which}), 'libluajit-5.1.so.2', "the $which library's soname is libluajit-5.1.so.2");
}
isnt(`cmp -s '$lib{build}' '$lib{openresty}' && echo same`, "same\n", 'they are two libraries');
ok(exports($lib{openresty}, 'lua_setexdata'),
   'the OpenResty library exports lua_setexdata (nginx\'s Lua module needs it)');
ok(exports($lib{openresty}, 'luaM_sysprof_start'), 'and our profilers\' API');
my $flavour = `'$FindBin::Bin/../../scripts/luajit-flavour' '$build/upstream' 2>/dev/null` // '';
chomp $flavour;
SKIP: {
  skip "the build's flavour is not known ($build/upstream)", 1 unless $flavour;
  is(exports($lib{build}, 'lua_setexdata') ? 'yes' : 'no', $flavour eq 'openresty' ? 'yes' : 'no',
     "the library under /usr/lib/ljprof/lib is this build's ($flavour)");
}
ok(-f "$or/share/luajit-2.1/jit/v.lua" || -f "$or/share/luajit-2.1.0-beta3/jit/v.lua",
   'the OpenResty library\'s jit.* modules, where its package.path looks');
ok(scalar(glob("$or/share/luajit-2.1*/ljprof/nginx.lua")), 'and ljprof.nginx beside them');
my $pc = `cat '$or/lib/pkgconfig/luajit.pc' 2>/dev/null`;
like($pc, qr{^prefix=/usr/lib/ljprof/openresty\n}m, 'its luajit.pc names /usr/lib/ljprof/openresty');
like($pc, qr{^Libs: -L\$\{libdir\} -Wl,-rpath,\$\{libdir\} }m,
     'and links a server against its library, with an rpath');

# -- nginx on the package's OpenResty library ----------------------------------

local $LJProf::Nginx::LIBRARY_DIR = "$or/lib";
SKIP: {
  my $why = LJProf::Nginx::unavailable();
  skip $why, 6 if $why;
  my $out = tempdir(CLEANUP => 1);
  chmod 01777, $out;   # the workers run as nobody
  my $handler = 'local s = 0 for i = 1, 3e6 do s = s + i % 7 end ' .
                'ngx.say("pid ", ngx.worker.pid(), " ", s)';
  my $ngx = LJProf::Nginx->start(ljprof => "cpu:interval=1,path=$out/cpu-%p.bin",
                                 workers => 2, lua => $handler);
  ok($ngx, 'nginx starts with LD_LIBRARY_PATH at the package\'s OpenResty lib') or diag $@;
  skip 'nginx did not start', 5 unless $ngx;
  my @workers = $ngx->workers;
  is(scalar @workers, 2, 'two workers');
  my @maps = map { `grep -h libluajit /proc/$_/maps 2>/dev/null` } @workers;
  ok(@maps && !grep({ !m{ \Q$or\E/lib/libluajit-5\.1\.so\.2[.\d]*$} } @maps),
     'each worker runs the package\'s OpenResty library') or diag @maps;
  my $by = $ngx->each_worker('/', 20);
  ok(!grep({ ($by->{$_} // 0) < 20 } @workers), 'each worker served 20 requests')
    or diag(explain($by), $ngx->error_log);
  ok($ngx->quit, 'nginx -s quit ends the master and its workers');
  # The package's ljprof reads each worker's profile: the handler's line
  # is the hottest.
  my @bad;
  for my $w (@workers) {
    my $rep = run_program("$prefix/bin/ljprof", 'report', "$out/cpu-$w.bin");
    my ($top) = $rep->{out} =~ /^LINES BY SELF\n(.*)$/m;
    my ($n) = $rep->{out} =~ /^Samples: (\d+) /m;
    push @bad, "worker $w: exit $rep->{rc}, " . ($n // 0) . " samples, top " .
               ($top // 'none') . "\n$rep->{err}"
      unless $rep->{rc} == 0 && ($n // 0) >= 20 && ($top // '') =~ /^=content_by_lua\(nginx\.conf:\d+\):1: /;
  }
  ok(!@bad, 'the package\'s ljprof reports each worker\'s profile, the handler\'s line on top')
    or diag @bad;
}

done_testing;
