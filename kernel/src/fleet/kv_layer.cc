// SPDX-License-Identifier: Apache-2.0
// KvLayer: the plugins' key-value calls in flight and their answers (kv_layer.h).
#include "kernel/src/fleet/kv_layer.h"

#include <algorithm>
#include <string>
#include <utility>

#include "kernel/src/abi/bridge.h"

namespace molt::kernel::fleet {

Status KvLayer::Call(abi::PluginInstance& owner, KvOp op, molt_kv_done_fn done, void* user_data,
                     molt_cleanup_fn release) {
  const std::uint64_t id = next_id_++;
  MOLT_RETURN_IF_ERROR(
      kv_.Call(std::move(op), [weak = std::weak_ptr<KvLayer*>(alive_), id](KvResult r) {
        if (std::shared_ptr<KvLayer*> self = weak.lock()) {
          (*self)->Answer(id, r);
        }
      }));
  running_.push_back({id, &owner, done, user_data, release});
  return Status::Ok();
}

void KvLayer::ReleaseOwner(const void* owner) {
  std::vector<Running> mine;
  std::erase_if(running_, [&](Running& r) {
    if (r.owner != owner) {
      return false;
    }
    mine.push_back(r);
    return true;
  });
  for (const Running& r : mine) {
    if (r.release != nullptr) {
      r.owner->RunRelease(r.release, r.user_data);
    }
  }
}

void KvLayer::Answer(std::uint64_t id, const KvResult& result) {
  auto it =
      std::find_if(running_.begin(), running_.end(), [id](const Running& r) { return r.id == id; });
  if (it == running_.end()) {
    return;  // its instance stopped first
  }
  const Running r = *it;
  running_.erase(it);
  std::vector<molt_kv_entry> entries;
  for (const KvEntry& e : result.entries) {
    entries.push_back({e.member.data(), e.member.size(), e.score});
  }
  const std::string error = result.status.ok() ? std::string() : result.status.message();
  const molt_kv_result out{sizeof(molt_kv_result),
                           abi::ToCode(result.status),
                           error.c_str(),
                           result.value ? result.value->data() : nullptr,
                           result.value ? result.value->size() : 0,
                           result.number,
                           entries.data(),
                           entries.size()};
  abi::CallPlugin(*r.owner, [&] {
    r.done(r.user_data, &out);
    return MOLT_OK;
  });
  if (r.release != nullptr) {
    r.owner->RunRelease(r.release, r.user_data);
  }
}

}  // namespace molt::kernel::fleet
