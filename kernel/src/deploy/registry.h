// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/registry.h
//
// Registry: what a server knows of builds and deploys (spec §26, §30; DESIGN.md §6), durable in
// the data directory: registry.db (SQLite, synchronous=FULL) beside builds/<sha256>.molt.
//   builds       content-addressed by the SHA-256 of their manifest (which names every
//                library's), verified on arrival; a failed-here mark each, kept across restarts
//   branches     at most kMaxBranches, each with its head and the kPreviousHeads before it
//   deployments  the newest kDeploymentsKept, each with its #seq, who, when, the build, its
//                signatures and this server's result
//   meta         the last #seq claimed (one counter for the registry) and the applied seq
// The interface speaks of builds, branches and deployments, never of SQL, so that the fleet's
// PostgreSQL registry can stand behind it.
//
//   MOLT_ASSIGN_OR_RETURN(auto registry, Registry::Open("data/registry"));
//   MOLT_ASSIGN_OR_RETURN(StoredBuild b, registry->AddBuild("upload-1.molt"));
//   MOLT_ASSIGN_OR_RETURN(Deployment d, registry->Record(deployment));
//
// Thread safety: one thread at a time (deploy::Deploys' own).
#ifndef MOLT_KERNEL_DEPLOY_REGISTRY_H_
#define MOLT_KERNEL_DEPLOY_REGISTRY_H_

#include <molt/kernel/status.h>

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;

namespace molt::kernel::deploy {

// One stored build. What its manifest says is read from `manifest` (ManifestField()).
struct StoredBuild {
  std::string sha256;  // of the manifest's bytes: the build's name in the registry
  std::string id;      // the build id ("<commit7>-<hash6>")
  std::string manifest;
  std::uint64_t bytes = 0;  // the build file's size
  std::int64_t added_ms = 0;
  std::string failed_here;  // why it failed on this server; "" when it did not
  // A string field of the manifest ("branch", "channel", "commit", "protocol", "built_at"), or
  // "" when absent.
  std::string ManifestField(std::string_view key) const;
  bool dirty() const;
  // The API's BUILD object (docs/deploys.md).
  boost::json::object ToJson() const;
};

struct Deployment {
  std::uint64_t seq = 0;
  std::string branch;
  std::string build;  // sha256
  std::string build_id;
  std::string kind;  // "deploy", "rollback", "promote"
  std::string by;
  std::string message;
  std::int64_t at_ms = 0;
  std::uint64_t sent_ms = 0;  // the signed time
  std::string sig;            // base64; "" unsigned
  std::string sig_fallback;
  std::string result;  // pending, swapped, adopted, failed, rolled_back, recorded, skipped,
                       // superseded
  std::string reason;
  std::string protocol;  // "unchanged since #N", "changed since #N", "first on this branch"
  std::string report;    // the swap report's JSON; "" none
  // The share of the branch's servers that take it (molt deploy --rollout, --widen): those whose
  // bucket (Deploys::Bucket of their id) is below it; 100 every one. Not signed.
  std::uint32_t rollout = 100;
  boost::json::object ToJson() const;
};

struct Branch {
  std::string name;
  std::string head;  // sha256
  std::uint64_t seq = 0;
  std::int64_t updated_ms = 0;
  struct Previous {
    std::string build;  // sha256
    std::uint64_t seq = 0;
  };
  std::vector<Previous> previous;  // newest first, at most kPreviousHeads
};

class Registry {
 public:
  static constexpr std::size_t kMaxBranches = 32;
  static constexpr std::size_t kPreviousHeads = 3;
  static constexpr std::size_t kDeploymentsKept = 100;

  // Opens (creating) `dir`/registry.db and `dir`/builds/. Fails naming the file and the fix.
  static Result<std::unique_ptr<Registry>> Open(const std::string& dir);
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // --- builds ---
  // Verifies the build file at `file` (loader::VerifyBuildFile) and stores it: moved into
  // builds/ (or removed when the same build is stored already: `*was_new` says which). The file
  // is gone either way, also when it is refused.
  Result<StoredBuild> AddBuild(const std::string& file, bool* was_new = nullptr);
  // A build by its sha256 (or a unique prefix of at least 8 hex digits) or its build id (the
  // newest stored with it).
  std::optional<StoredBuild> FindBuild(std::string_view name) const;
  std::vector<StoredBuild> Builds(std::size_t limit) const;
  std::string BuildPath(std::string_view sha256) const;
  // Failed-here marks: a build that failed on this server is not taken again without --force.
  Status MarkFailed(const std::string& sha256, const std::string& why);
  Status ClearFailed(const std::string& sha256);
  // Removes the builds nothing refers to, so the data directory does not grow with every
  // upload: kept are each branch's head and previous heads, the builds of the kept deployments,
  // the kNewestBuildsKept stored last (an upload waiting for its deploy) and `keep` (a pin).
  // The row goes first, then the file; a file without a row (a crash between the two) goes too.
  static constexpr std::size_t kNewestBuildsKept = 10;
  struct Pruned {
    std::size_t builds = 0;
    std::uint64_t bytes = 0;
  };
  Result<Pruned> Prune(const std::set<std::string>& keep = {});
  // Where uploads are written before AddBuild (same file system as builds/).
  const std::string& upload_dir() const { return upload_dir_; }

  // --- seq, branches, deployments ---
  std::uint64_t last_seq() const;
  std::uint64_t applied_seq() const;
  Status SetApplied(std::uint64_t seq);
  // The newest of the fleet's deployments this copy holds (FleetRegistry; 0 alone).
  std::uint64_t mirrored_seq() const;
  Status SetMirrored(std::uint64_t seq);
  // Records `d` (d.seq: 0 takes the next; else it must be newer than every seq claimed) and
  // moves d.branch's head to d.build, in one transaction; the deployments beyond
  // kDeploymentsKept go. Refuses a new branch past kMaxBranches.
  Result<Deployment> Record(Deployment d);
  // Records `d` as the fleet's registry numbered it (FleetRegistry): kept with its seq even
  // below one this server claimed before it joined the fleet; d.branch's head moves only when
  // d is newer than it. AlreadyExists when seq `d.seq` is recorded here already.
  Result<Deployment> Mirror(Deployment d);
  // Widens deployment `seq`'s rollout to `rollout`.
  Status SetRollout(std::uint64_t seq, std::uint32_t rollout);
  // This server's result of deployment `seq`.
  Status SetResult(std::uint64_t seq, const std::string& result, const std::string& reason,
                   const std::string& report);
  std::optional<Branch> FindBranch(std::string_view name) const;
  std::vector<Branch> Branches() const;
  // Newest first; `branch` "" : every branch.
  std::vector<Deployment> Deployments(std::string_view branch, std::size_t limit) const;
  std::optional<Deployment> FindDeployment(std::uint64_t seq) const;

 private:
  Registry(std::string dir, sqlite3* db);
  Status Exec(const char* sql) const;
  Status Failed(const char* what) const;
  std::uint64_t Meta(const char* key) const;
  Status SetMeta(const char* key, std::uint64_t value) const;
  Result<Deployment> Put(Deployment d, bool mirror);
  std::vector<Deployment> QueryDeployments(const char* sql, std::string_view arg,
                                           std::int64_t n) const;

  std::string dir_;
  std::string builds_dir_;
  std::string upload_dir_;
  sqlite3* db_;
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_REGISTRY_H_
