// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/debug_bundle.h
//
// DebugBundles: what an operator sends with a bug report (spec §42, on the local disk): one JSON
// file with the server's status and stats, generations, the last diagnostics window, ErrorWatch's
// merged errors, the logs ring (500 lines) and the configuration with its secrets replaced by
// "<redacted>". Written to DATA/bundles/ with owner-only permissions, the newest 10 kept:
//
//   - on demand (POST /api/v1/bundle): bundle-<UTC time>-<reason>.json, built on the kernel
//     thread at once;
//   - on a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT): crash-<pid>.json, the
//     snapshot last refreshed (every diagnostics window) wrapped with the signal, written by the
//     handler with open()/write() only (async-signal-safe), before the signal is raised again so
//     the exit status and any core dump stay the kernel's.
//
// Thread safety: REQUIRES the kernel thread, except the signal handler.
#ifndef MOLT_KERNEL_ADMIN_DEBUG_BUNDLE_H_
#define MOLT_KERNEL_ADMIN_DEBUG_BUNDLE_H_

#include <molt/kernel/status.h>

#include <boost/json/fwd.hpp>
#include <functional>
#include <string>
#include <string_view>

#include "kernel/src/core/config.h"

namespace molt::kernel::admin {

// `config` as a JSON object of its keys, secrets (a key naming a token, secret, password,
// passwd, credential or private key) replaced by "<redacted>".
boost::json::object RedactedConfigJson(const Config& config);

class DebugBundles {
 public:
  static constexpr std::size_t kKept = 10;

  // `build(reason)` returns the bundle's JSON object (the kernel thread).
  DebugBundles(std::string dir, std::function<std::string(std::string_view reason)> build);
  DebugBundles(const DebugBundles&) = delete;
  DebugBundles& operator=(const DebugBundles&) = delete;
  // Restores the default fatal-signal handlers when it installed them.
  ~DebugBundles();

  // Builds and writes a bundle now; returns its path. Older bundles past kKept are removed.
  Result<std::string> Write(std::string_view reason);
  // Rebuilds the snapshot a fatal signal writes. The first call installs the handlers.
  void RefreshCrashSnapshot();

  const std::string& dir() const { return dir_; }

 private:
  void Prune();

  std::string dir_;
  std::function<std::string(std::string_view)> build_;
  bool installed_ = false;
  std::uint32_t written_ = 0;  // in the names: two bundles in one millisecond stay apart
};

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_DEBUG_BUNDLE_H_
