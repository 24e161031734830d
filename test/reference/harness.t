#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# test/reference/run, the harness of the reference's tests, with the
# entries of test/reference/skips and a stand-in for luajit that prints
# the TAP it is given: a skip entry turns only its own assertion into a
# SKIP that says what it said, the exit status is 0 only when the skipped
# assertions were the only failures, a `v2` entry adds format = "v2" to
# its one call and nothing else, and a file without entries passes as is.
use strict;
use warnings;
use FindBin;
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use Test::More;

my $run = "$FindBin::Bin/run";
my $dir = tempdir(CLEANUP => 1);
make_path("$dir/suite/profilers", "$dir/var");

sub write_file {
  my ($path, $text) = @_;
  open my $fh, '>', $path or die "$path: $!";
  print $fh $text;
  close $fh or die "$path: $!";
}

sub slurp {
  my ($path) = @_;
  open my $fh, '<', $path or return undef;
  local $/;
  return scalar <$fh>;
}

# The stand-in: keeps the file it runs, prints $dir/tap, exits $dir/rc.
write_file("$dir/luajit", <<"EOF");
#!/usr/bin/env perl
system('cp', \$ARGV[0], '$dir/ran.lua') == 0 or exit 99;
print do { local \$/; open my \$fh, '<', '$dir/tap' or die; <\$fh> };
exit(do { open my \$fh, '<', '$dir/rc' or die; <\$fh> } + 0);
EOF
chmod 0755, "$dir/luajit";

my $call = '{ mode = mode, interval = interval, path = TMP_BINFILE }';
my $sysprof_lapi = "local x = 1\nlocal function check_mode()\n"
                 . "  misc.sysprof.start($call)\nend\n";
write_file("$dir/suite/profilers/misclib-sysprof-lapi.test.lua", $sysprof_lapi);
write_file("$dir/suite/other.test.lua", "-- no entries\n");

# Runs the harness on $file with the stand-in printing $tap, exiting $rc.
sub harness {
  my ($file, $tap, $rc) = @_;
  write_file("$dir/tap", $tap);
  write_file("$dir/rc", $rc);
  unlink "$dir/ran.lua";
  local $ENV{LUAJIT_TEST_VARDIR} = "$dir/var";
  my $out = `cd '$dir/suite' && '$run' '$dir/luajit' '$file' 2>'$dir/stderr'`;
  return { out => $out, rc => $? >> 8, err => slurp("$dir/stderr") };
}

sub assertions {
  my (%fail) = map { $_ => 1 } @_;
  return join '', map { ($fail{$_} ? 'not ok' : 'ok') . " - nil\n" } 1 .. 19;
}

my $lapi = 'profilers/misclib-sysprof-lapi.test.lua';
my $r = harness($lapi, "TAP version 13\n1..19\n" . assertions(11, 12)
                       . "# failed subtest: 2\n", 1);
is($r->{rc}, 0, 'only the skipped assertions failed: exit 0');
my @lines = grep { /ok - / } split /\n/, $r->{out};
is(scalar @lines, 19, 'every assertion is passed on');
like($lines[10], qr/^ok - nil # SKIP timing: mode D at 100 ms over fib\(32\).* \(it said: not ok\)$/,
     'assertion 11: a SKIP that names the timing and says it failed');
like($lines[11], qr/^ok - nil # SKIP timing: .* \(it said: not ok\)$/, 'assertion 12: the same');
is(scalar(grep { /SKIP/ } @lines), 2, 'no other assertion is skipped');
like($r->{out}, qr/\ATAP version 13\n1\.\.19\n/, 'the rest of the TAP as it was');

$r = harness($lapi, "1..19\n" . assertions() , 0);
like((grep { /SKIP/ } split /\n/, $r->{out})[0], qr/\(it said: ok\)$/, 'a skipped pass says so');

$r = harness($lapi, "1..19\n" . assertions(11, 12, 13) . "# failed subtest: 3\n", 1);
is($r->{rc}, 1, 'another failure too: exit 1');
like($r->{out}, qr/^not ok - nil$/m, 'another failure stays "not ok"');

# A failure that shifts the count: the 11th assertion is not the one named.
my $shifted = assertions(12, 13);
$shifted =~ s/\A((?:.*\n){10})/$1not ok - `default` mode with interval 100\n/;
$r = harness($lapi, "1..20\n$shifted# failed subtest: 3\n", 1);
is($r->{rc}, 1, 'the named assertion is not where it was: exit 1');
like($r->{out}, qr/^not ok - `default` mode with interval 100$/m, 'an unnamed failure is not skipped');
like($r->{out}, qr/^# .*skips: assertion 11 of \Q$lapi\E says "`default` mode with interval 100", not "nil": not skipped$/m,
     'and the harness says why');

$r = harness($lapi, "1..10\n" . join('', map { "ok - nil\n" } 1 .. 10), 0);
is($r->{rc}, 1, 'a test that never reaches the named assertions: exit 1');
like($r->{err}, qr/skips: \Q$lapi\E has no assertion 11, 12 to skip$/m, 'and the harness says so');

my $ran = slurp("$dir/ran.lua");
(my $want = $sysprof_lapi) =~ s/path = TMP_BINFILE \}/path = TMP_BINFILE, format = "v2" }/;
is($ran, $want, 'v2: the one call gets format = "v2", nothing else changes');
ok(-e "$dir/var/misclib-sysprof-lapi.test.lua", 'v2: the copy runs from LUAJIT_TEST_VARDIR');

write_file("$dir/suite/profilers/misclib-sysprof-lapi.test.lua", "-- the call is gone\n");
$r = harness($lapi, "1..0\n", 0);
isnt($r->{rc}, 0, 'v2: a call that is not there fails the file');
like($r->{err}, qr/skips: v2 '\Q$call\E' is in \Q$lapi\E 0 times, not once/, 'v2: and says so');

$r = harness('other.test.lua', "1..2\nok - a\nnot ok - b\n# failed subtest: 1\n", 1);
is($r->{rc}, 1, 'a file without entries: its exit status');
is($r->{out}, "1..2\nok - a\nnot ok - b\n# failed subtest: 1\n", 'a file without entries: its TAP as is');
is(slurp("$dir/ran.lua"), "-- no entries\n", 'a file without entries runs as it is');

done_testing();
