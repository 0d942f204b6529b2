// SPDX-License-Identifier: Apache-2.0
// Scope: registration, reverse-order close with per-cleanup isolation, and child detachment.
#include "kernel/src/core/scope.h"

#include <algorithm>
#include <exception>

#include "kernel/src/core/logger.h"

namespace molt::kernel {

// The parent's record of a child: closing it closes the child.
struct Scope::ChildEntry final : Entry {
  explicit ChildEntry(std::shared_ptr<Scope> c) : child(std::move(c)) {}
  void Cleanup() override { child->Close(); }
  const void* key() const override { return child.get(); }
  std::shared_ptr<Scope> child;
};

std::shared_ptr<Scope> Scope::Child() {
  auto child = std::make_shared<Scope>();
  if (closed_) {
    child->Close();
    return child;
  }
  child->parent_ = this;
  entries_.push_back(std::make_unique<ChildEntry>(child));
  return child;
}

void Scope::Push(std::unique_ptr<Entry> entry) {
  if (closed_) {
    RunCleanup(*entry);
    spent_.push_back(std::move(entry));
    return;
  }
  entries_.push_back(std::move(entry));
}

std::unique_ptr<Scope::Entry> Scope::Take(const void* key) {
  auto it = std::find_if(entries_.rbegin(), entries_.rend(),
                         [key](const std::unique_ptr<Entry>& e) { return e->key() == key; });
  if (it == entries_.rend()) {
    return nullptr;
  }
  std::unique_ptr<Entry> entry = std::move(*it);
  entries_.erase(std::next(it).base());
  return entry;
}

void Scope::RunCleanup(Entry& entry) noexcept {
  try {
    entry.Cleanup();
  } catch (const std::exception& e) {
    LogScope("Scope").Error("cleanup failed: {}", e.what());
  } catch (...) {
    LogScope("Scope").Error("cleanup failed: unknown exception");
  }
}

void Scope::Close() noexcept {
  if (closed_) {
    return;
  }
  closed_ = true;
  // A child closing early detaches from its parent. The parent's record may hold the last
  // reference to this scope, so it lives until the cleanups are done (end of this function).
  std::unique_ptr<Entry> record_in_parent;
  if (parent_ != nullptr) {
    record_in_parent = parent_->Take(this);
    parent_ = nullptr;
  }
  while (!entries_.empty()) {
    std::unique_ptr<Entry> entry = std::move(entries_.back());
    entries_.pop_back();
    RunCleanup(*entry);
  }
}

}  // namespace molt::kernel
