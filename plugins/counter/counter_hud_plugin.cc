// SPDX-License-Identifier: Apache-2.0
// counter_hud (controller): the client half of the counter pair, run by libmolt_client. Once
// connected it asks for the count (counter.Get, waited on in a process, the answer verified),
// greets the player as visitor number count + 1 and adds one; then it logs every change the
// "counter" replica brings.
#include <flatbuffers/flatbuffers.h>
#include <molt/client.h>  // the Net.* topics' constants

#include <molt/molt.hpp>
#include <string>

#include "counter_generated.h"

namespace molt::plugins::counter {

template <class F>
std::string_view Finished(flatbuffers::FlatBufferBuilder& b, F&& build) {
  b.Finish(build(b));
  return std::string_view(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

class CounterHud : public molt::Service {
 public:
  static constexpr const char* kName = "counter_hud";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr const char* kDescription = "shows the shared counter and counts the visit";
  static constexpr std::int32_t kKind = MOLT_PLUGIN_KIND_CONTROLLER;

  molt::Status Init() override {
    MOLT_ASSIGN_OR_RETURN(state_,
                          host().Subscribe("Net.State", [this](std::string_view, molt::Args a) {
                            if (a.Int(0) == MOLT_CLIENT_CONNECTED && a.String(1) != "resumed") {
                              Visit();
                            }
                          }));
    // (replica, what, field): a snapshot, or a change of field 0 (value); not "last" alone.
    MOLT_ASSIGN_OR_RETURN(
        changes_, host().Subscribe("Net.Replica.counter", [this](std::string_view, molt::Args a) {
          if (a.Int(1) != MOLT_CLIENT_REPLICA_SNAPSHOT &&
              !(a.Int(1) == MOLT_CLIENT_REPLICA_CHANGED && a.Int(2) == 0)) {
            return;
          }
          const auto value = host().ReplicaField("counter", "value");
          const auto last = host().ReplicaField("counter", "last");
          if (value.ok() && last.ok()) {
            host().Info("counter: ", value->as.i, " (last: ",
                        std::string_view(static_cast<const char*>(last->as.ptr), last->size), ")");
          }
        }));
    return molt::Status::Ok();
  }

 private:
  // Asks for the count (Ask: a request waited on inside a process), then adds this visit.
  void Visit() {
    molt::Result<molt::Process> visit = host().Spawn([this] {
      flatbuffers::FlatBufferBuilder q;
      const molt::Result<molt::Host::WaitResult> asked = host().Ask(
          "counter.Get", Finished(q, [](auto& b) { return molt::counter::CreateGet(b); }));
      if (!asked.ok()) {
        host().Warn("counter.Get was not sent: ", asked.status().message());
        return;
      }
      const molt::Host::WaitResult& r = *asked;
      flatbuffers::Verifier v(reinterpret_cast<const std::uint8_t*>(r.payload.data()),
                              r.payload.size());
      if (r.code != MOLT_OK || !v.VerifyBuffer<molt::counter::Value>(nullptr)) {
        host().Warn("counter.Get failed (", r.code, "): ", r.payload);
        return;
      }
      const std::int64_t count =
          flatbuffers::GetRoot<molt::counter::Value>(r.payload.data())->value();
      host().Info("welcome, visitor #", count + 1);
      flatbuffers::FlatBufferBuilder a;
      (void)host().Intent("counter.Add",
                          Finished(a, [](auto& b) { return molt::counter::CreateAdd(b, 1); }));
    });
    if (!visit.ok()) {
      host().Warn("cannot visit: ", visit.status().message());
      return;
    }
    visit_ = *visit;
    (void)visit_.Start();
  }

  molt::Subscription state_;
  molt::Subscription changes_;
  molt::Process visit_;
};

}  // namespace molt::plugins::counter

MOLT_PLUGIN(molt::plugins::counter::CounterHud)
