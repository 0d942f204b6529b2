#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's run command: installs what is missing, builds moltd and the bundled plugins, and
# serves them for development (the README's five-minute tour):
#   - the bundled plugins from the build tree, data under ./data;
#   - on the development branch dev (--branch dev): deploys need no signature. Prod rules, which
#     take only signed deploys, are for `scripts/run.sh --branch prod` with trusted keys
#     (docs/deploys.md);
#   - --watch: a plugin rebuilt into build/default/plugins (cmake --build --preset default
#     --target counter) is swapped in live, its clients staying connected;
#   - WebSocket clients on 127.0.0.1:7780, and the TypeScript client's counter example page on
#     http://127.0.0.1:8080/examples/counter/ (MOLT_EXAMPLE_PORT; 0 turns it off);
#   - datagram links on udp://127.0.0.1:7779 (--udp): unreliable channels and predicted intents
#     (the walk plugin's) go by UDP for libmolt_client apps.
# Extra arguments go to moltd (see `scripts/run.sh --help`); one naming --ws, --udp or --branch
# replaces that default. Stop it with Ctrl-C (SIGINT) or SIGTERM.
#
# MOLT_RUN_MOLTD=<moltd> runs that moltd as it is, with nothing installed or built: the test of
# this script does (tests/hosts/run_script_test.sh).
if [ -n "${MOLT_RUN_MOLTD:-}" ]; then
  set -euo pipefail
  cd "$(dirname "$0")/.."
  moltd="$MOLT_RUN_MOLTD"
else
  source "$(dirname "$0")/common.sh"
  molt_build default moltd counter scores rounds shop uptime walk
  moltd=./build/default/bin/moltd
fi

ws=(--ws 127.0.0.1:7780)
udp=(--udp 127.0.0.1:7779)
branch=(--branch dev)
watch=(--watch)
for a in "$@"; do
  case "$a" in
    -h | --help | --version | --check | --self-test) exec "$moltd" "$@" ;;  # nothing to serve
    --ws | --ws=*) ws=() ;;
    --udp | --udp=*) udp=() ;;
    --branch | --branch=*) branch=() ;;
    --watch) watch=() ;;
  esac
done

# The example page: the TypeScript client built from its lockfile (npm's cache in .cache/npm),
# served by a small Node server of sdk/ts that exits with moltd (exec keeps this shell's PID).
# Without Node or the npm registry the server runs alone.
example_port="${MOLT_EXAMPLE_PORT:-8080}"
if [ "$example_port" != 0 ]; then
  if (cd sdk/ts && npm ci --cache ../../.cache/npm --prefer-offline --no-audit --no-fund \
        --loglevel=error >/dev/null && npm run --silent build); then
    MOLT_SERVE_WHILE_PID=$$ node sdk/ts/examples/serve.mjs "$example_port" &
  else
    echo "run: the example page is not served: building sdk/ts failed (see above)" >&2
  fi
fi
exec "$moltd" "${ws[@]}" "${udp[@]}" "${branch[@]}" "${watch[@]}" "$@"
