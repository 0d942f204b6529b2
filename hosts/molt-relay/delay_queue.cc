// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/delay_queue.cc
//
// DelayQueue: the heap operations.
#include "hosts/molt-relay/delay_queue.h"

#include <algorithm>
#include <utility>

namespace molt::relay {

bool DelayQueue::Later(const Entry& a, const Entry& b) {
  return a.due != b.due ? a.due > b.due : a.sequence > b.sequence;
}

void DelayQueue::Push(Clock::time_point due, Datagram datagram) {
  ++held_[static_cast<int>(datagram.direction)];
  heap_.push_back(Entry{due, next_sequence_++, std::move(datagram)});
  std::push_heap(heap_.begin(), heap_.end(), Later);
}

std::optional<Datagram> DelayQueue::PopDue(Clock::time_point now) {
  if (heap_.empty() || heap_.front().due > now) {
    return std::nullopt;
  }
  std::pop_heap(heap_.begin(), heap_.end(), Later);
  Datagram datagram = std::move(heap_.back().datagram);
  heap_.pop_back();
  --held_[static_cast<int>(datagram.direction)];
  return datagram;
}

std::optional<DelayQueue::Clock::time_point> DelayQueue::NextDue() const {
  if (heap_.empty()) {
    return std::nullopt;
  }
  return heap_.front().due;
}

}  // namespace molt::relay
