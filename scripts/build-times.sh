#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Where a build's time went, from Ninja's own log (build/<preset>/.ninja_log): the compiler time
# of every translation unit, summed for the product and for the tests, the links and generators,
# the wall time, and the 15 slowest units. Run it after a clean build (`rm -rf build/default`,
# then scripts/test.sh or `cmake --build --preset default`): Ninja logs each output's latest
# build, and times restart at 0 with every build, so after an incremental build the wall time is
# that build's and the sums mix builds. With ccache, a cache hit costs almost nothing: set
# CCACHE_DISABLE=1 to measure the compiler.
#   scripts/build-times.sh [preset] [how many slowest units, 15]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
top="${2:-15}"
log="build/$preset/.ninja_log"
[ -f "$log" ] || { echo "build-times: no $log (build the $preset preset first)" >&2; exit 1; }

# One row per output (the newest entry wins), then durations in ms with the output's name.
rows=$(awk -F'\t' '!/^#/ { end[$4] = $2; start[$4] = $1 }
  END { for (o in end) printf "%d\t%d\t%s\n", end[o] - start[o], end[o], o }' "$log")
# A custom command that writes several files is logged once per file: count it once (same end).
echo "$rows" | awk -F'\t' '
  { key = $2 "\t" $1 }
  seen[key]++ && $3 !~ /\.o$/ { next }
  {
    ms = $1; out = $3
    if ($2 > wall) wall = $2
    if (out ~ /\.o$/) {
      if (out ~ /^tests\//) tests += ms; else product += ms
      units++
    } else {
      other += ms
    }
  }
  END {
    printf "wall time:              %7.1f s\n", wall / 1000
    printf "compiler, product:      %7.1f s   (kernel, hosts, plugins: what ships)\n", product / 1000
    printf "compiler, tests:        %7.1f s   (tests, fixtures, benchmarks)\n", tests / 1000
    printf "compiler, all:          %7.1f s   in %d units\n", (product + tests) / 1000, units
    printf "links and generators:   %7.1f s\n", other / 1000
  }'
echo "slowest $top units:"
echo "$rows" | awk -F'\t' '$3 ~ /\.o$/' | sort -t$'\t' -k1,1nr | head -n "$top" |
  awk -F'\t' '{ printf "  %6.1f s  %s\n", $1 / 1000, $3 }'
