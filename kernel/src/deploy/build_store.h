// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/build_store.h
//
// BuildStore: the stored builds as deploys use them (spec §26; docs/deploys.md). An upload is
// verified and stored (Registry::AddBuild), pruned after, and shared with the fleet; a name a
// deploy or a pin gives (a sha256, a prefix, a build id, "#SEQ") is found here, or fetched from
// the fleet's registry; a rollback without --to finds the branch's previous different head; and
// the builds nothing refers to go (Prune). Owned by deploy::Deploys.
//
//   BuildStore builds(registry, fleet);
//   Result<Uploaded> u = builds.Upload(file, /*keep=*/{pinned_sha});
//   std::optional<StoredBuild> b = builds.Find("#12");
//
// Errors (Upload): kInvalidArgument (the file is not a build: its reason), kInternal (this
// server's disk), kIoError (stored, but the fleet's registry did not take it).
//
// Thread safety: UploadPath() from any thread; the rest on the deploy thread.
#ifndef MOLT_KERNEL_DEPLOY_BUILD_STORE_H_
#define MOLT_KERNEL_DEPLOY_BUILD_STORE_H_

#include <molt/kernel/status.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/deploy/registry.h"

namespace molt::kernel::deploy {

class FleetLink;

// A build an upload stored.
struct Uploaded {
  StoredBuild build;
  bool was_new = false;  // false: the same build was stored already
};

class BuildStore {
 public:
  BuildStore(Registry& registry, FleetLink& fleet) : registry_(registry), fleet_(fleet) {}

  // A fresh path for an upload to be written to (then handed to Upload).
  std::string UploadPath();
  // Stores the build at `file` (the file is gone after, either way); a new one is logged and
  // the builds nothing refers to but `keep` are pruned; then it is shared with the fleet.
  Result<Uploaded> Upload(const std::string& file, const std::set<std::string>& keep);
  // The build `name` names: a sha256, a prefix of 8+ hex digits, a build id, or "#SEQ" (the
  // build of deployment SEQ); one this server lacks is fetched from the fleet's registry.
  std::optional<StoredBuild> Find(std::string_view name);
  // The previous different head of `branch` that did not fail here (rollback without --to):
  // its previous heads, then its deployments, newest first.
  std::optional<StoredBuild> Previous(const std::string& branch) const;
  // The stored builds nothing refers to but `keep` go (Registry::Prune); what went is logged.
  void Prune(const std::set<std::string>& keep);
  // The newest `limit` stored builds.
  std::vector<StoredBuild> List(std::size_t limit) const { return registry_.Builds(limit); }

 private:
  Registry& registry_;
  FleetLink& fleet_;
  std::atomic<std::uint64_t> next_upload_{1};
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_BUILD_STORE_H_
