// SPDX-License-Identifier: Apache-2.0
// MemoryKv: the key-value store of a server alone, in two maps (memory_kv.h).
#include "kernel/src/fleet/memory_kv.h"

#include <algorithm>
#include <utility>

namespace molt::kernel::fleet {

MemoryKv::Value* MemoryKv::Live(const std::string& key, std::int64_t now) {
  auto it = values_.find(key);
  return it != values_.end() && it->second.expires > now ? &it->second : nullptr;
}

KvResult MemoryKv::Run(const KvOp& op, std::int64_t now) {
  KvResult r;
  const std::int64_t until = now + op.ttl_ms;
  switch (op.kind) {
    case KvKind::kGet:
      if (Value* v = Live(op.key, now)) {
        r.value = v->data;
      } else {
        r.status = Status::NotFound("no value at \"" + op.key + "\"");
      }
      break;
    case KvKind::kSet:
      values_[op.key] = {op.value, until};
      r.value = op.value;
      break;
    case KvKind::kCas: {
      Value* v = Live(op.key, now);
      const bool match = op.expected ? v != nullptr && v->data == *op.expected : v == nullptr;
      if (match) {
        values_[op.key] = {op.value, until};
        r.value = op.value;
      } else {
        r.status = Status::Rejected("the value at \"" + op.key + "\" is not the one expected");
        if (v != nullptr) {
          r.value = v->data;
        }
      }
      break;
    }
    case KvKind::kDelete: {
      const bool had = Live(op.key, now) != nullptr || sorted_.contains(op.key);
      values_.erase(op.key);
      sorted_.erase(op.key);
      r.number = had ? 1 : 0;
      break;
    }
    case KvKind::kIncrement:
      return Increment(op, now);
    case KvKind::kZAdd: {
      Sorted& s = sorted_[op.key];
      if (s.expires <= now) {
        s.members.clear();
      }
      s.members[op.value] = op.number;
      s.expires = until;
      break;
    }
    case KvKind::kZRemove: {
      auto it = sorted_.find(op.key);
      r.number =
          it != sorted_.end() && it->second.expires > now && it->second.members.erase(op.value) > 0
              ? 1
              : 0;
      break;
    }
    case KvKind::kZRange:
      return Range(op, now);
  }
  return r;
}

KvResult MemoryKv::Increment(const KvOp& op, std::int64_t now) {
  KvResult r;
  std::int64_t n = 0;
  if (Value* v = Live(op.key, now)) {
    std::optional<std::int64_t> was = KvWholeNumber(v->data);
    if (!was) {
      r.status = KvNotWhole(op.key);
      return r;
    }
    n = *was;
  }
  if (__builtin_add_overflow(n, static_cast<std::int64_t>(op.number), &n)) {
    r.status = KvOverflow(op.key);
    return r;
  }
  values_[op.key] = {std::to_string(n), now + op.ttl_ms};
  r.number = n;
  r.value = std::to_string(n);
  return r;
}

KvResult MemoryKv::Range(const KvOp& op, std::int64_t now) const {
  KvResult r;
  auto it = sorted_.find(op.key);
  if (it == sorted_.end() || it->second.expires <= now) {
    return r;
  }
  for (const auto& [member, score] : it->second.members) {
    if (score >= op.number && score <= op.number2) {
      r.entries.push_back({member, score});
    }
  }
  std::sort(r.entries.begin(), r.entries.end(), [&](const KvEntry& a, const KvEntry& b) {
    return a.score != b.score ? (op.descending ? a.score > b.score : a.score < b.score)
                              : a.member < b.member;
  });
  if (r.entries.size() > op.limit) {
    r.entries.resize(op.limit);
  }
  return r;
}

Status MemoryKv::Sweep(std::int64_t now) {
  std::erase_if(values_, [now](const auto& kv) { return kv.second.expires <= now; });
  std::erase_if(sorted_, [now](const auto& kv) { return kv.second.expires <= now; });
  return Status::Ok();
}

}  // namespace molt::kernel::fleet
