// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/seq_ring.h
//
// SeqRing: the newest `capacity` items of a stream, numbered 1, 2, ... as they arrive, read by
// cursor: a reader asks for what came after the last number it saw, so a dashboard tails the
// stream without repeats and learns how many items it missed. The logs ring and the wire
// inspector keep their items in one.
//
//   SeqRing<Line> ring(500);            // Line has a `std::uint64_t seq` member
//   ring.Push(line);                    // numbers it
//   SeqRing<Line>::Page p = ring.Since(last_seen);  // p.items (oldest first), p.next, p.lost
//
// Thread safety: none; the owner locks (or keeps it on one thread).
#ifndef MOLT_KERNEL_CORE_SEQ_RING_H_
#define MOLT_KERNEL_CORE_SEQ_RING_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace molt::kernel {

template <typename T>
class SeqRing {
 public:
  struct Page {
    std::vector<T> items;    // oldest first
    std::uint64_t next = 0;  // pass as `since` to get only what came after
    std::uint64_t lost = 0;  // items after `since` already pushed out of the ring
  };

  explicit SeqRing(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // Numbers `item` (its `seq`) and keeps it, pushing out the oldest when full. Returns its number.
  std::uint64_t Push(T item) {
    if (items_.size() == capacity_) {
      items_.pop_front();
    }
    const std::uint64_t seq = next_seq_++;
    item.seq = seq;
    items_.push_back(std::move(item));
    return seq;
  }

  // The item numbered `seq`, or nullptr once it was pushed out. Valid until the next Push.
  T* Find(std::uint64_t seq) {
    if (items_.empty() || seq < items_.front().seq || seq > items_.back().seq) {
      return nullptr;
    }
    return &items_[static_cast<std::size_t>(seq - items_.front().seq)];
  }

  // The items numbered above `since` that the ring still holds (0: all of them).
  Page Since(std::uint64_t since) const {
    Page page;
    page.next = next_seq_ - 1;
    if (items_.empty() || since >= page.next) {
      page.next = std::max(page.next, since);
      return page;
    }
    const std::uint64_t first = items_.front().seq;
    if (since + 1 < first) {
      page.lost = first - since - 1;
    }
    const std::size_t skip = since < first ? 0 : static_cast<std::size_t>(since - first + 1);
    page.items.assign(items_.begin() + static_cast<std::ptrdiff_t>(skip), items_.end());
    return page;
  }

  std::size_t size() const { return items_.size(); }
  std::size_t capacity() const { return capacity_; }
  // The number of the newest item pushed (0: none yet): Since(last()) is what comes after it.
  std::uint64_t last() const { return next_seq_ - 1; }

 private:
  const std::size_t capacity_;
  std::deque<T> items_;
  std::uint64_t next_seq_ = 1;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_SEQ_RING_H_
