#!/usr/bin/env perl
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# speedscope's file format: the fields its schema requires, a "sampled"
# profile whose samples are frame indices root first, weights that sum to
# the JSON report's totals (CPU: nanoseconds, samples x interval; memory:
# bytes, or blocks with --count=events), and the hot frames named.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use List::Util qw(sum0 max);
use JSON::PP;
use Test::More;
use LJProf::Lua;
use LJProf::Profiles;

# Checks of the schema's required fields; returns the sampled profile.
sub check_schema {
  my ($doc, $what) = @_;
  is($doc->{'$schema'}, 'https://www.speedscope.app/file-format-schema.json', "$what: \$schema");
  my $frames = $doc->{shared}{frames};
  ok(ref $frames eq 'ARRAY' && @$frames, "$what: shared.frames");
  is(scalar(grep { !defined $_->{name} || ref $_->{name} } @$frames), 0, "$what: every frame has a name");
  is(scalar(grep { exists $_->{line} && $_->{line} !~ /^-?\d+$/ } @$frames), 0, "$what: lines are integers");
  is(ref $doc->{profiles}, 'ARRAY', "$what: profiles");
  my $p = $doc->{profiles}[0];
  is($p->{type}, 'sampled', "$what: a sampled profile");
  ok(defined $p->{name} && defined $p->{startValue} && defined $p->{endValue}, "$what: name, startValue, endValue");
  is(scalar @{ $p->{samples} }, scalar @{ $p->{weights} }, "$what: as many weights as samples");
  my $bad = grep { grep { $_ !~ /^\d+$/ || $_ >= @$frames } @$_ } @{ $p->{samples} };
  is($bad, 0, "$what: frame indices in range");
  is($p->{endValue}, sum0(@{ $p->{weights} }), "$what: endValue is the total weight");
  return $p;
}

# The weight of the samples whose leaf frame's name matches $re.
sub leaf_weight {
  my ($doc, $p, $re) = @_;
  my $frames = $doc->{shared}{frames};
  my $w = 0;
  for my $i (0 .. $#{ $p->{samples} }) {
    my $leaf = $p->{samples}[$i][-1];
    $w += $p->{weights}[$i] if $frames->[$leaf]{name} =~ $re;
  }
  return $w;
}

sub speedscope {
  my ($bin, @opts) = @_;
  my ($rc, $out, $err) = ljprof_out('report', '--format=speedscope', @opts, $bin);
  is($rc, 0, "speedscope @opts: exit 0") or diag $err;
  return JSON::PP->new->decode($out);
}

{ # CPU
  my $cpu = cpu_profile();
  my $doc = speedscope($cpu->{bin});
  my $p = check_schema($doc, 'cpu');
  is($p->{unit}, 'nanoseconds', 'cpu: unit nanoseconds');
  my $json = json_report($cpu->{bin});
  is(sum0(@{ $p->{weights} }), $json->{samples_with_stacks} * 1e6,
     'cpu round trip: weights = samples of the JSON report x 1 ms');
  my $src = quotemeta $cpu->{name};
  my ($hot) = grep { $_->{name} =~ /^$src:$cpu->{hot_line}$/ } @{ $doc->{shared}{frames} };
  ok($hot, 'cpu: the hot line is a frame');
  is($hot->{file}, $cpu->{script}, 'cpu: its file, the chunk name without @');
  is($hot->{line}, $cpu->{hot_line}, 'cpu: its line');
  my $hw = leaf_weight($doc, $p, qr/^$src:$cpu->{hot_line}$/);
  cmp_ok($hw, '>', 0.7 * $p->{endValue}, 'cpu: the hot line holds most of the weight');
  my $root = $doc->{shared}{frames}[ $p->{samples}[0][0] ]{name};
  is($root, '_start', 'cpu: samples are root first');
  ok(!grep({ exists $_->{file} } grep { $_->{name} eq 'main' } @{ $doc->{shared}{frames} }),
     'cpu: native frames have no file');
}

{ # memory
  my $mem = memory_profile();
  my $t = json_report($mem->{bin})->{totals};
  my $src = quotemeta $mem->{name};

  my $doc = speedscope($mem->{bin});
  my $p = check_schema($doc, 'memory');
  is($p->{unit}, 'bytes', 'memory: unit bytes');
  is($p->{endValue}, $t->{alloc_bytes} + $t->{realloc_new_bytes}, 'memory round trip: bytes allocated');
  is(max(map { scalar @$_ } @{ $p->{samples} }), 1, 'memory: a stack is the site alone');
  my $top = $doc->{shared}{frames}[ $p->{samples}[0][0] ];
  is($top->{name}, "$mem->{name}:$mem->{garbage_line}", 'memory: the site allocating the most first');
  is($top->{line}, $mem->{garbage_line}, 'memory: with its line');

  $doc = speedscope($mem->{bin}, '--count=events');
  $p = check_schema($doc, 'memory, events');
  is($p->{unit}, 'none', 'memory events: unit none');
  is($p->{endValue}, $t->{alloc_events} + $t->{realloc_events}, 'memory events round trip: blocks allocated');

  $doc = speedscope($mem->{bin}, '--leak-only');
  $p = check_schema($doc, 'memory, in use');
  is($p->{endValue}, $t->{live_bytes}, 'memory in use round trip: bytes live at the end');
  is($doc->{shared}{frames}[ $p->{samples}[0][0] ]{name}, "$mem->{name}:$mem->{live_line}",
     'memory in use: the site holding the most first');
}

{ # ljprof record passes the format through.
  my $script = LJProf::Lua::scratch() . '/record.lua';
  open my $fh, '>', $script or die $!;
  print $fh "local t = {}\nfor i = 1, 100 do t[i] = string.rep('r', 500 + i) end\n";
  close $fh;
  my $out = LJProf::Lua::scratch() . '/record.speedscope.json';
  my ($rc, undef, $err) = ljprof_out('record', '--mem', '-o', LJProf::Lua::scratch() . '/record.bin',
				     '--format=speedscope', "--report-out=$out", '--', $script);
  is($rc, 0, 'record --format=speedscope: exit 0') or diag $err;
  my $doc = JSON::PP->new->decode(file_text($out));
  my $p = check_schema($doc, 'recorded');
  ok((grep { $_->{name} eq "\@$script:2" } @{ $doc->{shared}{frames} }), 'recorded: the allocating line is a frame');
}

done_testing();
