package LJProf::Profiles;
# Real profiles for the format tests: a CPU workload (sysprof, mode C)
# whose hot line is known, and a memory workload (memprof) where the site
# allocating the most is not the one holding the most at the end; and the
# JSON report of a stream, the totals every other format must agree with.
use strict;
use warnings;
use Exporter 'import';
use JSON::PP;
use LJProf::Lua;

our @EXPORT = qw(cpu_profile memory_profile json_report ljprof_out file_text);

# Lines of the CPU payload: hot()'s loop, hot()'s first line.
use constant { HOT_LINE => 5, HOT_FIRST_LINE => 3 };

# { bin, script, name (the chunk as the reports print it), hot_line,
#   hot_first_line }
sub cpu_profile {
  my $bin = scratch() . '/cpu.bin';
  my $run = run_lua(<<"LUA");
jit.off()
local function cold(n) local x = 0 for i = 1, n do x = x + i end return x end
local function hot(n)
  local x = 0
  for i = 1, n do x = x + i % 7 end
  return x
end
assert(misc.sysprof.start({ mode = "C", interval = 1, path = "$bin" }))
local t = os.clock()
while os.clock() - t < 0.6 do hot(200000); cold(10000) end
assert(misc.sysprof.stop())
LUA
  die "CPU payload failed: $run->{err}" if $run->{rc};
  return { bin => $bin, script => $run->{script}, name => '@' . $run->{script},
	   hot_line => HOT_LINE, hot_first_line => HOT_FIRST_LINE };
}

# { bin, script, name, live_line (holds the most at the end),
#   garbage_line (allocates the most, all freed) }
sub memory_profile {
  my $bin = scratch() . '/mem.bin';
  my $run = run_lua(<<"LUA");
jit.off()
assert(misc.memprof.start("$bin"))
local keep = {}
for i = 1, 300 do keep[i] = string.rep("k", 4000 + i) end
for i = 1, 3000 do local s = string.rep("g", 3000 + i) end
collectgarbage()
assert(misc.memprof.stop())
LUA
  die "memory payload failed: $run->{err}" if $run->{rc};
  return { bin => $bin, script => $run->{script}, name => '@' . $run->{script},
	   live_line => 4, garbage_line => 5 };
}

sub file_text {
  my ($path) = @_;
  open my $fh, '<:raw', $path or return '';
  local $/;
  my $s = <$fh>;
  return defined $s ? $s : '';
}

# ljprof's exit status and stdout (stderr to a file).
sub ljprof_out {
  my @args = @_;
  my $err = scratch() . '/ljprof.err';
  my $pid = open(my $fh, '-|') // die "fork: $!";
  if ($pid == 0) {
    open STDERR, '>', $err or die $!;
    exec 'ljprof', @args or die "exec ljprof: $!";
  }
  local $/;
  my $out = <$fh>;
  close $fh;
  return ($? >> 8, defined $out ? $out : '', file_text($err));
}

# The JSON report of a stream, decoded.
sub json_report {
  my ($bin, @opts) = @_;
  my ($rc, $out, $err) = ljprof_out('report', '--format=json', @opts, $bin);
  die "json report of $bin: exit $rc: $err" if $rc > 1;
  return JSON::PP->new->decode($out);
}

1;
