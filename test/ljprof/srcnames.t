#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Lua functions by the names their source gives them: the reports read
# the line each function starts at from its chunk's file and name it as
# it is declared or assigned there; no name when the line holds two
# functions or none, the chunk is not a file, or the file is gone or not
# a regular file.
use strict;
use warnings;
no warnings 'portable';    # 64-bit addresses
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use LJProf::Stream;
use LJProf::Run;

my $dir = scratch_dir();
my $src = "$dir/app.lua";
write_file($src, <<'LUA');
local function parse(s)                 -- 1
function M.handle(req)                  -- 2
function Conn:send(data)                -- 3
M.cache.get = function(k)               -- 4
local on_close = function() end         -- 5
  encode = function(v) return v end,    -- 6
local a, b = function() end, function() end -- 7
return function(x) return x end         -- 8
t["key"] = function() end               -- 9
if x == function() end then end         -- 10
LUA
my %want = (1 => 'parse', 2 => 'M.handle', 3 => 'Conn:send', 4 => 'M.cache.get',
            5 => 'on_close', 6 => 'encode', 7 => undef, 8 => undef, 9 => 't["key"]', 10 => undef);

my $base = 0x1000;
my @protos = map { sym_lfunc($base + $_ * 0x10, "\@$src", $_) } sort { $a <=> $b } keys %want;
push @protos, sym_lfunc(0x2000, "\@$dir/gone.lua", 1), sym_lfunc(0x2010, '@/dev/zero', 1),
  sym_lfunc(0x2020, '=stdin', 1);
my @samples = map { sp_sample(LFUNC, f_lua($base + $_ * 0x10, $_ + 1)) } keys %want;
push @samples, map { sp_sample(LFUNC, f_lua($_, 2)) } 0x2000, 0x2010, 0x2020;
my $file = write_file("$dir/names.bin", symtab(@protos) . sysprof(3, sp_config(MODE_C, 1000, 0), @samples,
  sp_stats(scalar @samples, [0, scalar @samples], 0, 0, 1_000_000)));

my $j = ljprof_json($file)->{json};
my %got = map { $_->{name} => $_->{lua_name} } @{ $j->{functions} };
for my $line (sort { $a <=> $b } keys %want) {
  is($got{"\@$src:$line"}, $want{$line},
     "json: line $line " . (defined $want{$line} ? "is $want{$line}" : 'has no name'));
}
ok(exists $got{"\@$dir/gone.lua:1"} && !defined $got{"\@$dir/gone.lua:1"}, 'json: a file gone, no name');
ok(exists $got{'@/dev/zero:1'} && !defined $got{'@/dev/zero:1'}, 'json: not a regular file, no name (and no hang)');
ok(exists $got{'=stdin:1'} && !defined $got{'=stdin:1'}, 'json: a chunk that is no file, no name');

my $r = ljprof('report', '--top', '100', $file);
is($r->{rc}, 0, 'text: exit 0') or diag $r->{err};
like($r->{out}, qr/^\@\Q$src:3 (function Conn:send): 1 self\E/m, 'text: the function and its name');
like($r->{out}, qr/^\@\Q$src:7: 1 self\E/m, 'text: no name where the source has two functions');

done_testing();
