// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/deploys.h
//
// Deploys: a server's side of deploys (spec §26–§30, DESIGN.md §6, docs/deploys.md). It owns the
// registry and the trusted keys, decides what a deploy, promote or rollback may do, and asks the
// kernel to swap; everything it does runs on a thread of its own, so that verifying a build
// (hashing every library), checking a signature or a durable registry write never holds the
// kernel thread: the kernel sees a swap request like SIGHUP's and answers with its outcome.
//
//   deploy   a stored build becomes its branch's head (#seq claimed, the deployment recorded);
//            on this server's branch it is swapped in (adopted without a swap when it already
//            serves); the applied seq moves only when that worked. Refused, with the reason,
//            when a signature, the seq, the build's channel or a failed-here mark says no.
//   rollback a deploy of the branch's previous different head (or --to a build or #seq)
//   promote  a deploy of a build from elsewhere; never a dev or dirty build onto a prod branch
//   pin      this server held on a deployed build until its branch's next deploy (or unpin)
//   boot     the candidates a server boots from: the head, then the branch's earlier builds
//            (the last-known-good chain), each checked like a deploy
// Rules: prod (signatures required: deploy.require_signatures, on by default for the prod
// branch) or dev (unsigned deploys taken). Refusals are logged at most once per kind per 3 s,
// and the last 10 are kept for the API.
//
// Thread safety: the boot calls before Start(), on one thread; after it, every public method is
// safe from any thread (each posts to the deploy thread, and replies from there).
#ifndef MOLT_KERNEL_DEPLOY_DEPLOYS_H_
#define MOLT_KERNEL_DEPLOY_DEPLOYS_H_

#include <molt/kernel/status.h>

#include <boost/json/object.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace molt::kernel::deploy {

class Registry;
class TrustedKeys;
struct StoredBuild;

struct DeploysOptions {
  std::string dir;              // the registry's directory (<data>/registry)
  std::string branch = "prod";  // the branch this server runs (moltd --branch, deploy.branch)
  bool prod_rules = true;       // signatures required (deploy.require_signatures)
  std::string keys_file;        // deploy.keys ("" : none)
  std::uint64_t max_build_bytes = 1ull << 30;  // deploy.max_build_mb
  // Hears a refusal (its kind and reason) at most once per kind per refusal_event_gap, on the
  // deploy thread: moltd publishes it on the Bus as Kernel.DeployRefused (spec §29).
  std::function<void(const std::string& kind, const std::string& reason)> on_refusal;
  std::chrono::milliseconds refusal_event_gap{60'000};
  // The fleet's registry on PostgreSQL (a libpq URL; "" : this server alone), this server's id
  // in it, and how often the fleet's deployments are read without a notification (spec §30,
  // POLL_SECONDS).
  std::string fleet_url;
  std::string server_id;
  std::chrono::milliseconds poll{60'000};
};

// What the kernel did with a build it was asked to serve.
struct SwapOutcome {
  std::string result;  // "swapped", "adopted" (it served already) or "failed"
  std::string reason;  // why it failed
  std::string report;  // the swap report's JSON ("" when adopted)
  // The build itself failed (marked failed here); false for a swap refused at the gate (the
  // server closing, a newer reload).
  bool build_failed = false;
};
// A build for the kernel to serve: its file, the SHA-256 of its manifest, its build id.
struct SwapTarget {
  std::string file;
  std::string sha256;
  std::string build_id;
};
// Serves `target` on the kernel thread (adopted when it serves already); `done` (any thread)
// hears how it went. Installed by the server (Start).
using SwapFn = std::function<void(SwapTarget target, std::string reason,
                                  std::function<void(SwapOutcome)> done)>;

// An answer for the admin API: an HTTP status and its JSON body.
struct Answer {
  int status = 200;
  boost::json::object body;
};
using Reply = std::function<void(Answer)>;

// A deploy, promote or rollback as the API receives it (docs/deploys.md).
struct DeployRequest {
  std::string kind = "deploy";  // "deploy", "promote", "rollback", "resign", "widen"
  std::string branch;
  std::string build;  // a sha256 (or 8+ hex prefix), a build id or "#SEQ"; rollback: "" previous
  std::uint64_t seq = 0;  // 0: the next (unsigned deploys only)
  std::uint64_t sent_ms = 0;
  std::string sig;
  std::string sig_fallback;
  std::string by;
  std::string message;
  bool force = false;
  // The share of the branch's servers that swap (Deploys::Bucket): 1 to 100; for "widen", the
  // wider share of the branch's head. Not signed, so a prod-rules server takes every deploy
  // whole (spec §28).
  std::uint32_t rollout = 100;
};

// A pin (spec §28): this server held on `build`, a build some branch was deployed with, until
// the next deploy of its branch reaches it, an unpin, or the server closing; never stored.
// Signed on prod rules (loader::CanonicalPin, within kPinMaxAgeMs of sent_ms).
struct PinRequest {
  std::string build = "";  // as DeployRequest::build; "" for an unpin
  bool unpin = false;
  std::uint64_t sent_ms = 0;
  std::string sig = "";
  std::string sig_fallback = "";
  std::string by = "";
};

class Deploys {
 public:
  static constexpr std::size_t kBootTries = 5;  // LKG_MAX_TRIES
  static constexpr std::size_t kRefusalsKept = 10;
  static constexpr std::chrono::seconds kRefusalLogGap{3};
  static constexpr std::chrono::seconds kKeysRetryGap{60};  // re-read after a failed signature
  static constexpr std::chrono::seconds kKeysRefresh{600};  // KEYS_REFRESH_SECONDS
  static constexpr std::int64_t kPinMaxAgeMs = 120'000;     // PIN_MAX_AGE

  // Opens the registry and reads the keys; a prod-rules server with no keys warns naming the fix.
  static Result<std::unique_ptr<Deploys>> Open(DeploysOptions options);
  ~Deploys();
  Deploys(const Deploys&) = delete;
  Deploys& operator=(const Deploys&) = delete;

  // --- boot (before Start) ---
  struct Candidate {
    std::string file;  // the build file
    std::string sha256;
    std::string build_id;
    std::uint64_t seq = 0;  // the deployment it came from
    std::string what;       // "the head of prod (#12)", "prod's #9 (last known good)"
  };
  // The branch head, then up to kBootTries of the branch's earlier builds, newest first: never a
  // build that failed here, never one twice, on prod rules only those whose signatures verify.
  std::vector<Candidate> BootCandidates();
  // How a candidate did: a failure is marked failed here; the head that serves is applied.
  void BootResult(const Candidate& c, const Status& outcome);

  // Starts the deploy thread; `swap` is how it asks the kernel to serve a build.
  void Start(SwapFn swap);

  // --- the API (any thread; `reply` is called once, from the deploy thread) ---
  // A fresh path for an upload to be written to (then handed to Upload).
  std::string UploadPath();
  std::uint64_t max_build_bytes() const;
  void Upload(std::string file, Reply reply);
  // `wait`: 0 answers at once (202, pending); else at most that long for the swap's outcome.
  void Deploy(DeployRequest request, std::chrono::seconds wait, Reply reply);
  // A pin or an unpin of this server: 200 {"result", "build", "sha256", "reason", "report"}.
  void Pin(PinRequest request, std::chrono::seconds wait, Reply reply);
  void Resolve(std::string branch, std::string build, bool rollback, Reply reply);
  void Builds(std::size_t limit, Reply reply);
  void Branches(Reply reply);
  void Deployments(std::string branch, std::size_t limit, Reply reply);
  // Deployment `seq` and every server's result of it: 200 {"deployment", "results": [{"id",
  // "result", "reason", "at_ms"}]} (this server's alone without a fleet), 404 when unknown.
  void Results(std::uint64_t seq, Reply reply);
  // SIGHUP: the keys file is read again.
  void ReloadKeys();
  // The build file of this server's pin, else of its branch's head ("" : neither): what a
  // reload swaps in.
  std::string HeadFile() const;
  // The newest deployment this server applied (0: none); any thread.
  std::uint64_t AppliedSeq() const;
  // The health window rolled back from `build_id`: its deployment's result becomes rolled_back.
  void RolledBack(std::string build_id, std::string why);

  // A server's rollout bucket (spec §28, bit-exact): djb2 of its id (hash = hash * 33 + byte,
  // from 5381, mod 2^32) mod 100. A deployment with rollout R reaches the servers below R.
  static std::uint32_t Bucket(std::string_view server_id);

  struct Impl;

 private:
  explicit Deploys(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_DEPLOYS_H_
