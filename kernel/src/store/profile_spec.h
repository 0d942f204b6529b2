// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_spec.h
//
// ProfileSpec: a profile store as a plugin declares it (the ABI's profile_declare,
// store/profile_api.cc): its name, the defaults a document starts from and is filled from, its
// schema version and the migration that reaches it, the gate on every save, the autosave period,
// the lease, the backoff, the backups. Profiles (profiles.h) runs a store by it;
// ProfileDeclaration (profile_declaration.h) holds the one in force.
//
//   store::ProfileSpec spec;
//   spec.name = "PlayerData";                       // keys are "PlayerData/<user id>"
//   spec.defaults = R"({"coins":0,"items":[]})";
//   spec.schema_version = 2;
//   spec.migrate = [](std::uint32_t from, std::string doc) -> Result<std::string> { ... };
//
// Thread safety: a value; its callbacks run on the kernel thread.
#ifndef MOLT_KERNEL_STORE_PROFILE_SPEC_H_
#define MOLT_KERNEL_STORE_PROFILE_SPEC_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/clock.h"

namespace molt::kernel::store {

struct ProfileSpec {
  std::string name;             // the store's name: a session's key is "<name>/<user id>"
  std::string defaults = "{}";  // a JSON object: missing fields are filled from it
  std::uint32_t schema_version = 0;
  // One migration step: the document at version `from` -> at `from + 1`. An error, or no
  // function while a step is needed, fails the load (fail closed).
  std::function<Result<std::string>(std::uint32_t from, std::string document)> migrate;
  // Gates every save: an error refuses to write that document.
  std::function<Status(std::string_view document)> validate;
  Duration autosave = std::chrono::seconds(60);
  Duration lease_ttl = std::chrono::seconds(180);
  std::vector<Duration> backoff = {std::chrono::seconds(1), std::chrono::seconds(2),
                                   std::chrono::seconds(4), std::chrono::seconds(8)};
  bool kick_on_load_failure = true;
  // Backups (docs/profiles.md): the holder copies a saved document to one of 3 rotating slots
  // when the row says one is due, then schedules the next this long after; zero: no backups.
  Duration backup_interval = std::chrono::hours(24);
  bool mirror = false;  // also copy every save to the "live" slot
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_SPEC_H_
