#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# make deb: a Debian package of the build. Its files are ours only (none of
# Debian's luajit packages' paths), its Depends name the package of every
# library its ELF objects need, and installed into a root that holds only
# its files and those of its dependencies (chroot, with a /proc of its own)
# `ljprof record --mem` runs there: no build tree, no compiler.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use File::Find;
use Cwd qw(getcwd);
use LJProf::Run;

my $build = native_build('its package');
plan skip_all => 'dpkg-deb is not installed (not a Debian machine)'
  unless system('command -v dpkg-deb >/dev/null 2>&1') == 0;

my $dir = scratch_dir();
my $prefix = '/usr/lib/ljprof';
my $arch = `dpkg --print-architecture`;
chomp $arch;

my $r = run_make('deb');
is($r->{rc}, 0, 'make deb') or do { diag "$r->{out}$r->{err}"; done_testing(); exit 1 };
my @debs = glob("$build/ljprof_*_$arch.deb");
is(scalar @debs, 1, "one package: build/ljprof_VERSION_$arch.deb") or diag "@debs";
my $deb = $debs[0];

# -- Contents ------------------------------------------------------------------

my %files;   # path -> link target or ''
for (split /\n/, run_program('dpkg-deb', '--contents', $deb)->{out}) {
  my ($path, $target) = m{ \./(\S+?)/?(?: -> (\S+))?$} or next;
  $files{"/$path"} = $target // '';
}
is($files{'/usr/bin/ljprof'}, '../lib/ljprof/bin/ljprof', '/usr/bin/ljprof runs the one under /usr/lib/ljprof');
ok(exists $files{$_}, "it holds $_")
  for map { "$prefix/$_" } qw(bin/ljprof bin/luajit lib/libluajit-5.1.a lib/libluajit-5.1.so
                             lib/libluajit-5.1.so.2 include/luajit-2.1/lua.h
                             include/luajit-2.1/lmisclib.h lib/pkgconfig/luajit.pc);
ok(exists $files{$_}, "it holds $_") for qw(/usr/share/man/man1/ljprof.1.gz
                                            /usr/share/doc/ljprof/copyright);
ok(scalar(grep { m{^\Q$prefix\E/share/luajit-[^/]+/jit/(?:bc|v|dump)\.lua$} } keys %files) == 3,
   'it holds the jit.* modules (bc, v, dump)');
ok(scalar(grep { m{^\Q$prefix\E(?:/openresty)?/share/luajit-[^/]+/ljprof/nginx\.lua$} } keys %files) == 2,
   'and ljprof.nginx, for each flavour');
my @elsewhere = grep { !m{^(?:/usr|/usr/bin|/usr/lib|/usr/share|/usr/share/man|/usr/share/man/man1
                            |/usr/share/doc|\Q$prefix\E(?:/.*)?|/usr/bin/ljprof
                            |/usr/share/man/man1/ljprof\.1\.gz|/usr/share/doc/ljprof(?:/.*)?)$}x }
                 keys %files;
is_deeply(\@elsewhere, [], "nothing outside $prefix but ljprof's command, man page and doc");

# Debian's own LuaJIT packages, where this machine has them: no path shared.
SKIP: {
  my @theirs = grep { `dpkg-query -W -f='\${db:Status-Status}' $_ 2>/dev/null` eq 'installed' }
               qw(luajit libluajit-5.1-2 libluajit-5.1-dev libluajit-5.1-common);
  skip 'none of Debian\'s luajit packages is installed', 1 unless @theirs;
  my @shared = grep { exists $files{$_} && !-d $_ }
               map { chomp; $_ } `dpkg-query -L @theirs 2>/dev/null`;
  is_deeply(\@shared, [], "no file of Debian's @theirs is in the package");
}

# -- Depends: the package of every library the ELF objects need ------------------

my %control = map { /^(\S+): (.*)$/ ? ($1 => $2) : () }
              split /\n/, run_program('dpkg-deb', '--field', $deb)->{out};
my %depends = map { /^\s*([\w.+-]+)/ ? ($1 => $_) : () } split /,/, $control{Depends} // '';
note "Depends: $control{Depends}";
ok($depends{$_}, "Depends names $_") for qw(libc6 libelf1 liblzma5 libjansson4 libprotobuf-c1 zlib1g);
like($depends{$_} // '', qr/\(>= [^)]+\)/, "$_ with the least version that serves") for qw(libc6 libjansson4);
like(run_program('dpkg-deb', '--field', $deb, 'Description')->{out},
     qr/installs beside Debian's luajit,\s+libluajit-5\.1-2 and libluajit-5\.1-dev/,
     'its description says it installs beside Debian\'s luajit');

my $root = "$dir/root";
$r = run_program('dpkg-deb', '-x', $deb, $root);
is($r->{rc}, 0, 'dpkg-deb -x') or diag $r->{err};
my @elves;
find({ no_chdir => 1, wanted => sub {
  return unless -f && !-l;
  open my $fh, '<:raw', $_ or return;
  read $fh, my $magic, 4;
  push @elves, $_ if ($magic // '') eq "\x7fELF";
} }, $root);
cmp_ok(scalar @elves, '>=', 3, 'luajit, ljprof and libluajit are ELF objects');
my (%needed, %found);   # soname -> the object that needs it, and its path
for my $elf (@elves) {
  for (split /\n/, run_program('readelf', '-d', $elf)->{out}) {
    $needed{$1} //= $elf if /\(NEEDED\)\s+Shared library: \[(.+)\]/;
  }
  my $ldd = run_program('ldd', $elf)->{out};
  unlike($ldd, qr/not found|\Q$build\E/, "ldd: $elf needs nothing from the build tree");
  $found{$1} = $2 while $ldd =~ /^\s*(\S+) => (\S+)/mg;
  $found{$2} = $1 while $ldd =~ m{^\s*((?:/[^/\s]+)*/(\S+)) \(}mg;   # the loader
}
ok($needed{'libelf.so.1'} && $needed{'libjansson.so.4'}, 'they need libelf and jansson');
for my $so (sort keys %needed) {
  my $path = $found{$so} // '';
  # As dpkg knows it: with /usr or without (merged /usr).
  (my $bare = $path) =~ s{^/usr/}{/};
  my ($pkg) = map { `dpkg-query -S '$_' 2>/dev/null` =~ /^([^:,\s]+)/ } $bare, "/usr$bare";
  ok($pkg && $depends{$pkg}, "$so ($path) comes from " . ($pkg // '?') . ', which Depends names')
    or diag "needed by $needed{$so}";
}

# -- Run where only the package and its dependencies are -------------------------

SKIP: {
  skip 'chroot and a /proc of its own need root', 6 if $> != 0;
  skip 'unshare is not installed', 6 unless system('command -v unshare >/dev/null 2>&1') == 0;
  # The merged-/usr layout, then the files of Depends and what they depend on.
  mkdir "$root/$_" for qw(proc tmp usr/lib64);
  symlink "usr/$_", "$root/$_" for qw(bin lib lib64 sbin);
  my @todo = keys %depends;
  my %seen;
  my $cwd = getcwd();
  chdir '/' or die;   # cp --parents makes the source's folders, found from here
  while (defined(my $pkg = shift @todo)) {
    next if $seen{$pkg}++;
    my $deps = `dpkg-query -W -f='\${Depends}, \${Pre-Depends}' '$pkg:$arch' 2>/dev/null`;
    push @todo, map { /^\s*([\w.+-]+)/ ? $1 : () } split /[,|]/, $deps;
    for my $f (map { chomp; $_ } `dpkg-query -L '$pkg:$arch' 2>/dev/null`) {
      next if -d $f || !(-e $f || -l $f) || $f =~ m{^/usr/share/(?:doc|man|locale|lintian)/};
      system('cp', '-a', '--parents', substr($f, 1), $root) == 0 or diag "cp $f";
    }
  }
  chdir $cwd or die;
  ok($seen{'libgcc-s1'}, 'the root holds Depends and theirs: ' . join(' ', sort keys %seen));
  ok(!-e "$root/usr/bin/cc" && !-e "$root/bin/sh", 'no compiler, no shell');

  open my $fh, '>', "$root/tmp/alloc.lua" or die $!;
  print $fh "local keep = {}\nfor i = 1, 5000 do\n  keep[i] = { i }\nend\n",
            "print(require('jit.v') and 'jit.v from the package')\n";
  close $fh;
  my @chroot = ('unshare', '--mount', '--pid', '--fork', "--mount-proc=$root/proc", 'chroot', $root);
  $r = run_program(@chroot, '/usr/bin/ljprof', 'record', '--mem', '-o', '/tmp/mem.bin',
                   '--top=3', '--', '/tmp/alloc.lua');
  is($r->{rc}, 0, 'in the root: ljprof record --mem -- /tmp/alloc.lua') or diag $r->{err};
  like($r->{out}, qr/^jit\.v from the package$/m, 'luajit finds its jit.* modules under /usr/lib/ljprof');
  my ($events) = $r->{out} =~ /^\@\/tmp\/alloc\.lua:3: (\d+) events/m;
  cmp_ok($events // 0, '>=', 5000, 'the report names alloc.lua:3 with its 5000 tables');
  ok(-s "$root/tmp/mem.bin", 'the stream is written in the root');
}

done_testing;
