// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/signatures.h
//
// Signatures: the trusted keys (trusted_keys.h) as a serving deploy server holds them over time,
// and the one place its deploys and pins are checked against them (spec §29). The keys file
// (deploy.keys) is read at the start, on SIGHUP (Load), every kKeysRefresh (Refresh: quiet
// unless it changed or broke), and once more when a signature fails, at most every kRetryGap
// (a key added to the file since the last read). A failed read keeps the keys read before.
// Owned by deploy::Deploys; Rollouts, Pins and BootCandidates verify through it.
//
//   Signatures signatures("/etc/molt/keys.json", /*prod_rules=*/true);
//   signatures.Load("at boot");  // a prod-rules server without keys warns naming the fix
//   Status s = signatures.Verify(Signatures::DeployMessage(d, build), d.sig, d.sig_fallback,
//                                /*reread=*/true);
//
// Thread safety: none; the deploy thread only (the boot's calls before it starts).
#ifndef MOLT_KERNEL_DEPLOY_SIGNATURES_H_
#define MOLT_KERNEL_DEPLOY_SIGNATURES_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "kernel/src/deploy/trusted_keys.h"

namespace molt::kernel::deploy {

struct Deployment;
struct StoredBuild;

class Signatures {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kRetryGap{60};  // re-read after a failed signature
  static constexpr std::chrono::seconds kRefresh{600};  // KEYS_REFRESH_SECONDS

  // `keys_file` "" : no keys. `now` (null: the steady clock) is for tests.
  Signatures(std::string keys_file, bool prod_rules, std::function<Clock::time_point()> now = {});

  // Reads the keys file; `why` ("at boot", "on SIGHUP") names the read in its error. A
  // prod-rules server left without keys warns that it refuses every deploy, naming the fix.
  void Load(std::string_view why);
  // The periodic read: logged only when the keys changed or the file broke.
  void Refresh();

  // Whether `message` is signed by `sig` / `sig_fallback` under the keys (the strict rule);
  // with `reread`, a failure re-reads the file (at most every kRetryGap) and checks again.
  Status Verify(const std::string& message, std::string_view sig, std::string_view sig_fallback,
                bool reread);
  // The canonical string a deploy's signature covers: `d` of build `b`.
  static std::string DeployMessage(const Deployment& d, const StoredBuild& b);

  const TrustedKeys& keys() const { return keys_; }

 private:
  const std::string file_;
  const bool prod_rules_;
  const std::function<Clock::time_point()> now_;
  TrustedKeys keys_;
  Clock::time_point read_at_{};
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_SIGNATURES_H_
