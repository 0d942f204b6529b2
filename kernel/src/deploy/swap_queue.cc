// SPDX-License-Identifier: Apache-2.0
// SwapQueue: one swap at a time, its answer heard on the deploy thread (swap_queue.h).
#include "kernel/src/deploy/swap_queue.h"

#include <utility>

namespace molt::kernel::deploy {

void SwapQueue::Enqueue(Job job) {
  jobs_.push_back(std::move(job));
  RunNext();
}

void SwapQueue::RunNext() {
  if (swapping_ || jobs_.empty()) {
    return;
  }
  swapping_ = true;
  std::weak_ptr<SwapQueue*> weak = alive_;
  swap_(jobs_.front().target, jobs_.front().reason, [weak](SwapOutcome o) {
    std::shared_ptr<SwapQueue*> self = weak.lock();
    if (self == nullptr) {
      return;  // the queue is gone (the close): nobody waits for this answer
    }
    SwapQueue* queue = *self;
    queue->thread_.Post([queue, o = std::move(o)] {
      Job job = std::move(queue->jobs_.front());
      queue->jobs_.pop_front();
      queue->swapping_ = false;
      job.finished(o);
      queue->RunNext();
    });
  });
}

}  // namespace molt::kernel::deploy
