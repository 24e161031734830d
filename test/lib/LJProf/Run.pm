package LJProf::Run;
# Running ljprof from tests: its stdout, stderr and exit status, and the
# JSON report decoded.
use strict;
use warnings;
use Exporter 'import';
use File::Temp qw(tempdir);
use JSON::PP;

our @EXPORT = qw(ljprof ljprof_json scratch_dir);

my $dir = tempdir(CLEANUP => 1);

sub scratch_dir { return $dir }

# ljprof(@args) -> { out => ..., err => ..., rc => ... }; stdin from $opt{stdin}.
sub ljprof {
  my @args = @_;
  my $stdin = '/dev/null';
  if (ref $args[0] eq 'HASH') { my $opt = shift @args; $stdin = $opt->{stdin} }
  my $pid = fork // die "fork: $!";
  if ($pid == 0) {
    open STDIN, '<', $stdin or die "$stdin: $!";
    open STDOUT, '>', "$dir/stdout" or die $!;
    open STDERR, '>', "$dir/stderr" or die $!;
    exec 'ljprof', @args or die "exec ljprof: $!";
  }
  waitpid $pid, 0;
  my $rc = $? >> 8;
  return { out => slurp("$dir/stdout"), err => slurp("$dir/stderr"), rc => $rc };
}

# The JSON report of a file, and a map of its locations by name.
sub ljprof_json {
  my $r = ljprof('report', '--format=json', @_);
  my $doc = eval { JSON::PP->new->decode($r->{out}) };
  $r->{json} = $doc;
  $r->{loc} = { map { $_->{location} => $_ } @{ $doc ? $doc->{locations} : [] } };
  return $r;
}

sub slurp {
  my ($path) = @_;
  open my $fh, '<:raw', $path or die "$path: $!";
  local $/;
  my $s = <$fh>;
  return defined $s ? $s : '';
}

1;
