#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's run command: installs what is missing, builds moltd and the bundled plugins, and
# runs the server on its embedded defaults (the bundled plugins, data under ./data). Extra
# arguments go to moltd (see `scripts/run.sh --help`). Stop it with Ctrl-C (SIGINT).
source "$(dirname "$0")/common.sh"
molt_build default moltd counter scores rounds uptime
exec ./build/default/bin/moltd "$@"
