# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
package LJProf::Stream;
# Hand-built profile streams (see docs/formats.md of the project and the
# reference's formats): ULEB128 integers, length-prefixed strings, a symbol
# table (ljs v3) followed by a memprof stream (ljm v3 to v6) or a sysprof
# stream (ljp v2, the reference's, or v3 and v4, ours; v4 and ljm v6 with
# labels).
#
#   my $bin = symtab(sym_lfunc(0x100, '@test.lua', 1))
#           . memprof(ev_alloc(lua(0x100, 5), 0x1000, 32));
#   my $cpu = symtab(sym_lfunc(0x100, '@test.lua', 1))
#           . sysprof(3, sp_config(MODE_C, 1000, 0),
#                     sp_sample(LFUNC, f_lua(0x100, 5), f_native(0x4000)),
#                     sp_stats(1, [0, 1], 0, 0, 1e6));
use strict;
use warnings;
use Exporter 'import';

our @EXPORT = qw(
  uleb str prologue
  symtab sym_lfunc sym_cfunc sym_trace
  memprof memprof_v4 internal lua cfunc trace trace_lua vm jit
  VM_RECORD VM_OPT VM_ASM VM_GC VM_EXIT VM_STACK
  ev_alloc ev_free ev_realloc upd_lfunc upd_cfunc upd_trace upd_traceloc
  memprof_v5 ev_stack ev_sampled upd_stack sf_lua sf_cfunc sf_trunc sf_native info_config info_stats
  info_mark info_process
  memprof_v6 info_labelset info_labels LABELS_OTHER
  sp_labelset sp_labels sp_labelcounts
  write_file NO_LINE
  sysprof sp_sample f_lua f_cfunc f_ffunc f_native f_trace f_trace_lua
  sp_upd_lfunc sp_upd_cfunc sp_upd_trace sp_ffname sp_config sp_stats sp_process
  v2_sample v2_trace sp_jit_sample sp_jit sp_start sp_end sp_abort sp_blacklist sp_flush sp_exits
  INTERP LFUNC FFUNC CFUNC GC EXIT RECORD OPT ASM TRACE MODE_D MODE_L MODE_C
);

# Line -1 as the VM writes it: 64-bit two's complement, a 10-byte ULEB128.
use constant NO_LINE => ~0;

sub uleb {
  my ($n) = @_;
  my $out = '';
  do {
    my $byte = $n & 0x7f;
    $n >>= 7;
    $out .= chr($n ? $byte | 0x80 : $byte);
  } while ($n);
  return $out;
}

sub str { my ($s) = @_; return uleb(length $s) . $s }

sub prologue { my ($magic, $version) = @_; return $magic . chr($version) . "\0\0\0" }

# Symbol table entries: header byte [F UUUUU TT], then the fields.
sub sym_lfunc { return "\x00" . lfunc_fields(@_) }  # (addr, chunk, first line)
sub sym_cfunc { return "\x01" . cfunc_fields(@_) }  # (addr, name)
sub sym_trace { return "\x02" . trace_fields(@_) }  # (trace no, proto, line)
sub symtab { return prologue('ljs', 3) . join('', @_) . "\x80" }

sub lfunc_fields { my ($addr, $chunk, $line) = @_; return uleb($addr) . str($chunk) . uleb($line) }
sub cfunc_fields { my ($addr, $name) = @_; return uleb($addr) . str($name) }
sub trace_fields { my ($no, $proto, $line) = @_; return uleb($no) . uleb($proto) . uleb($line) }

# Event locations: [source, encoded fields].
sub internal { return [1, ''] }
sub lua      { my ($proto, $line) = @_; return [2, uleb($proto) . uleb($line)] }
sub cfunc    { my ($addr) = @_; return [3, uleb($addr)] }
sub trace    { my ($no) = @_; return [4, uleb($no)] }
sub trace_lua { my ($index) = @_; return [5, uleb($index)] }  # v4: an announced trace location
# v4: the VM's own work of a kind; the compiler's names its trace and start.
use constant { VM_RECORD => 0, VM_OPT => 1, VM_ASM => 2, VM_GC => 3, VM_EXIT => 4, VM_STACK => 5 };
sub vm       { my ($kind) = @_; return [6, uleb($kind)] }
sub jit      { my ($kind, $no, $proto, $line) = @_; return [6, uleb($kind) . uleb($no) . uleb($proto) . uleb($line)] }

# Memprof events: header [F UU SSS EE], the location, the payload.
sub event { my ($ev, $loc, @fields) = @_; return chr($loc->[0] << 2 | $ev) . $loc->[1] . join('', map { uleb($_) } @fields) }
sub ev_alloc   { return event(1, @_) }  # (loc, new addr, new size)
sub ev_free    { return event(2, @_) }  # (loc, old addr, old size)
sub ev_realloc { return event(3, @_) }  # (loc, old addr, old size, new addr, new size)

# Symtab updates inside the memprof stream: the entry without its header.
sub upd_lfunc { return "\x08" . lfunc_fields(@_) }  # (addr, chunk, first line)
sub upd_cfunc { return "\x0C" . cfunc_fields(@_) }  # (addr, name)
sub upd_trace { return "\x10" . trace_fields(@_) }  # (trace no, proto, line)
sub upd_traceloc { my ($index, @trace) = @_; return "\x14" . uleb($index) . trace_fields(@trace) }  # v4: (index, trace no, proto, line)

sub memprof { return prologue('ljm', 3) . join('', @_) . "\x80" }
sub memprof_v4 { return prologue('ljm', 4) . join('', @_) . "\x80" }
sub memprof_v5 { return prologue('ljm', 5) . join('', @_) . "\x80" }
sub memprof_v6 { return prologue('ljm', 6) . join('', @_) . "\x80" }

# v5: events with a stack id (header bit 0x20) and a sampled allocation's
# weight (0x40); stack records (0x18) and config / stats records (0x1C).
sub ev_stack {  # (event, loc, stack id, payload fields...)
  my ($ev, $loc, $stack, @fields) = @_;
  return chr(0x20 | $loc->[0] << 2 | $ev) . $loc->[1] . uleb($stack) . join('', map { uleb($_) } @fields);
}
sub ev_sampled {  # (loc, stack id, new addr, new size, weight)
  my ($loc, $stack, @fields) = @_;
  return chr(0x60 | $loc->[0] << 2 | 1) . $loc->[1] . uleb($stack) . join('', map { uleb($_) } @fields);
}
sub upd_stack { my ($id, @frames) = @_; return "\x18" . uleb($id) . uleb(scalar @frames) . join('', @frames) }
sub sf_lua   { my ($proto, $line) = @_; return "\x01" . uleb($proto) . uleb($line) }
sub sf_cfunc { my ($addr) = @_; return "\x02" . uleb($addr) }
sub sf_trunc { return "\x03" }
sub sf_native { my ($addr) = @_; return "\x04" . uleb($addr) }
sub info_config { my ($stacks, $sample) = @_; return "\x1C\x00" . uleb($stacks) . uleb($sample) }
sub info_stats { return "\x1C\x01" . join('', map { uleb($_) } @_) }  # (stacks, full, truncated, samples, untracked)
sub info_mark { my ($ns) = @_; return "\x1C\x02" . uleb($ns) }  # time mark: ns since the start
sub process_fields { my ($pid, $host, $ns) = @_; return uleb($pid) . str($host) . uleb($ns) }
sub info_process { return "\x1C\x04" . process_fields(@_) }  # (pid, host, ns since the epoch)

# Labels (ljm v6, ljp v4): a set announced, (number, [key, value], ...),
# the pairs written in the order given (the writer sorts them by key: a
# test may not); a set in force (number; 0 none, LABELS_OTHER the folded
# sets). v6 stats and v4 stats end with the count of sets folded.
use constant LABELS_OTHER => 0xffffffff;
sub labelset_fields { my ($no, @pairs) = @_; return uleb($no) . uleb(scalar @pairs) . join('', map { str($_->[0]) . str($_->[1]) } @pairs) }
sub info_labelset { return "\x1C\x05" . labelset_fields(@_) }
sub info_labels { my ($no) = @_; return "\x1C\x06" . uleb($no) }

# Sysprof: VM states (the first byte of a sample) and profiling modes.
use constant { INTERP => 0, LFUNC => 1, FFUNC => 2, CFUNC => 3, GC => 4, EXIT => 5,
               RECORD => 6, OPT => 7, ASM => 8, TRACE => 9 };
use constant { MODE_D => 0, MODE_L => 1, MODE_C => 2 };

sub sysprof { my ($version, @records) = @_; return prologue('ljp', $version) . join('', @records) . "\x80" }

# v3 frames, innermost first in a sample; v2 Lua stacks use tags 1 to 3.
sub f_lua    { my ($proto, $line) = @_; return "\x01" . uleb($proto) . uleb($line) }
sub f_cfunc  { my ($addr) = @_; return "\x02" . uleb($addr) }
sub f_ffunc  { my ($id) = @_; return "\x03" . uleb($id) }
sub f_native { my ($addr) = @_; return "\x04" . uleb($addr) }
sub f_trace  { return "\x05" . trace_fields(@_) }    # (trace no, proto, line)
# (trace no, proto, line, how many of the Lua frames that follow run in the
# trace's code: those it inlined, then the one it was entered in)
sub f_trace_lua { my ($no, $proto, $line, $nlua) = @_; return "\x06" . trace_fields($no, $proto, $line) . uleb($nlua) }

# v3 records.
sub sp_sample { my ($state, @frames) = @_; return chr($state) . join('', @frames) . "\x80" }
sub sp_ffname { my ($id, $name) = @_; return "\x0D" . uleb($id) . str($name) }
sub sp_process { return "\x17" . process_fields(@_) }  # (pid, host, ns since the epoch)
sub sp_config { my ($mode, $interval_us, $clock) = @_; return "\x0E" . join('', map { uleb($_) } $mode, $interval_us, $clock) }
# (samples, [counts by VM state, INTERP first; missing ones 0], dropped, overruns, ns)
sub sp_stats {
  my ($samples, $counts, @rest) = @_;
  my @c = map { $counts->[$_] // 0 } 0 .. 9;
  return "\x0F" . join('', map { uleb($_) } $samples, @c, @rest);
}

# v3: a sample in an exit or the compiler, with its trace and exit (0x40
# on the VM state); the trace compiler's events.
sub sp_jit_sample { my ($state, $trace, $exit, @frames) = @_; return chr(0x40 | $state) . uleb($trace) . uleb($exit) . join('', @frames) . "\x80" }
sub sp_jit      { my ($on) = @_; return "\x16" . uleb($on) }
# (trace, kind: 0 root 1 side 2 stitch, from, exit, proto, line)
sub sp_start    { return "\x10" . join('', map { uleb($_) } @_) }
# (trace, link type, link, IR instructions, machine code bytes)
sub sp_end      { return "\x11" . join('', map { uleb($_) } @_) }
# (trace, proto, line, error, reason)
sub sp_abort    { my ($trace, $proto, $line, $err, $why) = @_; return "\x12" . uleb($trace) . uleb($proto) . uleb($line) . uleb($err) . str($why) }
sub sp_blacklist { my ($proto, $line) = @_; return "\x13" . uleb($proto) . uleb($line) }
sub sp_flush    { my ($why) = @_; return "\x14" . uleb($why) }
# ([trace, exit, count, proto, line], ...)
sub sp_exits    { return "\x15" . uleb(scalar @_) . join('', map { my $e = $_; join('', map { uleb($_) } @$e) } @_) }

# v4: label records (as memprof's above); mode D's samples by set,
# ([set number, samples], ...).
sub sp_labelset { return "\x18" . labelset_fields(@_) }
sub sp_labels { my ($no) = @_; return "\x19" . uleb($no) }
sub sp_labelcounts { return "\x1A" . uleb(scalar @_) . join('', map { uleb($_->[0]) . uleb($_->[1]) } @_) }

# Symtab updates in a sysprof stream (v2 and v3).
sub sp_upd_lfunc { return "\x0A" . lfunc_fields(@_) }  # (addr, chunk, first line)
sub sp_upd_cfunc { return "\x0B" . cfunc_fields(@_) }  # (addr, name)
sub sp_upd_trace { return "\x0C" . trace_fields(@_) }  # (trace no, proto, line)

# v2 samples: (state, [Lua frames, innermost first], [host addresses,
# innermost first]); the Lua stack is written for LFUNC, FFUNC, CFUNC only.
sub v2_sample {
  my ($state, $lua, $host) = @_;
  my $out = chr($state);
  $out .= join('', @$lua) . "\x80" if $state >= LFUNC && $state <= CFUNC;
  return $out . join('', map { uleb($_) } @$host) . uleb(0);
}
sub v2_trace { return chr(TRACE) . trace_fields(@_) }    # (trace no, proto, first line)

sub write_file {
  my ($path, $bytes) = @_;
  open my $fh, '>:raw', $path or die "$path: $!";
  print $fh $bytes;
  close $fh or die "$path: $!";
  return $path;
}

1;
