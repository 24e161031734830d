# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
package LJProf::Run;
# Running ljprof (or luajit) from tests: its stdout, stderr and exit
# status, and the JSON report decoded.
use strict;
use warnings;
use Exporter 'import';
use File::Temp qw(tempdir);
use File::Basename qw(dirname);
use Cwd qw(abs_path);
use JSON::PP;

our @EXPORT = qw(ljprof run_program run_make ljprof_json scratch_dir check_every_cut sysprof_items
                 memprof_items native_build);

my $dir = tempdir(CLEANUP => 1);

sub scratch_dir { return $dir }

# The build under test (LJPROF_BUILD_DIR), when what it makes ($what: "its
# package") can run on this machine: a cross-build's is for another one.
# Otherwise the test is skipped, saying why.
sub native_build {
  my ($what) = @_;
  my $build = $ENV{LJPROF_BUILD_DIR}
    or Test::More::plan(skip_all => 'LJPROF_BUILD_DIR is not set');
  Test::More::plan(skip_all => "no build in $build") unless -x "$build/bin/luajit";
  Test::More::plan(skip_all => "a cross-build ($ENV{LJPROF_CROSS}): $what is not run on this machine")
    if ($ENV{LJPROF_CROSS} // '') ne '';
  return $build;
}

# ljprof(@args) -> { out => ..., err => ..., rc => ... }; stdin from $opt{stdin}.
sub ljprof { return run_program('ljprof', @_) }

# run_program($program, [\%opt,] @args): the same for any program.
sub run_program {
  my ($program, @args) = @_;
  my $stdin = '/dev/null';
  if (ref $args[0] eq 'HASH') { my $opt = shift @args; $stdin = $opt->{stdin} }
  my $pid = fork // die "fork: $!";
  if ($pid == 0) {
    open STDIN, '<', $stdin or die "$stdin: $!";
    open STDOUT, '>', "$dir/stdout" or die $!;
    open STDERR, '>', "$dir/stderr" or die $!;
    exec $program, @args or die "exec $program: $!";
  }
  waitpid $pid, 0;
  my $rc = $? >> 8;
  return { out => slurp("$dir/stdout"), err => slurp("$dir/stderr"), rc => $rc };
}

# run_make(@args): the top-level make on the tests' build (BUILD and the
# tree it came from: make fetches again when LUAJIT_SRC changes), outside
# the jobserver of a make that may be running the tests.
sub run_make {
  my $build = $ENV{LJPROF_BUILD_DIR} or die 'LJPROF_BUILD_DIR is not set';
  my $from = -e "$build/upstream/.fetched" ? slurp("$build/upstream/.fetched") : 'debian';
  chomp $from;
  local $ENV{MAKEFLAGS} = '';
  local $ENV{MAKELEVEL};
  delete $ENV{MAKELEVEL};
  my $root = abs_path(dirname(__FILE__) . '/../../..');
  return run_program('make', '-C', $root, "BUILD=$build",
                     ($from eq 'debian' ? () : "LUAJIT_SRC=$from"), @_);
}

# The JSON report of a file, and a map of its locations by name.
sub ljprof_json {
  my $r = ljprof('report', '--format=json', @_);
  my $doc = eval { JSON::PP->new->decode($r->{out}) };
  $r->{json} = $doc;
  $r->{loc} = { map { $_->{location} => $_ } @{ $doc ? $doc->{locations} : [] } };
  return $r;
}

# memprof_items($head, @items) -> ($bin, \@complete): a memprof stream of
# $head, the items and the end byte, and for check_every_cut after each
# item its end offset and the events so far (items whose header's event
# bits are not 0: not symtab updates).
sub memprof_items {
  my ($head, @items) = @_;
  my ($bin, $count, @complete) = ($head, 0);
  for my $e (@items) {
    $bin .= $e;
    $count++ if ord($e) & 3;
    push @complete, [length $bin, $count];
  }
  return ($bin . "\x80", \@complete);
}

# sysprof_items($head, [$record, $samples], ...) -> ($bin, \@complete): as
# memprof_items, each record with the samples it holds.
sub sysprof_items {
  my ($head, @items) = @_;
  my ($bin, $count, @complete) = ($head, 0);
  for my $rec (@items) {
    $bin .= $rec->[0];
    $count += $rec->[1];
    push @complete, [length $bin, $count];
  }
  return ($bin . "\x80", \@complete);
}

# Cuts $bin at every byte offset: each cut must get one line on stderr
# naming the offset, exit 1, no report while the profiler section has not
# begun ($head bytes), and after that exactly the records complete before
# the cut, as $counted->(JSON report) counts them (@$complete: [end
# offset, records so far]). Returns how many cuts were wrong.
sub check_every_cut {
  my ($bin, $head, $complete, $counted) = @_;
  my $bad = 0;
  for my $len (0 .. length($bin) - 1) {
    my $cut = "$dir/cut.bin";
    open my $fh, '>:raw', $cut or die "$cut: $!";
    print $fh substr($bin, 0, $len);
    close $fh;
    my $r = ljprof_json($cut);
    my @lines = split /\n/, $r->{err};
    my $ok = $r->{rc} == 1 && @lines == 1
          && $lines[0] =~ /^ljprof: \S+cut\.bin: truncated at offset (\d+): expected .+ \(.+\); the stream ends at offset $len$/
          && $1 <= $len;
    if ($len >= $head) {
      my $want = 0;
      for (@$complete) { $want = $_->[1] if $_->[0] <= $len }
      $ok &&= $r->{json} && $counted->($r->{json}) == $want && $r->{json}{error}{offset} <= $len;
    } else {
      $ok &&= $r->{out} eq '';    # no profiler section yet: no report
    }
    $bad++, Test::More::diag("cut at $len: rc=$r->{rc} err=$r->{err}") unless $ok;
  }
  return $bad;
}

sub slurp {
  my ($path) = @_;
  open my $fh, '<:raw', $path or die "$path: $!";
  local $/;
  my $s = <$fh>;
  return defined $s ? $s : '';
}

1;
