// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/code_holds.h
//
// CodeHolds: the holds that keep one plugin's code in the process while it runs off the kernel
// thread (a worker job: workers/workers_api.h). Take() returns a hold (an anchor each hold
// shares); After() runs its function once no hold is left: at once, or when the last one is
// dropped (the loader unloads the plugin's library that way: loader/generation_set.h). Owned by
// each PluginInstance (plugin_instance.h), which pairs a hold with the instance itself
// (PluginInstance::CodeHold).
//
// Thread safety: take and drop holds, and call After(), on the kernel thread.
#ifndef MOLT_KERNEL_ABI_CODE_HOLDS_H_
#define MOLT_KERNEL_ABI_CODE_HOLDS_H_

#include <cstddef>
#include <memory>

#include "kernel/src/core/callback.h"

namespace molt::kernel::abi {

class CodeHolds {
 public:
  // What every hold shares; its end runs what waits for the holds (After()).
  class Anchor;

  CodeHolds() = default;
  CodeHolds(const CodeHolds&) = delete;
  CodeHolds& operator=(const CodeHolds&) = delete;

  // A new hold: the code stays until it is dropped.
  std::shared_ptr<Anchor> Take();
  // The holds not dropped yet.
  std::size_t count() const;
  // Runs `fn` once no hold is left: now, or when the last one is dropped. Holds taken after this
  // call no longer delay it.
  void After(Callback<void()> fn);

 private:
  std::shared_ptr<Anchor> anchor_;  // copied by every hold; reset by After()
  std::weak_ptr<Anchor> seen_;      // counts the holds once anchor_ is reset
};

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_CODE_HOLDS_H_
