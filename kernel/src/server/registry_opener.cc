// SPDX-License-Identifier: Apache-2.0
// RegistryOpener: deploy::Deploys::Open, retried off the kernel thread until it works.
#include "kernel/src/server/registry_opener.h"

#include <utility>

namespace molt::kernel {

RegistryOpener::RegistryOpener(deploy::DeploysOptions options, Opened opened, Failed failed)
    : opened_(std::move(opened)),
      failed_(std::move(failed)),
      thread_([this, options = std::move(options)]() mutable { Run(std::move(options)); }) {}

RegistryOpener::~RegistryOpener() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void RegistryOpener::Run(deploy::DeploysOptions options) {
  for (;;) {
    Result<std::unique_ptr<deploy::Deploys>> d = deploy::Deploys::Open(options);
    if (d.ok()) {
      opened_(std::move(d).value());
      return;
    }
    failed_(d.status());
    std::unique_lock<std::mutex> lock(mu_);
    if (wake_.wait_for(lock, kRetryGap, [this] { return stop_; })) {
      return;
    }
  }
}

}  // namespace molt::kernel
