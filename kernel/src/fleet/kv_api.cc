// SPDX-License-Identifier: Apache-2.0
// kv_call: the plugin's call checked and made its op, then handed to the KvLayer (kv_layer.h),
// which runs it in the kernel's KvStore and hands the answer back to the plugin.
#include "kernel/src/fleet/kv_api.h"

#include <molt/molt.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "kernel/src/abi/bridge.h"
#include "kernel/src/fleet/kv_layer.h"
#include "kernel/src/fleet/kv_store.h"

namespace molt::kernel::fleet {
namespace {

using abi::PluginInstance;

// The op as KvStore takes it: the plugin's key under its name.
Result<KvOp> ToOp(const PluginInstance& p, const molt_kv_op& in) {
  KvOp op;
  if (in.kind < MOLT_KV_GET || in.kind > MOLT_KV_ZRANGE) {
    return Status::InvalidArgument("kind " + std::to_string(in.kind) + " is not a MOLT_KV_* call");
  }
  op.kind = static_cast<KvKind>(in.kind);
  op.key = p.name() + "/" + in.key;
  if (in.value != nullptr) {
    op.value.assign(static_cast<const char*>(in.value), in.value_size);
  } else if (in.value_size > 0) {
    return Status::InvalidArgument("value is NULL with a size of " + std::to_string(in.value_size));
  }
  if (op.kind == KvKind::kCas) {
    if ((in.flags & MOLT_KV_ABSENT) == 0) {
      if (in.expected == nullptr && in.expected_size > 0) {
        return Status::InvalidArgument("expected is NULL with a size of " +
                                       std::to_string(in.expected_size));
      }
      op.expected = std::string(static_cast<const char*>(in.expected != nullptr ? in.expected : ""),
                                in.expected_size);
    }
  }
  op.number = in.number;
  op.number2 = in.number2;
  op.limit = in.limit;
  op.descending = (in.flags & MOLT_KV_DESCENDING) != 0;
  if (!(in.ttl_seconds >= 0) || in.ttl_seconds > 1e9) {
    return Status::InvalidArgument("ttl_seconds is 0 (300) to 30 days");
  }
  op.ttl_ms = static_cast<std::int64_t>(in.ttl_seconds * 1000);
  return op;
}

molt_status_t KvCall(molt_context_t* ctx, const molt_kv_op* op, molt_kv_done_fn done,
                     void* user_data, molt_cleanup_fn release) noexcept {
  return abi::Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(abi::Required({{op, "op"}, {reinterpret_cast<void*>(done), "done"}}));
    if (op->struct_size < sizeof(molt_kv_op)) {
      return Status::InvalidArgument(
          "op->struct_size is " + std::to_string(op->struct_size) + ", under ABI 1.9's " +
          std::to_string(sizeof(molt_kv_op)) +
          ": zero-initialize it and set struct_size = sizeof(molt_kv_op)");
    }
    MOLT_RETURN_IF_ERROR(abi::Required({{op->key, "op->key"}}));
    MOLT_ASSIGN_OR_RETURN(KvOp call, ToOp(p, *op));
    KvLayer& layer = *p.shared().Layer<KvLayer>();  // installed with the slot
    MOLT_RETURN_IF_ERROR(layer.Call(p, std::move(call), done, user_data, release));
    return Status::Ok();
  });
}

}  // namespace

void AttachKv(abi::AbiShared& shared, KvStore& kv) {
  shared.AddLayer(std::make_unique<KvLayer>(kv));
  shared.mutable_api().kv_call = KvCall;
}

}  // namespace molt::kernel::fleet
