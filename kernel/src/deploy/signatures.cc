// SPDX-License-Identifier: Apache-2.0
// Signatures: the keys file read, refreshed and re-read; deploys and pins checked (signatures.h).
#include "kernel/src/deploy/signatures.h"

#include <boost/json.hpp>

#include "kernel/src/deploy/deploy_log.h"
#include "kernel/src/deploy/registry.h"
#include "kernel/src/loader/signing.h"

namespace molt::kernel::deploy {

Signatures::Signatures(std::string keys_file, bool prod_rules,
                       std::function<Clock::time_point()> now)
    : file_(std::move(keys_file)),
      prod_rules_(prod_rules),
      now_(now ? std::move(now) : [] { return Clock::now(); }) {}

void Signatures::Load(std::string_view why) {
  read_at_ = now_();
  if (Status s = keys_.Load(file_); !s.ok()) {
    DeployLog().Error("{} ({}): {}", s.message(), why,
                      keys_.any() ? "the keys read before stay in force" : "no keys are trusted");
  }
  if (prod_rules_ && !keys_.any()) {
    DeployLog().Warn(
        "this server has prod rules and no trusted keys, so it refuses every deploy. Fix: `molt "
        "keys init`, list the public key it prints in a file ({{\"public_keys\": [\"...\"]}}), "
        "name that file as deploy.keys, and start moltd again (or SIGHUP it); a development "
        "server takes unsigned deploys with deploy.require_signatures = false or --branch dev");
  }
}

void Signatures::Refresh() {
  if (file_.empty()) {
    return;
  }
  const std::string before = boost::json::serialize(keys_.ToJson());
  read_at_ = now_();
  if (Status s = keys_.Load(file_); !s.ok()) {
    DeployLog().Error("{} (the periodic read): the keys read before stay in force", s.message());
  } else if (boost::json::serialize(keys_.ToJson()) != before) {
    DeployLog().Info("trusted keys changed in {}: {}", file_,
                     boost::json::serialize(keys_.ToJson()));
  }
}

Status Signatures::Verify(const std::string& message, std::string_view sig,
                          std::string_view sig_fallback, bool reread) {
  Status s = keys_.Verify(message, sig, sig_fallback);
  if (!s.ok() && reread && now_() - read_at_ >= kRetryGap) {
    Load("after a failed signature");
    s = keys_.Verify(message, sig, sig_fallback);
  }
  return s;
}

std::string Signatures::DeployMessage(const Deployment& d, const StoredBuild& b) {
  loader::DeployFields f;
  f.branch = d.branch;
  f.build = b.sha256;
  f.build_id = b.id;
  f.seq = d.seq;
  f.commit = b.ManifestField("commit");
  f.channel = b.ManifestField("channel");
  f.sent_ms = d.sent_ms;
  f.reason = loader::DeployReasonField(d.kind);
  return loader::CanonicalDeploy(f);
}

}  // namespace molt::kernel::deploy
