// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/signing_keys.cc
//
// SigningKeys: the key files read once per request, and the signatures put into its body.
#include "hosts/molt/signing_keys.h"

#include <cstdlib>

namespace molt::cli {
namespace {

namespace loader = kernel::loader;

std::string EnvOrEmpty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

}  // namespace

kernel::Result<SigningKeys> SigningKeys::Read(const cxxopts::ParseResult& parsed) {
  SigningKeys keys;
  const std::string main =
      parsed.count("key") > 0 ? parsed["key"].as<std::string>() : EnvOrEmpty("MOLT_KEY_FILE");
  const std::string fallback = parsed.count("fallback-key") > 0
                                   ? parsed["fallback-key"].as<std::string>()
                                   : EnvOrEmpty("MOLT_FALLBACK_KEY_FILE");
  if (!main.empty()) {
    MOLT_ASSIGN_OR_RETURN(keys.main_, loader::ReadPrivateKey(main));
  }
  if (!fallback.empty()) {
    MOLT_ASSIGN_OR_RETURN(keys.fallback_, loader::ReadPrivateKey(fallback));
  }
  return keys;
}

void SigningKeys::SignInto(const std::string& message, boost::json::object& body) const {
  if (main_) {
    body["sig"] = loader::Sign(*main_, message).value();
  }
  if (fallback_) {
    body["sig_fallback"] = loader::Sign(*fallback_, message).value();
  }
}

}  // namespace molt::cli
