#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# The Debian packages, split by need. scripts/apt-packages is what building
# and running need (make, make demo, make install, make deb install it);
# scripts/apt-packages-test what only the tests add (make test), and
# bench/apt-packages what only the benchmarks add. Each set must bring
# what its users include, link and run (a listed package, or one it pulls
# in through Depends and Pre-Depends, or an Essential one); and the build's
# set must bring none of the test-only or bench-only packages, so that a
# machine that only builds the profiler gets no browser, Go or clang.
use strict;
use warnings;
use FindBin;
use Test::More;
use File::Find;
use File::Basename;
use Cwd qw(abs_path);

my $root = "$FindBin::Bin/../..";
plan skip_all => 'not a Debian machine (no dpkg-query)'
  unless system('command -v dpkg-query >/dev/null 2>&1') == 0;

# -- What each set lists, and everything it pulls in -------------------------

sub listed {
  my ($list) = @_;
  open my $fh, '<', "$root/$list" or die "$list: $!";
  my @pkgs;
  while (my $line = <$fh>) {
    $line =~ s/#.*//;
    push @pkgs, split ' ', $line;
  }
  return @pkgs;
}

# name -> [dependency alternatives], virtual name -> providers, and the
# Essential packages every Debian system has.
my (%deps, %providers, @essential, %installed);
for (`dpkg-query -W -f='\${Package}\\t\${Status}\\t\${Depends}, \${Pre-Depends}\\t\${Provides}\\t\${Essential}\\n'`) {
  chomp;
  my ($pkg, $status, $depends, $provides, $essential) = split /\t/, $_, -1;
  next unless $status =~ /installed$/;
  $installed{$pkg} = 1;
  push @essential, $pkg if ($essential // '') eq 'yes';
  for my $group (split /\s*,\s*/, $depends) {
    my @alts = map { (my $n = $_) =~ s/[\s:(].*//; $n } grep { /\S/ } split /\s*\|\s*/, $group;
    push @{ $deps{$pkg} }, \@alts if @alts;
  }
  for (split /\s*,\s*/, $provides // '') {
    (my $n = $_) =~ s/[\s:(].*//;
    push @{ $providers{$n} }, $pkg if $n ne '';
  }
}

sub pulled {
  my %pulled;
  my @todo = @_;
  while (defined(my $pkg = shift @todo)) {
    for my $name ($pkg, @{ $providers{$pkg} || [] }) {
      next if $pulled{$name}++;
      push @todo, map { @$_ } @{ $deps{$name} || [] };
    }
  }
  return \%pulled;
}

my %list = (build => 'scripts/apt-packages', test => 'scripts/apt-packages-test',
            bench => 'bench/apt-packages');
my %pkgs = map { $_ => [listed($list{$_})] } keys %list;
my %set = (build => pulled(@essential, @{ $pkgs{build} }),
           test  => pulled(@essential, @{ $pkgs{build} }, @{ $pkgs{test} }),
           bench => pulled(@essential, @{ $pkgs{build} }, @{ $pkgs{bench} }));

# The package that owns a file, or undef. The path as dpkg knows it: no
# "dir/.." (symbolic links stay: a -dev package owns the libfoo.so link),
# under /usr or, on merged-/usr systems, maybe without it.
sub owner {
  my ($path) = @_;
  1 while $path =~ s{/[^/]+/\.\./}{/};
  (my $short = $path) =~ s{^/usr/}{/};
  for my $p ($path, $short) {
    my ($line) = `dpkg-query -S '$p' 2>/dev/null`;
    next unless defined $line;
    $line =~ s/:.*//s;           # "pkg:arch: path" or "pkg: path"
    $line =~ s/,.*//s;           # several owners: the first will do
    return $line;
  }
  return undef;
}

# A file's package, which set $need must bring.
sub check {
  my ($need, $what, $path) = @_;
  my $pkg = owner($path) // owner(abs_path($path));   # cc: an alternative
  ok(defined $pkg && $set{$need}{$pkg},
     defined $pkg ? "$what ($path) comes from $pkg, which $list{$need} brings"
                  : "$what ($path) belongs to a Debian package")
    or diag(defined $pkg ? "add $pkg to $list{$need}" : "no package owns $path");
  return $pkg;
}

# -- Headers: the build's from the build set, the tests' from theirs ---------

# The compiler's own search path for <...>.
my @dirs;
{
  my $in = 0;
  for (`cc -E -Wp,-v -x c /dev/null 2>&1 >/dev/null`) {
    $in = 1, next if /search starts here:/ && /</;
    last if /^End of search list/;
    push @dirs, $1 if $in && /^\s+(\S+)/;
  }
}
ok(scalar @dirs, 'the compiler names its include directories');

# header -> the set that needs it (build wins), and a file including it.
my (%need, %where);
find(sub {
  return unless /\.[ch]$/;
  my $file = $File::Find::name;
  my $need = $file =~ m{^\Q$root\E/(?:src/|tools/(?!ljprof/fuzz/))} ? 'build' : 'test';
  open my $fh, '<', $_ or return;
  while (<$fh>) {
    next unless /^\s*#\s*include\s*<([^>]+)>/;
    $where{$1} //= $file;
    $need{$1} = $need unless ($need{$1} // '') eq 'build';
  }
}, map { "$root/$_" } qw(src tools test));
ok(grep({ $_ eq 'build' } values %need) && grep({ $_ eq 'test' } values %need),
   'the build and the tests include headers');

for my $h (sort keys %need) {
  my ($path) = grep { -e } map { "$_/$h" } @dirs;
  if (!defined $path) {
    # Ours: LuaJIT's headers and lmisclib.h, found through -I of the build.
    ok(-e "$root/src/$h" || -e "$ENV{LJPROF_BUILD_DIR}/include/$h",
       "<$h> is one of ours") or diag "<$h> (in $where{$h}) is found nowhere";
    next;
  }
  check($need{$h}, "<$h>", $path);
}

# -- Libraries: every -l links the VM, ljprof or a host, so the build's -----

my %libs;
for my $mk ("$root/Makefile", glob("$root/src/*.mk"), glob("$root/tools/*/Makefile"),
            glob("$root/patches/*.patch")) {
  open my $fh, '<', $mk or die "$mk: $!";
  while (<$fh>) {
    next if $mk =~ /\.patch$/ && !/^\+/;
    $libs{$1} = 1 while /(?<![\w-])-l([\w+.-]+)/g;
  }
}
ok($libs{elf} && $libs{jansson}, 'the makefiles and luajit.pc link libraries');
for my $lib (sort keys %libs) {
  my ($path) = grep { m{^/} && -e }
               map { my $p = `cc -print-file-name=lib$lib.$_`; chomp $p; $p } qw(so a);
  ok(defined $path, "-l$lib is found by the compiler") or next;
  check('build', "-l$lib", $path);
}

# -- Tools: who runs what -------------------------------------------------------

sub command { my $p = `sh -c 'command -v $_[0]' 2>/dev/null`; chomp $p; $p }

# libc's separate debug file, by its build-id.
sub libc_debug {
  my ($libc) = grep { -e } map { "$_/libc.so.6" } qw(/lib/x86_64-linux-gnu /usr/lib64 /lib64);
  my ($id) = `readelf -n '$libc' 2>/dev/null` =~ /Build ID:\s*(\w+)/ or return '';
  return '/usr/lib/debug/.build-id/' . substr($id, 0, 2) . '/' . substr($id, 2) . '.debug';
}

# [the set that must bring it, the file that uses it, how that file names
# it, the command or file used]. A test-only or bench-only use must come
# from its own set, never from the build's.
my @uses = (
  [build => 'Makefile',                qr/^CC\s*\?=\s*cc$/m,     command('cc')],
  [build => 'scripts/prepare-tree',    qr/\bpatch -d\b/,         command('patch')],
  [build => 'scripts/fetch-luajit',    qr/apt-get source/,       command('dpkg-source')],
  [build => 'tools/ljprof/Makefile',   qr/^\s+protoc-c /m,       command('protoc-c')],
  [build => 'tools/ljprof/Makefile',   qr/xxd -i/,               command('xxd')],
  [build => 'scripts/build-deb',       qr/\bdpkg-shlibdeps -O/,  command('dpkg-shlibdeps')],
  [build => 'scripts/build-deb',       qr/\bdpkg-deb --/,        command('dpkg-deb')],
  [build => 'scripts/build-deb',       qr/\bgzip -9n/,           command('gzip')],
  [test  => 'Makefile',                qr/prove$/m,              command('prove')],
  [test  => 'tools/ljprof/Makefile',   qr/^CLANG \?= clang$/m,   command('clang')],
  [test  => 'tools/ljprof/Makefile',   qr/-fsanitize=fuzzer,/,
   do { my $d = `clang --print-runtime-dir 2>/dev/null`; chomp $d;
        $d ? "$d/libclang_rt.fuzzer-x86_64.a" : '' }],
  [test  => 'test/sysprof/names.t',    qr/libc6-dbg/,            libc_debug()],
  [test  => 'test/formats/pprof.t',    qr/go tool pprof/,        command('go')],
  [test  => 'test/lib/LJProf/Chromium.pm', qr/qw\(chromium /,    '/usr/bin/chromium'],
  [test  => 'test/setup/install.t',    qr/pkg-config --static/,  command('pkg-config')],
  [test  => 'Makefile',                qr/\bnpm ci\b/,           command('npm')],
  [test  => 'test/heap/heapsnapshot.t', qr/'node'/,              command('node')],
  [test  => 'test/setup/deb.t',        qr/'unshare', '--mount'/, command('unshare')],
  [test  => 'test/ljprof/pipe.t',      qr/'strace', '-f'/,       command('strace')],
  [test  => 'test/lib/LJProf/Nginx.pm', qr{'/usr/sbin/nginx'},    '/usr/sbin/nginx'],
  [test  => 'test/lib/LJProf/Nginx.pm', qr{/ngx_http_lua_module\.so}, '/usr/lib/nginx/modules/ngx_http_lua_module.so'],
  [bench => 'bench/reader/run.sh',     qr{/usr/bin/time -v},     '/usr/bin/time'],
  [bench => 'bench/traces.lua',        qr/valgrind --tool/,      command('valgrind')],
  [bench => 'bench/real.lua',          qr{"/luacheck/main\.lua"}, '/usr/share/lua/5.1/luacheck/main.lua'],
  [bench => 'bench/real.lua',          qr{"/pl/\*\.lua"},        '/usr/share/lua/5.1/pl/utils.lua'],
  [bench => 'bench/real.lua',          qr{"/markdown\.lua"},      '/usr/share/lua/5.1/markdown.lua'],
  [bench => 'bench/real/docs.lua',     qr/require\("dkjson"\)/,   '/usr/share/lua/5.1/dkjson.lua'],
  [bench => 'bench/real/inspect.lua',  qr/require\("inspect"\)/,  '/usr/share/lua/5.1/inspect.lua'],
  [bench => 'bench/nginx.lua',         qr/"wrk -t1 /,             command('wrk')],
  [bench => 'bench/nginx.lua',         qr/" nginx -p "/,          '/usr/sbin/nginx'],
  [bench => 'bench/nginx.lua',         qr{"/ngx_http_lua_module\.so"}, '/usr/lib/nginx/modules/ngx_http_lua_module.so'],
);

my %owners;   # package -> set of the uses it serves
for (@uses) {
  my ($need, $file, $mention, $path) = @$_;
  open my $fh, '<', "$root/$file" or die "$file: $!";
  my $text = do { local $/; <$fh> };
  my $tool = $path ? basename($path) : 'its tool';
  like($text, $mention, "$file uses $tool");
  SKIP: {
    # The benchmarks' packages are installed by make bench only.
    skip "$list{$need} is not installed (scripts/deps $list{$need})", 1
      if $need eq 'bench' && !($path && -e $path);
    ok($path && -e $path, "$tool, for $file, is there")
      or diag("scripts/deps $list{$need}"), next;
    my $pkg = check($need, "$file: $tool", $path) or next;
    $owners{$pkg}{$need} = 1;
  }
}

# -- The sets together ------------------------------------------------------------

# make test and make bench on one machine: installing every set at once
# removes nothing (Debian's luajit did: its library conflicts with the
# libluajit2 of nginx's Lua module, which apt then removed).
{
  # What is there, by name or as another's Provides (NodeSource's nodejs
  # provides npm and conflicts with Debian's), is there already.
  my @missing = grep { !$installed{$_} && !$providers{$_} }
                map { s/:.*//r } map { @{ $pkgs{$_} } } qw(build test bench);
  my $sim = @missing ? `apt-get -s -qq install --no-install-recommends @missing 2>&1` : '';
  SKIP: {
    skip "apt-get cannot simulate the install here: $sim", 1 if $? != 0;
    unlike($sim, qr/^Remv /m, 'the build, test and bench sets install together: apt removes nothing')
      or diag($sim);
  }
}

# -- The split ---------------------------------------------------------------------

for my $need (qw(test bench)) {
  for my $pkg (@{ $pkgs{$need} }) {
    ok(!$set{build}{$pkg}, "$pkg ($list{$need}) is not brought by $list{build}")
      or diag("something in $list{build} pulls in $pkg");
    next if $need eq 'bench' && !$installed{$pkg};   # not run here
    my $pulled = pulled($pkg);
    ok(grep({ $owners{$_}{$need} } keys %$pulled),
       "$pkg ($list{$need}) serves a use of its set")
      or diag("no use above needs $pkg: drop it, or name its use");
  }
}

done_testing;
