package LJProf::Stream;
# Hand-built profile streams in the reference's byte format (see
# docs/formats.md of the project): ULEB128 integers, length-prefixed strings,
# a symbol table (ljs v3) followed by a memprof stream (ljm v3).
#
#   my $bin = symtab(sym_lfunc(0x100, '@test.lua', 1))
#           . memprof(ev_alloc(lua(0x100, 5), 0x1000, 32));
use strict;
use warnings;
use Exporter 'import';

our @EXPORT = qw(
  uleb str prologue
  symtab sym_lfunc sym_cfunc sym_trace
  memprof internal lua cfunc trace
  ev_alloc ev_free ev_realloc upd_lfunc upd_cfunc upd_trace
  write_file NO_LINE
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

# Memprof events: header [F UU SSS EE], the location, the payload.
sub event { my ($ev, $loc, @fields) = @_; return chr($loc->[0] << 2 | $ev) . $loc->[1] . join('', map { uleb($_) } @fields) }
sub ev_alloc   { return event(1, @_) }  # (loc, new addr, new size)
sub ev_free    { return event(2, @_) }  # (loc, old addr, old size)
sub ev_realloc { return event(3, @_) }  # (loc, old addr, old size, new addr, new size)

# Symtab updates inside the memprof stream: the entry without its header.
sub upd_lfunc { return "\x08" . lfunc_fields(@_) }  # (addr, chunk, first line)
sub upd_cfunc { return "\x0C" . cfunc_fields(@_) }  # (addr, name)
sub upd_trace { return "\x10" . trace_fields(@_) }  # (trace no, proto, line)

sub memprof { return prologue('ljm', 3) . join('', @_) . "\x80" }

sub write_file {
  my ($path, $bytes) = @_;
  open my $fh, '>:raw', $path or die "$path: $!";
  print $fh $bytes;
  close $fh or die "$path: $!";
  return $path;
}

1;
