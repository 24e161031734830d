#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# What each route costs, on Debian's nginx with its Lua module on our
# library: two routes whose handlers each label the request with one line
# (ljprof.nginx), /costly doing three times /cheap's work, alternated by
# wrk's load over two workers profiled from the start. Split by route, the
# samples in the handlers' Lua code give /costly 75 % ± 5 points.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use File::Temp qw(tempdir);
use LJProf::Nginx;
use LJProf::Pace qw(scaled wait_until);
use LJProf::Run qw(ljprof);

if (my $why = LJProf::Nginx::unavailable()) {
  plan skip_all => $why;
}
my $WRK = '/usr/bin/wrk';
plan skip_all => "no $WRK (wrk)" unless -x $WRK;

my $dir = tempdir(CLEANUP => 1);
chmod 01777, $dir;  # The workers run as nobody.

# The handlers' code, a module of its own: its frames tell the handlers'
# samples from nginx's. The same loop, compiled once, runs for both: only
# the label tells them apart. Its sum is printed, so it is computed.
my $lua_dir = "$dir/lua";
mkdir $lua_dir;
chmod 0755, $lua_dir;
open my $fh, '>', "$lua_dir/routes.lua" or die $!;
print $fh <<'LUA';
local ljprof = require("ljprof.nginx")
local M = {}
local function spin(n)
  local x = 0
  for i = 1, n do x = x + (i * 7) % 13 end
  return x
end
function M.cheap() ljprof.route("/cheap") ngx.say(spin(20000)) end
function M.costly() ljprof.route("/costly") ngx.say(spin(60000)) end
return M
LUA
close $fh;

# wrk alternates the two routes on each connection.
open $fh, '>', "$dir/alternate.lua" or die $!;
print $fh <<'LUA';
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", n % 2 == 0 and "/cheap" or "/costly")
end
LUA
close $fh;

my $repo_lua = "$FindBin::Bin/../../lua";
my $ngx = LJProf::Nginx->start(
  ljprof => "cpu:interval=1,path=$dir/cpu-%p.bin", workers => 2,
  http => "  lua_package_path '$lua_dir/?.lua;$repo_lua/?.lua;;';",
  locations => { '/cheap' => 'require("routes").cheap()',
                 '/costly' => 'require("routes").costly()' });
ok($ngx, 'nginx starts with two profiled workers') or diag $@;
SKIP: {
  skip 'no server', 4 unless $ngx;
  like($ngx->answer('/cheap') // '', qr/^\d+$/, '/cheap answers');
  like($ngx->answer('/costly') // '', qr/^\d+$/, '/costly answers');
  my $secs = scaled(3);
  my $out = `$WRK -t1 -c4 -d${secs}s -s $dir/alternate.lua http://127.0.0.1:$ngx->{port}/ 2>&1`;
  my ($requests) = $out =~ /(\d+) requests in/;
  ok(($requests // 0) >= 100, "wrk made its requests ($secs s)") or diag $out;
  ok($ngx->quit, 'nginx quits, its workers write their profiles');
}

my @streams = glob "$dir/cpu-*.bin";
cmp_ok(scalar(@streams), '>=', 2, 'a profile from each worker (and the master)');

# The samples in the handlers' code (a frame of routes.lua), under a label.
sub handler_samples {
  my ($label) = @_;
  my $r = ljprof('report', '--format=collapsed', "--label=route=$label", @streams);
  is($r->{rc}, 0, "report --label=route=$label") or diag $r->{err};
  my $n = 0;
  for (split /\n/, $r->{out}) {
    my ($stack, $count) = /^(.*) (\d+)$/ or next;
    $n += $count if $stack =~ /routes\.lua/;
  }
  return $n;
}
my $cheap = handler_samples('/cheap');
my $costly = handler_samples('/costly');
my $all = $cheap + $costly;
cmp_ok($all, '>=', 200, "samples in the handlers' code: $all");
my $share = $all ? 100 * $costly / $all : 0;
ok($share >= 70 && $share <= 80,
   sprintf('/costly holds %.1f %% of them (%d of %d; 75 ± 5 expected)',
           $share, $costly, $all));

done_testing();
