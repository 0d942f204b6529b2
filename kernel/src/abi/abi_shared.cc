// SPDX-License-Identifier: Apache-2.0
// AbiShared: the table, the layers, the topic handles and the off-thread state every plugin
// instance of one kernel shares.
#include "kernel/src/abi/abi_shared.h"

#include <mutex>
#include <utility>

namespace molt::kernel::abi {

AbiShared::AbiShared(Kernel& kernel, molt_host_api table)
    : kernel_(kernel), api_(std::make_unique<molt_host_api>(table)) {}

void AbiShared::Count(int& counter, int delta) {
  const bool before = counter > 0;
  counter += delta;
  if (before != (counter > 0)) {
    for (Member* p : instances_) {
      p->UpdateGate();
    }
  }
}

void AbiShared::BeginOffThread() { Count(off_thread_calls_, 1); }
void AbiShared::EndOffThread() { Count(off_thread_calls_, -1); }
void AbiShared::BeginWorkerJobs() { Count(worker_jobs_, 1); }
void AbiShared::EndWorkerJobs() { Count(worker_jobs_, -1); }

void AbiShared::Withdraw(Member* p) { std::erase(instances_, p); }

AbiShared::~AbiShared() {
  for (Member* p : instances_) {
    p->Unenroll();  // an instance may outlive its host (a kernel still holding it)
  }
  if (runner_.abandoned() > 0) {  // an abandoned callback may still read its table: it stays
    static std::mutex mu;
    static auto* kept = new std::vector<std::unique_ptr<molt_host_api>>();  // never freed
    std::lock_guard lock(mu);
    kept->push_back(std::move(api_));
  }
}

molt_topic_t AbiShared::TopicHandle(Bus::Topic* topic) {
  auto it = handles_.find(topic);
  if (it != handles_.end()) {
    return it->second;
  }
  topics_.push_back(topic);
  const molt_topic_t handle = (static_cast<std::uint64_t>(topics_.size()) << kKindBits) | kTopicTag;
  handles_.emplace(topic, handle);
  return handle;
}

}  // namespace molt::kernel::abi
