#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# The command line: help, usage errors (exit 2, one line on stderr), files
# that cannot be read, streams of the wrong kind or version.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();
my $good = write_file("$dir/good.bin", symtab() . memprof(ev_alloc(internal(), 0x10, 8)));

my $r = ljprof('--help');
is($r->{rc}, 0, '--help exits 0');
like($r->{out}, qr/^Usage: ljprof COMMAND/m, '--help shows usage');
like($r->{out}, qr/^  report /m, '--help lists report');
like($r->{out}, qr/^  record /m, '--help lists record');
{
  my ($summary) = $r->{out} =~ /^  report +(.*(?:\n {13,}.*)*)/m;
  my @missing = grep { ($summary // '') !~ /\b\Q$_\E\b/i }
                qw(text JSON collapsed pprof speedscope HTML);
  is("@missing", '', "--help's summary of report names every format it writes");
}
like($r->{out}, qr/^Examples:\n  ljprof record --mem -- app\.lua\n(?:  ljprof .*\n)*  ljprof report /m,
     '--help shows examples of record and report');

$r = ljprof('report', '--help');
is($r->{rc}, 0, 'report --help exits 0');
like($r->{out}, qr/^Usage: ljprof report \[OPTIONS\] FILE/m, 'report --help shows usage');
like($r->{out}, qr/--leak-only/, 'report --help lists options');
like($r->{out}, qr/^Examples:\n/m, 'report --help shows examples');

sub usage_error {
  my ($args, $pattern, $what) = @_;
  my $r = ljprof(@$args);
  is($r->{rc}, 2, "$what: exit 2");
  like($r->{err}, qr/\A[^\n]*$pattern[^\n]*\n\z/, "$what: one line on stderr");
  is($r->{out}, '', "$what: nothing on stdout");
}
$r = ljprof();
is($r->{rc}, 2, 'no command: exit 2');
like($r->{err}, qr/^Usage: ljprof/, 'no command: usage on stderr');

usage_error(['frobnicate'], qr/^ljprof: unknown command 'frobnicate'/, 'unknown command');
usage_error(['report'], qr/^ljprof report: no FILE given/, 'no file');
usage_error(['report', '--bogus', $good], qr/unknown option '--bogus'/, 'unknown option');
usage_error(['report', '-x', $good], qr/unknown option '-x'/, 'unknown short option');
usage_error(['report', '--format=xml', $good], qr/unknown format 'xml' \(text, json, collapsed, pprof, speedscope or html\)/, 'bad format');
usage_error(['report', '--count=lines', $good], qr/unknown count 'lines' \(bytes or events\)/, 'bad count');
usage_error(['report', '--sort=name', $good], qr/unknown sort key 'name'/, 'bad sort key');
usage_error(['report', '--top', '0', $good], qr/--top wants a positive number, not '0'/, 'top 0');
usage_error(['report', '--top=ten', $good], qr/--top wants a positive number/, 'top not a number');
usage_error(['report', $good, '--top'], qr/option '--top' needs a value/, 'top without a value');
usage_error(['report', '-', $good, '-'], qr/'-' \(stdin\) can be read once/, 'stdin twice');

$r = ljprof('report', "$dir/missing.bin");
is($r->{rc}, 1, 'missing file: exit 1');
like($r->{err}, qr{\Aljprof: \S*missing\.bin: No such file or directory\n\z}, 'missing file: one clear line');

$r = ljprof('report', $dir);
is($r->{rc}, 1, 'a directory: exit 1');
like($r->{err}, qr/\Aljprof: \Q$dir\E: read error: Is a directory\n\z/, 'a directory: one clear line');

$r = ljprof('report', '-o', "$dir/no/such/dir/out.txt", $good);
is($r->{rc}, 1, 'unwritable output: exit 1');
like($r->{err}, qr{\Aljprof: \S*/no/such/dir/out\.txt: No such file or directory\n\z}, 'unwritable output: one line');

my $sysprof = write_file("$dir/sysprof.bin", symtab() . prologue('ljp', 2) . "\x80");
$r = ljprof('report', $sysprof);
is($r->{rc}, 0, 'an empty sysprof v2 stream: exit 0');
like($r->{out}, qr/^SYSPROF REPORT: /, 'an empty sysprof v2 stream: a sysprof report');

my $p5 = write_file("$dir/p5.bin", symtab() . prologue('ljp', 5) . "\x80");
$r = ljprof('report', $p5);
is($r->{rc}, 1, 'sysprof v5: exit 1');
like($r->{err}, qr/\Aljprof: \S+: unsupported sysprof version 5 \(expected 2, 3 or 4\) at offset 11\n\z/,
     'sysprof v5: names the versions read');

$r = ljprof('report', '--format=collapsed', $good);
is($r->{rc}, 0, 'collapsed of a memprof stream: exit 0');
is($r->{out}, "INTERNAL 8\n", 'collapsed of a memprof stream: the site and its bytes');

my $v7 = write_file("$dir/v7.bin", symtab() . prologue('ljm', 7) . "\x80");
$r = ljprof('report', $v7);
is($r->{rc}, 1, 'memprof v7: exit 1');
like($r->{err}, qr/unsupported memprof version 7 \(expected 3 to 6\)/, 'memprof v7: names the versions read');

my $s2 = write_file("$dir/s2.bin", prologue('ljs', 2) . "\x80" . memprof());
$r = ljprof('report', $s2);
like($r->{err}, qr/unsupported symtab version 2 \(expected 3\)/, 'symtab v2: names both versions');

my $junk = write_file("$dir/junk.txt", "hello, world\n");
$r = ljprof('report', $junk);
is($r->{rc}, 1, 'not a profile: exit 1');
like($r->{err}, qr/not a profile: no 'ljs', 'ljm' or 'ljp' magic at offset 0/, 'not a profile: says so');

# A memprof stream without a symtab is read too.
$r = ljprof_json(write_file("$dir/bare.bin", memprof(ev_alloc(internal(), 0x10, 8))));
is($r->{rc}, 0, 'bare memprof stream: exit 0');
is($r->{loc}{INTERNAL}{alloc_bytes}, 8, 'bare memprof stream: decoded');

done_testing();
