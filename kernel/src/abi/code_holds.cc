// SPDX-License-Identifier: Apache-2.0
// CodeHolds: a shared anchor per set of holds, whose end runs what waits for them.
#include "kernel/src/abi/code_holds.h"

#include <utility>
#include <vector>

namespace molt::kernel::abi {

class CodeHolds::Anchor {
 public:
  ~Anchor() {
    for (Callback<void()>& fn : then_) {
      fn();
    }
  }
  void Then(Callback<void()> fn) { then_.push_back(std::move(fn)); }

 private:
  std::vector<Callback<void()>> then_;
};

std::shared_ptr<CodeHolds::Anchor> CodeHolds::Take() {
  if (anchor_ == nullptr) {
    anchor_ = std::make_shared<Anchor>();
    seen_ = anchor_;
  }
  return anchor_;
}

std::size_t CodeHolds::count() const {
  const long n = seen_.use_count();
  return static_cast<std::size_t>(anchor_ != nullptr ? n - 1 : n);
}

void CodeHolds::After(Callback<void()> fn) {
  if (count() == 0) {
    fn();
    return;
  }
  if (anchor_ == nullptr) {
    anchor_ = seen_.lock();  // still held: not null
  }
  anchor_->Then(std::move(fn));
  anchor_.reset();  // the last hold's end runs it
}

}  // namespace molt::kernel::abi
