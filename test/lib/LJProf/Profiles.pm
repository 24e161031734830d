# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
package LJProf::Profiles;
# Real profiles for the format tests: a CPU workload (sysprof, mode C)
# whose hot line is known, one compiled with a callee inlined into its
# loop, and a memory workload (memprof) where the site allocating the most
# is not the one holding the most at the end; a hand-made stream of traces
# running inlined frames; and the JSON report of a stream, the totals
# every other format must agree with.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use Exporter 'import';
use JSON::PP;
use LJProf::Lua;
use LJProf::Stream;

our @EXPORT = qw(cpu_profile compiler_profile inlined_profile inlined_stream memory_profile
                 json_report ljprof_out file_text);

# Lines of the CPU payload: hot()'s loop, hot()'s first line.
use constant { HOT_LINE => 5, HOT_FIRST_LINE => 3 };

# { bin, script, name (the chunk as the reports print it), hot_line,
#   hot_first_line }
sub cpu_profile {
  my $bin = scratch() . '/cpu.bin';
  my $run = run_lua(<<"LUA", timeout => 120);
jit.off()
local function cold(n) local x = 0 for i = 1, n do x = x + i end return x end
local function hot(n)
  local x = 0
  for i = 1, n do x = x + i % 7 end
  return x
end
assert(misc.sysprof.start({ mode = "C", interval = 1, path = "$bin" }))
while misc.sysprof.report().samples < 600 do
  hot(200000); cold(10000) end
assert(misc.sysprof.stop())
LUA
  die "CPU payload failed: $run->{err}" if $run->{rc};
  return { bin => $bin, script => $run->{script}, name => '@' . $run->{script},
	   hot_line => HOT_LINE, hot_first_line => HOT_FIRST_LINE };
}

# A loop compiled again after every jit.flush(), until 1000 samples: most
# samples are the JIT compiler's, each at work on trace 1 (sysprof C at
# 1 ms, from LJPROF). { bin, script }; dies when the payload fails.
sub compiler_profile {
  my $bin = scratch() . '/compiler.bin';
  my $run = run_lua(<<'LUA', env => { LJPROF => "cpu:mode=C,interval=1,path=$bin" }, timeout => 120);
local function work(n) local x = 0 for i = 1, n do x = x + i % 3 end return x end
local s = 0
while misc.sysprof.report().samples < 1000 do
  s = s + work(300)
  jit.flush()
end
print(s)
LUA
  die "compiler payload failed: $run->{err}" if $run->{rc};
  return { bin => $bin, script => $run->{script} };
}

# JIT on: a small function, fill(), is called in a hot loop and inlined
# into its trace; its memset costs four times the caller's own. Undef when
# the VM has no JIT.
# { bin, script, callee_first_line, callee_line (fill's memset), call_line
#   (the loop's call of fill), caller_line (the loop's own memset) }
sub inlined_profile {
  my $jit = run_lua('io.write(jit.status() and "on" or "off")');
  return undef unless $jit->{out} eq 'on';
  my $bin = scratch() . '/inlined.bin';
  my $run = run_lua(<<"LUA", timeout => 120);
local ffi = require("ffi")
ffi.cdef("void *memset(void *s, int c, size_t n);")
local C, buf = ffi.C, ffi.new("uint8_t[262144]")
local function fill(n)
  C.memset(buf, n, 131072)
  return n
end
local s = 0
assert(misc.sysprof.start({ mode = "C", interval = 1, path = "$bin" }))
while misc.sysprof.report().samples < 800 do
  for i = 1, 200 do
    s = s + fill(i)
    C.memset(buf, i, 32768)
  end
end
assert(misc.sysprof.stop())
LUA
  die "inlined payload failed: $run->{err}" if $run->{rc};
  return { bin => $bin, script => $run->{script}, callee_first_line => 4,
           callee_line => 5, call_line => 12, caller_line => 13 };
}

# A stream of samples in a trace (TRACE [1] @m.lua:10) that runs frames of
# @m.lua inlined: the main chunk (first line 0) calls fill() (first line
# 4) at line 11, fill() calls put() (first line 20) at line 6. Written to
# $path, which is returned. Its samples, innermost first:
#   3  memset, the trace with 3 Lua frames: put:21, fill:6, main:11
#   2  the trace with 2: fill:5, main:11
#   1  the same with 3 said (more than follow), 1 with 2^64-1
#   1  the trace with 3, a native frame after the first Lua frame
#   1  the trace with 1: main:12
#   1  the same with 2 (more than follow) and fill:5 alone (mode L)
#   1  fill:5, main:11 in the interpreter
#   1  the trace in tag 5 (no count), fill:7, main:13; 1 with 0 said
sub inlined_stream {
  my ($path) = @_;
  my ($main, $fill, $put, $native) = (0x100, 0x200, 0x300, f_native(0x401050));
  my $trace = sub { f_trace_lua(1, $main, 10, $_[0]) };
  return write_file($path, symtab(sym_lfunc($main, '@m.lua', 0), sym_lfunc($fill, '@m.lua', 4),
                                  sym_lfunc($put, '@m.lua', 20), sym_cfunc(0x401000, 'main'),
                                  sym_cfunc(0x7f0000001000, 'memset'), sym_trace(1, $main, 10))
    . sysprof(3, sp_config(MODE_C, 1000, 0),
      (sp_sample(TRACE, f_native(0x7f0000001010), $trace->(3), f_lua($put, 21), f_lua($fill, 6),
                 f_lua($main, 11), $native)) x 3,
      (sp_sample(TRACE, $trace->(2), f_lua($fill, 5), f_lua($main, 11), $native)) x 2,
      sp_sample(TRACE, $trace->(3), f_lua($fill, 5), f_lua($main, 11), $native),
      sp_sample(TRACE, $trace->(~0), f_lua($fill, 5), f_lua($main, 11), $native),
      sp_sample(TRACE, $trace->(3), f_lua($fill, 5), f_native(0x7f0000001010), f_lua($main, 11), $native),
      sp_sample(TRACE, $trace->(1), f_lua($main, 12), $native),
      sp_sample(TRACE, $trace->(2), f_lua($fill, 5)),
      sp_sample(LFUNC, f_lua($fill, 5), f_lua($main, 11), $native),
      sp_sample(TRACE, f_trace(1, $main, 10), f_lua($fill, 7), f_lua($main, 13), $native),
      sp_sample(TRACE, $trace->(0), f_lua($fill, 7), f_lua($main, 13), $native),
      sp_stats(13, [0, 1, 0, 0, 0, 0, 0, 0, 0, 12], 0, 0, 13_000_000)));
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
