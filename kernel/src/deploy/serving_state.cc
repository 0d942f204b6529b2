// SPDX-License-Identifier: Apache-2.0
// ServingState: the pin, the skip, the swapped and applied deployments, the head file
// (serving_state.h).
#include "kernel/src/deploy/serving_state.h"

#include <utility>

#include "kernel/src/deploy/registry.h"

namespace molt::kernel::deploy {

ServingState::ServingState(Registry& registry, std::string branch)
    : registry_(registry), branch_(std::move(branch)), applied_(registry.applied_seq()) {}

std::string ServingState::HeadFile() const {
  std::lock_guard lock(head_mu_);
  return head_file_;
}

void ServingState::Refresh() {
  std::string file;
  if (pin_.has_value()) {
    file = registry_.BuildPath(pin_->sha256);
  } else if (std::optional<Branch> b = registry_.FindBranch(branch_); b.has_value()) {
    if (b->seq == skipped_seq_) {  // outside the head's rollout: what it applied last
      std::optional<Deployment> a = registry_.FindDeployment(registry_.applied_seq());
      file = a.has_value() ? registry_.BuildPath(a->build) : std::string();
    } else {
      file = registry_.BuildPath(b->head);
    }
  }
  std::lock_guard lock(head_mu_);
  head_file_ = std::move(file);
}

void ServingState::SetPin(Pin pin) {
  pin_ = std::move(pin);
  Refresh();
}

void ServingState::ClearPin() {
  pin_.reset();
  Refresh();
}

std::set<std::string> ServingState::Kept() const {
  std::set<std::string> keep;
  if (pin_.has_value()) {
    keep.insert(pin_->sha256);
  }
  return keep;
}

void ServingState::SetSkipped(std::uint64_t seq) {
  skipped_seq_ = seq;
  Refresh();
}

void ServingState::SetSwapped(std::string build_id, std::uint64_t seq) {
  swapped_id_ = std::move(build_id);
  swapped_seq_ = seq;
}

Status ServingState::SetApplied(std::uint64_t seq) {
  MOLT_RETURN_IF_ERROR(registry_.SetApplied(seq));
  applied_ = seq;
  return Status::Ok();
}

}  // namespace molt::kernel::deploy
