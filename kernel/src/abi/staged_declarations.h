// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/staged_declarations.h
//
// StagedDeclarations<D>: what dormant plugin instances declared in a host layer (a mounted
// generation's channels, its profile stores), held per instance until its generation serves
// (HostLayer::Serve replays them, in the order they were made) or the instance goes away. The
// layers that replay declarations share it.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_ABI_STAGED_DECLARATIONS_H_
#define MOLT_KERNEL_ABI_STAGED_DECLARATIONS_H_

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

namespace molt::kernel::abi {

template <class D>
class StagedDeclarations {
 public:
  void Add(const void* owner, D declaration) { staged_[owner].push_back(std::move(declaration)); }

  // `owner`'s declarations, in the order it made them, no longer staged.
  std::vector<D> Take(const void* owner) {
    auto it = staged_.find(owner);
    if (it == staged_.end()) {
      return {};
    }
    std::vector<D> taken = std::move(it->second);
    staged_.erase(it);
    return taken;
  }

  // The instance goes away: its declarations with it.
  void Drop(const void* owner) { staged_.erase(owner); }

  // Drops those of `owner`'s declarations that `pred` matches (released before it served).
  template <class P>
  void DropIf(const void* owner, P pred) {
    if (auto it = staged_.find(owner); it != staged_.end()) {
      std::erase_if(it->second, pred);
    }
  }

  // Whether any instance staged a declaration that `pred` matches.
  template <class P>
  bool Any(P pred) const {
    return std::any_of(staged_.begin(), staged_.end(), [&](const auto& entry) {
      return std::any_of(entry.second.begin(), entry.second.end(), pred);
    });
  }

 private:
  std::map<const void*, std::vector<D>> staged_;
};

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_STAGED_DECLARATIONS_H_
