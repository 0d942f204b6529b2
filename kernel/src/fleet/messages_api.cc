// SPDX-License-Identifier: Apache-2.0
// message_publish and message_subscribe: the plugin's calls, into the kernel's Messages.
#include "kernel/src/fleet/messages_api.h"

#include <molt/molt.h>

#include <string>
#include <utility>
#include <vector>

#include "kernel/src/abi/bridge.h"
#include "kernel/src/fleet/messages.h"

namespace molt::kernel::fleet {
namespace {

using abi::HostLayer;
using abi::PluginInstance;

// The instances' subscriptions (in Messages) and their `release` callbacks, run when each stops.
class MessagesLayer : public HostLayer {
 public:
  explicit MessagesLayer(Messages& messages) : messages(messages) {}
  void ReleaseOwner(const void* owner) override {
    messages.Forget(owner);
    releases.RunFor(owner);
  }
  void Release(const void*, molt_handle_t, std::uint8_t, std::uint32_t) override {}

  Messages& messages;
  abi::OwnedReleases releases;
};

molt_status_t MessagePublish(molt_context_t* ctx, const char* topic, const void* data,
                             std::size_t size) noexcept {
  return abi::Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(abi::Required({{topic, "topic"}}));
    if (data == nullptr && size > 0) {
      return Status::InvalidArgument("data is NULL with a size of " + std::to_string(size));
    }
    MessagesLayer& layer = *p.shared().Layer<MessagesLayer>();  // installed with the slot
    return layer.messages.Publish(
        topic, std::string_view(static_cast<const char*>(data != nullptr ? data : ""), size));
  });
}

molt_status_t MessageSubscribe(molt_context_t* ctx, const char* topic, molt_message_fn fn,
                               void* user_data, molt_cleanup_fn release) noexcept {
  return abi::Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(abi::Required({{topic, "topic"}, {reinterpret_cast<void*>(fn), "fn"}}));
    MessagesLayer& layer = *p.shared().Layer<MessagesLayer>();
    MOLT_RETURN_IF_ERROR(
        layer.messages.Subscribe(&p, topic, [&p, fn, user_data](const Message& m, bool replayed) {
          const molt_message_meta meta{
              sizeof(molt_message_meta),
              (m.self ? MOLT_MESSAGE_SELF : 0u) | (replayed ? MOLT_MESSAGE_REPLAYED : 0u),
              m.server.c_str(), m.branch.c_str(), m.sent_ms};
          abi::CallPlugin(p, [&] {
            fn(user_data, m.topic.c_str(), m.data.data(), m.data.size(), &meta);
            return MOLT_OK;
          });
        }));
    layer.releases.Add(&p, release, user_data);
    return Status::Ok();
  });
}

}  // namespace

void AttachMessages(abi::AbiShared& shared, Messages& messages) {
  shared.AddLayer(std::make_unique<MessagesLayer>(messages));
  shared.mutable_api().message_publish = MessagePublish;
  shared.mutable_api().message_subscribe = MessageSubscribe;
}

}  // namespace molt::kernel::fleet
