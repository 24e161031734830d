# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
package LJProf::Nginx;
# Debian's nginx with its Lua module, run on our library: a server in a
# prefix directory of its own on a loopback port, started with LJPROF in
# its environment (as a systemd drop-in sets it), asked over HTTP, told to
# reload and quit, every wait bounded.
#
#   my $why = LJProf::Nginx::unavailable();      # undef, or why to skip
#   my $ngx = LJProf::Nginx->start(ljprof => 'cpu', workers => 2,
#                                  lua => $content_by_lua);
#   my $body = $ngx->get('/');                   # undef: no answer in time
#   $ngx->reload; $ngx->quit;                    # true once obeyed
use strict;
use warnings;
use File::Temp qw(tempdir);
use IO::Socket::INET;
use Time::HiRes qw(sleep time);
use LJProf::Pace qw(wait_until);

my $NGINX = '/usr/sbin/nginx';
my $MODULES = '/usr/lib/nginx/modules';

# Seconds for a start, a reload or a quit on a quick machine (scaled:
# LJProf::Pace); a hang still ends the test.
our $WAIT = 30;

# Where nginx finds libluajit-5.1.so.2 (its LD_LIBRARY_PATH): the build's,
# unless a test sets $LIBRARY_DIR (an installed package's, say).
our $LIBRARY_DIR;
sub library_dir { return $LIBRARY_DIR // "$ENV{LJPROF_BUILD_DIR}/lib" }

# Why nginx cannot run here on our library; undef if it can. Debian's Lua
# module links OpenResty's luajit2: only that flavour of our library loads.
sub unavailable {
  return 'LJPROF_BUILD_DIR is not set' unless $ENV{LJPROF_BUILD_DIR} || $LIBRARY_DIR;
  return 'cross-built: nginx runs on the host' if $ENV{LJPROF_CROSS};
  return "no $NGINX (nginx-light)" unless -x $NGINX;
  return "no $MODULES/ngx_http_lua_module.so (libnginx-mod-http-lua)"
    unless -e "$MODULES/ngx_http_lua_module.so";
  my $lib = library_dir() . '/libluajit-5.1.so.2';
  return "no $lib" unless -e $lib;
  my $syms = `nm -D --defined-only '$lib' 2>/dev/null`;
  return 'not OpenResty\'s luajit2: nginx\'s Lua module needs lua_setexdata'
    unless $syms =~ /\blua_setexdata\b/;
  return undef;
}

# A loopback port nobody listens on now.
sub free_port {
  my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                                Proto => 'tcp', Listen => 1) or die "bind: $!";
  my $port = $s->sockport;
  close $s;
  return $port;
}


# http => LINES adds to the http block; locations => { PATH => CODE } adds
# a location whose content handler is CODE, beside / (lua's).
sub config {
  my ($self, %o) = @_;
  my $lua = $o{lua} // 'ngx.say("pid ", ngx.worker.pid())';
  my $http = $o{http} // '';
  my $more = join '', map {
    "    location = $_ {\n      content_by_lua_block { $o{locations}{$_} }\n    }\n"
  } sort keys %{ $o{locations} // {} };
  return <<"CONF";
load_module $MODULES/ndk_http_module.so;
load_module $MODULES/ngx_http_lua_module.so;
env LJPROF;
worker_processes $o{workers};
pid $self->{prefix}/nginx.pid;
error_log $self->{prefix}/error.log notice;
events { worker_connections 64; }
http {
  access_log off;
$http
  server {
    listen 127.0.0.1:$self->{port} reuseport;
    location / {
      content_by_lua_block { $lua }
    }
$more  }
}
CONF
}

# start(ljprof => VALUE or undef, workers => N, lua => CODE, and config's
# http and locations): the server
# once its pid file names a running master; undef (and $@ says why) if it
# did not start in time.
sub start {
  my ($class, %o) = @_;
  $o{workers} //= 2;
  my $self = bless { prefix => tempdir(CLEANUP => 1), port => free_port() },
    $class;
  chmod 0755, $self->{prefix};
  mkdir "$self->{prefix}/conf";
  mkdir "$self->{prefix}/logs";
  open my $fh, '>', "$self->{prefix}/conf/nginx.conf" or die $!;
  print $fh $self->config(%o);
  close $fh;
  local $ENV{LD_LIBRARY_PATH} = library_dir();
  local $ENV{LJPROF} = $o{ljprof} if defined $o{ljprof};
  delete local $ENV{LJPROF} unless defined $o{ljprof};
  my $out = `$NGINX -p $self->{prefix} -c conf/nginx.conf 2>&1`;
  if ($? != 0) {
    my $how = $? & 127 ? "killed by signal " . ($? & 127) : "exit " . ($? >> 8);
    my $log = `cat '$self->{prefix}/logs/error.log' 2>/dev/null`;
    $@ = "nginx did not start ($how): $out$log";
    return undef;
  }
  $self->{master} = wait_until('the master', $WAIT, sub { $self->master });
  unless ($self->{master}) {
    $@ = 'no master named in the pid file';
    return undef;
  }
  # The master writes its pid file before it forks its workers.
  unless (wait_until('the workers', $WAIT, sub { my @w = $self->workers; @w >= $o{workers} })) {
    $@ = "fewer than $o{workers} workers";
    return undef;
  }
  return $self;
}

# The master's pid, from its pid file, if it runs.
sub master {
  my ($self) = @_;
  open my $fh, '<', "$self->{prefix}/nginx.pid" or return undef;
  my $pid = <$fh>;
  return undef unless defined $pid && $pid =~ /^(\d+)/;
  return running($1) ? $1 : undef;
}

# The master's children: its workers (and cache processes, if any).
sub workers {
  my ($self) = @_;
  my @kids;
  for my $stat (glob '/proc/[0-9]*/stat') {
    open my $fh, '<', $stat or next;
    my $line = <$fh> // next;
    push @kids, $1 if $line =~ /^(\d+) \(.*\) \S (\d+) / && $2 == $self->{master};
  }
  return sort { $a <=> $b } @kids;
}

# One GET; the body, or undef if no answer came within $secs (default 5).
sub get {
  my ($self, $path, $secs) = @_;
  $secs //= 5;
  my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $self->{port},
                                Proto => 'tcp', Timeout => $secs) or return undef;
  $s->print("GET $path HTTP/1.0\r\nHost: localhost\r\n\r\n");
  my $resp = '';
  my $end = time + $secs;
  my $sel = '';
  vec($sel, fileno($s), 1) = 1;
  while (time < $end) {
    my $r = $sel;
    last unless select($r, undef, undef, $end - time);
    my $n = sysread($s, my $buf, 65536);
    last unless $n;
    $resp .= $buf;
  }
  return $resp =~ /^HTTP\/1\.\d 200.*?\r\n\r\n(.*)\z/s ? $1 : undef;
}

# Ask $path until each worker has answered $n times (a body "pid PID ...",
# as the default handler's); the answers by worker, once each has them or
# $WAIT seconds are over. reuseport spreads the connections.
sub each_worker {
  my ($self, $path, $n) = @_;
  my %by;
  my @workers = $self->workers;
  wait_until("$n answers from each worker", $WAIT, sub {
    my $body = $self->get($path, 2);
    $by{$1}++ if defined $body && $body =~ /^pid (\d+)/;
    !grep { ($by{$_} // 0) < $n } @workers;
  });
  return \%by;
}

# The first answer within $WAIT seconds, asking again as the server comes up.
sub answer {
  my ($self, $path) = @_;
  return wait_until('an answer', $WAIT, sub { $self->get($path // '/', 2) });
}

sub signal {
  my ($self, $what) = @_;
  local $ENV{LD_LIBRARY_PATH} = library_dir();
  my $out = `$NGINX -p $self->{prefix} -c conf/nginx.conf -s $what 2>&1`;
  return $? == 0;
}

# nginx -s reload: true once the workers are all new ones that answer.
sub reload {
  my ($self) = @_;
  my %old = map { $_ => 1 } $self->workers;
  $self->signal('reload') or return 0;
  return wait_until('new workers', $WAIT, sub {
    my @now = $self->workers;
    @now && !grep { $old{$_} } @now;
  }) && defined $self->answer('/');
}

# A process that runs: exists and is no zombie (whose reaper may be slow).
sub running {
  my ($pid) = @_;
  open my $fh, '<', "/proc/$pid/stat" or return 0;
  my $line = <$fh> // return 0;
  return $line !~ /^\d+ \(.*\) Z /;
}

# nginx -s quit: true once the master and its workers are gone.
sub quit {
  my ($self) = @_;
  my @pids = ($self->{master}, $self->workers);
  $self->signal('quit') or return 0;
  my $gone = wait_until('the server gone', $WAIT,
                        sub { !grep { running($_) } @pids });
  $self->stop_hard unless $gone;
  return $gone;
}

# What is left of the server, killed.
sub stop_hard {
  my ($self) = @_;
  my @pids = grep { $_ } ($self->{master}, $self->workers);
  kill 'KILL', @pids if @pids;
  $self->{master} = undef;
}

sub DESTROY {
  my ($self) = @_;
  $self->stop_hard if $self->{master} && running($self->{master});
}

sub error_log {
  my ($self) = @_;
  open my $fh, '<', "$self->{prefix}/error.log" or return '';
  local $/;
  return <$fh>;
}

1;
