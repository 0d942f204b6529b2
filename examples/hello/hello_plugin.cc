// SPDX-License-Identifier: Apache-2.0
// hello: a small plugin built out of tree with find_package(Molt). It greets every service that
// registers, counts ticks, says goodbye with the count when it stops, and answers the request
// channel hello.Greet (payloads in hello.fbs, compiled by molt_plugin_schemas) where the host
// has a network.
#include <molt/molt.hpp>

#include "hello_generated.h"

class Hello : public molt::Service {
 public:
  static constexpr const char* kName = "hello";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr const char* kDescription = "an out-of-tree example";

  molt::Status Init() override {
    greeting_ = host().ConfigString("greeting", "hello");
    MOLT_ASSIGN_OR_RETURN(
        registered_,
        host().Subscribe("Kernel.ServiceRegistered", [this](std::string_view, molt::Args args) {
          host().Info(greeting_, ", ", args.String(0));
        }));
    if (!MOLT_API_HAS(host().api(), channel_declare)) {
      return molt::Status::Ok();
    }
    molt::ChannelOptions greet;
    greet.schema = "hello.Greet";
    greet.rules = {molt::MaxLengthRule(0, "name", 32)};
    greet.rate = 5;
    MOLT_ASSIGN_OR_RETURN(
        greet_, host().DeclareRequest(
                    "hello.Greet", greet,
                    [](std::string_view p) {
                      flatbuffers::Verifier v(reinterpret_cast<const std::uint8_t*>(p.data()),
                                              p.size());
                      return hello::VerifyGreetBuffer(v);
                    },
                    [this](molt::SessionId, std::string_view p, molt_request_t r) {
                      const hello::Greet* g = hello::GetGreet(p.data());
                      flatbuffers::FlatBufferBuilder b;
                      b.Finish(hello::CreateGreetingDirect(
                          b, (greeting_ + ", " + (g->name() ? g->name()->str() : "you")).c_str()));
                      return host().Reply(
                          r, MOLT_OK,
                          std::string_view(reinterpret_cast<const char*>(b.GetBufferPointer()),
                                           b.GetSize()));
                    }));
    return molt::Status::Ok();
  }
  molt::Status Start() override {
    MOLT_ASSIGN_OR_RETURN(ticker_, host().Every(0.5, [this] { ++ticks_; }));
    host().Info(greeting_, " from out of tree");
    return molt::Status::Ok();
  }
  molt::Status Stop() override {
    host().Info("goodbye after ", ticks_, " ticks");
    return molt::Status::Ok();
  }

 private:
  std::string greeting_;
  molt::Subscription registered_;
  molt::Task ticker_;
  molt::Channel greet_;
  int ticks_ = 0;
};

MOLT_PLUGIN(Hello)
