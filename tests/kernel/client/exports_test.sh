#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libmolt_client exports its C API and nothing else: no kernel, server or Boost symbol.
# Usage: exports_test.sh <libmolt_client.so>
set -euo pipefail
lib="$1"
exported=$(nm -D --defined-only "$lib" | awk '{print $3}')
others=$(grep -v '^molt_client_' <<<"$exported" || true)
if [ -n "$others" ]; then
  echo "libmolt_client exports more than molt_client_*:" >&2
  echo "$others" | head -20 >&2
  exit 1
fi
for fn in create destroy connect disconnect step state intent request on_event on_state \
          on_replica replica_find replica_int load_controllers add_controller start; do
  grep -qx "molt_client_$fn" <<<"$exported" || { echo "molt_client_$fn is not exported" >&2; exit 1; }
done
# The privileged layer never ships in the client: sessions, channels and their validators, rate
# limits, replicas' server side, the networking ABI slots. (The core and the controller loader do:
# DESIGN.md §3.)
if nm -C "$lib" | grep -E 'net::Network|net::Sessions|net::Replicas|net::ChannelRegistry|AttachNetwork|RunServer' >/dev/null; then
  echo "libmolt_client contains server code" >&2
  exit 1
fi
echo "libmolt_client exports $(wc -l <<<"$exported") molt_client_* symbols and nothing else"
