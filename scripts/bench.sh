#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs the benchmarks (tests/bench). Extra arguments go to Google Benchmark, e.g.
#   scripts/bench.sh --benchmark_filter=Bus --benchmark_repetitions=5
source "$(dirname "$0")/common.sh"
molt_build default molt_bench
./build/default/tests/bench/molt_bench --benchmark_min_time=0.5 "$@"
