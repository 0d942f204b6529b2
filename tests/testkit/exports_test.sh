#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libmolt_testkit exports its C API and nothing else: the kernel, Boost and libstdc++
# instantiations it holds stay inside, so a test program links it alone.
# Usage: exports_test.sh <libmolt_testkit.so>
set -euo pipefail
lib="$1"
exported=$(nm -D --defined-only "$lib" | awk '{print $3}')
others=$(grep -v '^molt_testkit_' <<<"$exported" || true)
if [ -n "$others" ]; then
  echo "libmolt_testkit exports more than molt_testkit_*:" >&2
  echo "$others" | head -20 >&2
  exit 1
fi
for fn in create error destroy load swap close advance now join leave intent request next watch \
          replica_int replica_float replica_bytes profile publish set_live stats logs self_test; do
  grep -qx "molt_testkit_$fn" <<<"$exported" || { echo "molt_testkit_$fn is not exported" >&2; exit 1; }
done
echo "libmolt_testkit exports $(wc -l <<<"$exported") molt_testkit_* symbols and nothing else"
