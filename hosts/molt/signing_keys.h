// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/signing_keys.h
//
// SigningKeys: the operator's key files a deploy or a pin is signed with (docs/deploys.md): the
// main key (--key, else MOLT_KEY_FILE) and the fallback key (--fallback-key, else
// MOLT_FALLBACK_KEY_FILE). With neither, the request goes unsigned (a dev server takes that).
// Included by the units that sign: deploy_sender.cc and pin_verbs.cc.
#ifndef MOLT_HOSTS_MOLT_SIGNING_KEYS_H_
#define MOLT_HOSTS_MOLT_SIGNING_KEYS_H_

#include <molt/kernel/status.h>

#include <boost/json/object.hpp>
#include <cxxopts.hpp>
#include <optional>
#include <string>

#include "kernel/src/loader/signing.h"

namespace molt::cli {

class SigningKeys {
 public:
  SigningKeys() = default;
  SigningKeys(std::optional<kernel::loader::PrivateKey> main,
              std::optional<kernel::loader::PrivateKey> fallback)
      : main_(std::move(main)), fallback_(std::move(fallback)) {}

  // Reads the key files `parsed` names ("key" and "fallback-key", declared by the verb), else
  // the environment's; the error of the first that cannot be read (its path and why).
  static kernel::Result<SigningKeys> Read(const cxxopts::ParseResult& parsed);

  // Whether there is a key to sign with.
  bool any() const { return main_.has_value() || fallback_.has_value(); }

  // Signs `message` (a canonical deploy or pin string) into `body`: "sig" with the main key,
  // "sig_fallback" with the fallback key, each only when that key is there.
  void SignInto(const std::string& message, boost::json::object& body) const;

 private:
  std::optional<kernel::loader::PrivateKey> main_;
  std::optional<kernel::loader::PrivateKey> fallback_;
};

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_SIGNING_KEYS_H_
