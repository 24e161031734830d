#!/usr/bin/env perl
# A fresh machine gets everything the build needs from scripts/apt-packages:
# the Debian package of every header that src/, tools/ and test/ include
# with <...>, and of every library linked with -l, is listed there or
# pulled in by a listed package (through Depends and Pre-Depends of what
# this machine has installed).
use strict;
use warnings;
use FindBin;
use Test::More;
use File::Find;

my $root = "$FindBin::Bin/../..";
plan skip_all => 'not a Debian machine (no dpkg-query)'
  unless system('command -v dpkg-query >/dev/null 2>&1') == 0;

# -- What is listed, and everything it pulls in ------------------------------

sub listed {
  open my $fh, '<', "$root/scripts/apt-packages" or die "scripts/apt-packages: $!";
  my @pkgs;
  while (<$fh>) {
    s/#.*//;
    push @pkgs, split ' ';
  }
  return @pkgs;
}

# name -> [dependency alternatives], and virtual name -> providers.
my (%deps, %providers);
for (`dpkg-query -W -f='\${Package}\\t\${Status}\\t\${Depends}, \${Pre-Depends}\\t\${Provides}\\n'`) {
  chomp;
  my ($pkg, $status, $depends, $provides) = split /\t/;
  next unless $status =~ /installed$/;
  for my $group (split /\s*,\s*/, $depends) {
    my @alts = map { (my $n = $_) =~ s/[\s:(].*//; $n } grep { /\S/ } split /\s*\|\s*/, $group;
    push @{ $deps{$pkg} }, \@alts if @alts;
  }
  for (split /\s*,\s*/, $provides // '') {
    (my $n = $_) =~ s/[\s:(].*//;
    push @{ $providers{$n} }, $pkg if $n ne '';
  }
}

my %pulled;
my @todo = listed();
while (defined(my $pkg = shift @todo)) {
  for my $name ($pkg, @{ $providers{$pkg} || [] }) {
    next if $pulled{$name}++;
    push @todo, map { @$_ } @{ $deps{$name} || [] };
  }
}

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

sub check {
  my ($what, $path) = @_;
  my $pkg = owner($path);
  ok(defined $pkg && $pulled{$pkg},
     defined $pkg ? "$what ($path) comes from $pkg, which apt-packages brings"
                  : "$what ($path) belongs to a Debian package")
    or diag(defined $pkg ? "add $pkg to scripts/apt-packages" : "no package owns $path");
}

# -- Headers ---------------------------------------------------------------------

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

my %headers;
find(sub {
  return unless /\.[ch]$/;
  open my $fh, '<', $_ or return;
  while (<$fh>) { $headers{$1} = $File::Find::name if /^\s*#\s*include\s*<([^>]+)>/ }
}, map { "$root/$_" } qw(src tools test));

for my $h (sort keys %headers) {
  my ($path) = grep { -e } map { "$_/$h" } @dirs;
  if (!defined $path) {
    # Ours: LuaJIT's headers and lmisclib.h, found through -I of the build.
    ok(-e "$root/src/$h" || -e "$ENV{LJPROF_BUILD_DIR}/include/$h",
       "<$h> is one of ours") or diag "<$h> (in $headers{$h}) is found nowhere";
    next;
  }
  check("<$h>", $path);
}

# -- Libraries ---------------------------------------------------------------------

my %libs;
for my $mk ("$root/Makefile", glob("$root/src/*.mk"), glob("$root/tools/*/Makefile")) {
  open my $fh, '<', $mk or die "$mk: $!";
  while (<$fh>) { $libs{$1} = 1 while /(?<![\w-])-l([\w+.-]+)/g }
}
ok(scalar keys %libs, 'the makefiles link libraries');
for my $lib (sort keys %libs) {
  my ($path) = grep { m{^/} && -e }
               map { my $p = `cc -print-file-name=lib$lib.$_`; chomp $p; $p } qw(so a);
  ok(defined $path, "-l$lib is found by the compiler") or next;
  check("-l$lib", $path);
}

done_testing;
