// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/server/registry_opener.h
//
// RegistryOpener: opens the deploy registry (deploy::Deploys::Open) on a thread of its own, and
// again every second until it opens or the opener is destroyed, so that a registry that is
// locked (another process holds a write transaction on registry.db) or slow never holds the
// boot: the server waits for it at most BootPlan::kBootReadsWait (spec §31, BOOT_READS_WAIT) and
// boots without it, and the branch's head follows once it opens.
//
//   RegistryOpener opener(options, [&](std::unique_ptr<deploy::Deploys> d) { ...post... },
//                         [&](const Status& why) { ...log... });
//
// Thread safety: `opened` and `failed` run on the opener's thread; the destructor stops the
// retries and waits for an attempt in progress (SQLite's busy wait: at most a few seconds).
#ifndef MOLT_KERNEL_SERVER_REGISTRY_OPENER_H_
#define MOLT_KERNEL_SERVER_REGISTRY_OPENER_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "kernel/src/deploy/deploys.h"

namespace molt::kernel {

class RegistryOpener {
 public:
  static constexpr std::chrono::seconds kRetryGap{1};
  using Opened = std::function<void(std::unique_ptr<deploy::Deploys>)>;
  using Failed = std::function<void(const Status& why)>;  // each failed attempt
  RegistryOpener(deploy::DeploysOptions options, Opened opened, Failed failed);
  RegistryOpener(const RegistryOpener&) = delete;
  RegistryOpener& operator=(const RegistryOpener&) = delete;
  ~RegistryOpener();

 private:
  void Run(deploy::DeploysOptions options);

  Opened opened_;
  Failed failed_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: it starts once everything above is set
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_REGISTRY_OPENER_H_
