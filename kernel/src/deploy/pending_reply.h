// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/deploy/pending_reply.h
//
// Done<T> and PendingReply<T>: how the deploy thread answers. Every call of deploy::Deploys
// answers once, through a Done<T> (a value, or a Status saying why not). A call that waits for a
// swap (deploy --wait, pin) answers with the swap's outcome, or with a `pending` value at its
// deadline, whichever comes first: PendingReply holds the Done until one of the two answers.
// Included by the deploy parts (rollouts.h, pins.h) and deploys.h.
//
//   auto reply = PendingReply<PinOutcome>::Arm(thread, std::chrono::seconds(10), done, pending);
//   ... later, on the deploy thread: reply->Answer(outcome);  // false: the deadline came first
//
// Thread safety: Answer and the deadline on the deploy thread (the SerialThread armed with).
#ifndef MOLT_KERNEL_DEPLOY_PENDING_REPLY_H_
#define MOLT_KERNEL_DEPLOY_PENDING_REPLY_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <functional>
#include <memory>
#include <utility>

#include "kernel/src/core/serial_thread.h"

namespace molt::kernel::deploy {

// Called once, with the value or the reason there is none.
template <class T>
using Done = std::function<void(Result<T>)>;

template <class T>
class PendingReply {
 public:
  // Answers `pending` `wait` from now on `thread`, unless Answer() came first.
  static std::shared_ptr<PendingReply> Arm(SerialThread& thread, std::chrono::seconds wait,
                                           Done<T> done, T pending) {
    auto reply = std::make_shared<PendingReply>(std::move(done));
    thread.At(SerialThread::Clock::now() + wait,
              [reply, pending = std::move(pending)] { reply->Answer(pending); });
    return reply;
  }
  // A reply with no deadline: the first Answer() is the answer.
  explicit PendingReply(Done<T> done) : done_(std::move(done)) {}

  // Answers unless answered already (false then: the answer is dropped).
  bool Answer(Result<T> r) {
    if (answered_) {
      return false;
    }
    answered_ = true;
    done_(std::move(r));
    return true;
  }

 private:
  Done<T> done_;
  bool answered_ = false;
};

}  // namespace molt::kernel::deploy

#endif  // MOLT_KERNEL_DEPLOY_PENDING_REPLY_H_
