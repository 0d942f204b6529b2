// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/config.h
//
// Config: the kernel's configuration values, flattened to dotted keys ("server.tick_rate",
// "plugins.rounds.round_seconds"), each a bool, integer, double or string. Hosts fill it from
// their flags and an optional JSON file; plugins read it through the host API (config_get), which
// looks in the plugin's own section ("plugins.<name>.<key>") first.
//
// Thread safety: REQUIRES external synchronization for writes; values never move once set, so a
// string read through Get stays valid until the key is set again or the Config is destroyed.
#ifndef MOLT_KERNEL_CORE_CONFIG_H_
#define MOLT_KERNEL_CORE_CONFIG_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kernel/src/core/value.h"

namespace molt::kernel {

class Config {
 public:
  using Scalar = std::variant<bool, std::int64_t, double, std::string>;

  void Set(std::string key, Scalar value);
  // The value at `key`, or nullptr.
  const Scalar* Get(std::string_view key) const;
  // The value as a Value (strings point into this Config), or a nil Value when unset.
  Value GetValue(std::string_view key) const;

  // Reads a JSON object and sets every leaf under its dotted path; arrays are stored as their
  // JSON text. Errors name the file and what is wrong with it.
  Status MergeJsonFile(const std::string& path);
  Status MergeJson(std::string_view json, std::string_view source);

  std::vector<std::string> Keys() const;

 private:
  std::map<std::string, std::unique_ptr<Scalar>, std::less<>> values_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_CONFIG_H_
