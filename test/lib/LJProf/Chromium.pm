# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
package LJProf::Chromium;
# The HTML pages in a real headless Chromium (Debian's), for the tests of
# the flame graph: what a page embeds, the DOM it builds (a search given
# as #search=TEXT in its address), and that it fetches nothing.
use strict;
use warnings;
use Exporter 'import';
use File::Temp qw(tempdir);
use JSON::PP;
use Test::More;
use LJProf::Lua ();
use LJProf::Pace qw(scaled);

our @EXPORT = qw(chromium_path chromium dom embedded uri_escape unescape_html self_contained);

my $dir = LJProf::Lua::scratch();

# The browser, or undef: a test skips without it.
sub chromium_path {
  my ($path) = grep { -x } map { "/usr/bin/$_" } qw(chromium chromium-browser);
  return $path;
}

# The data the page embeds.
sub embedded {
  my ($file) = @_;
  my ($json) = LJProf::Lua::slurp($file) =~ m{<script type="application/json" id="profile-data">(.*?)</script>}s;
  return JSON::PP->new->decode($json // 'null');
}

# Chromium, headless, in a fresh profile; nothing from the network.
sub chromium {
  my (@args) = @_;
  my $profile = tempdir(CLEANUP => 1);
  my $cmd = join ' ', map { "'$_'" } 'timeout', scaled(90), chromium_path(), qw(--headless --no-sandbox --disable-gpu
    --disable-quic --no-first-run --disable-background-networking --disable-component-update
    --disable-sync), '--window-size=1200,800', "--user-data-dir=$profile", @args;
  my $out = `$cmd 2>'$dir/chromium.err'`;
  return ($? >> 8, $out);
}

# The DOM of the page at $file once its script ran, after a search (and
# zoomed into the frame named $zoom, as a click does).
sub dom {
  my ($file, $search, $zoom) = @_;
  my @hash = ((defined $search ? 'search=' . uri_escape($search) : ()),
              (defined $zoom ? 'zoom=' . uri_escape($zoom) : ()));
  my $url = "file://$file" . (@hash ? '#' . join('&', @hash) : '');
  my ($rc, $dom) = chromium('--dump-dom', $url);
  is($rc, 0, 'chromium rendered ' . ($search // $zoom // 'the page')) or diag LJProf::Lua::slurp("$dir/chromium.err");
  return $dom;
}

sub uri_escape {
  my ($s) = @_;
  $s =~ s/([^A-Za-z0-9._~-])/sprintf '%%%02X', ord $1/ge;
  return $s;
}

sub unescape_html {
  my ($s) = @_;
  $s =~ s/&lt;/</g; $s =~ s/&gt;/>/g; $s =~ s/&quot;/"/g; $s =~ s/&amp;/&/g;
  return $s;
}

sub self_contained {
  my ($file, $what) = @_;
  my $text = LJProf::Lua::slurp($file);
  unlike($text, qr/\b(?:src|href)\s*=|https?:|\@import|url\(|<link/i, "$what: nothing is fetched from anywhere");
  is(() = $text =~ /<script\b/g, 2, "$what: the script and the data inline");
}

1;
