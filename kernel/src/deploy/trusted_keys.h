// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/trusted_keys.h
//
// TrustedKeys: the public keys a server takes signed deploys from (spec §29, DESIGN.md §6), read
// from the JSON file the configuration names (deploy.keys):
//
//   {"public_keys": ["<base64 Ed25519>", ...], "revoked_keys": [...],
//    "fallback_public_key": "<base64>"}
//
// Every field may be left out; "fallback_public_key": "" means no fallback key, as leaving it
// out does.
//
// The strict rule: once the main list is read (the file loaded with at least one public key),
// only the main signature ("sig") counts, against the main keys minus the revoked ones; before
// that, only the fallback signature ("sigF") against the fallback key; never either one.
//
//   TrustedKeys keys;
//   if (Status s = keys.Load("/etc/molt/keys.json"); !s.ok()) { ... names the file and the fix }
//   Status v = keys.Verify(loader::CanonicalDeploy(fields), sig, sig_fallback);
//
// Thread safety: none; its owner (deploy::Deploys) uses it from one thread.
#ifndef MOLT_KERNEL_DEPLOY_TRUSTED_KEYS_H_
#define MOLT_KERNEL_DEPLOY_TRUSTED_KEYS_H_

#include <molt/kernel/status.h>

#include <boost/json/fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace molt::kernel::deploy {

class TrustedKeys {
 public:
  // Reads `path` ("" : no file, no keys). On failure the keys read before stay in force.
  Status Load(const std::string& path);

  // Whether a deploy signed with `sig` / `sig_fallback` (base64; "" when absent) over `message`
  // passes the strict rule; the refusal names which signature was missing or wrong.
  Status Verify(std::string_view message, std::string_view sig,
                std::string_view sig_fallback) const;

  // The main list was read: only "sig" counts.
  bool main_loaded() const { return !main_.empty(); }
  // Any key at all: without one a prod-rules server refuses every deploy.
  bool any() const { return main_loaded() || !fallback_.empty(); }
  const std::string& file() const { return file_; }
  // {"file", "loaded", "main": [fingerprints], "revoked": [...], "fallback": fingerprint|null}
  boost::json::object ToJson() const;

 private:
  std::string file_;
  std::vector<std::string> main_;  // without the revoked ones
  std::vector<std::string> revoked_;
  std::string fallback_;
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_TRUSTED_KEYS_H_
