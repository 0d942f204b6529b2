#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# molt.hpp's revision-1 spellings are [[deprecated]], each naming its replacement: compiles
# tests/sdk/molt_hpp_test.cc, which uses every one of them, without its pragma and finds the
# warning of each (the plugin author's compiler says what to write instead).
# Usage: deprecations_test.sh <c++ compiler> <molt source dir>
set -euo pipefail
cxx="$1"; src="$2"
out="$("$cxx" -std=c++17 -fsyntax-only -DMOLT_HPP_TEST_SHOW_DEPRECATIONS -I"$src/sdk/include" \
  "$src/tests/sdk/molt_hpp_test.cc" 2>&1)" || { echo "$out"; exit 1; }
missing=0
while IFS= read -r use; do
  if ! grep -qF "is deprecated: use $use [-Wdeprecated-declarations]" <<<"$out"; then
    echo "no deprecation warning says: use $use"
    missing=1
  fi
done <<'USES'
Channel::Send
Channel::Broadcast
Replica::SetInt
Replica::SetFloat
Replica::SetBytes
Replica::AddSession
Replica::RemoveSession
ProfileStore::State
ProfileStore::Get
ProfileStore::Set
ProfileStore::Save
ProfileStore::Snapshot
ProfileStore::Snapshots
ProfileStore::Rollback
ProfileStore::BackupNow
ProfileStore::Transact
ProfileStore::KeyLoad
ProfileStore::KeySession
ProfileStore::KeyRelease
ProfileStore::KeyReleaseAll
ProfileStore() or Host::DeclareProfiles
ProfileStore::get()
USES
count="$(grep -c "is deprecated" <<<"$out" || true)"
if [ "$missing" -ne 0 ]; then
  echo "$out"
  exit 1
fi
echo "deprecations: $count warnings, each naming its replacement"
