// SPDX-License-Identifier: Apache-2.0
// hello: the smallest useful plugin, built out of tree with find_package(Molt). It greets every
// service that registers, counts ticks, and says goodbye with the count when it stops.
#include <molt/molt.hpp>

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
  int ticks_ = 0;
};

MOLT_PLUGIN(Hello)
