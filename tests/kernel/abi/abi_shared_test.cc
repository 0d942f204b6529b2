// SPDX-License-Identifier: Apache-2.0
// AbiShared: the table it is given, topic handles, layers by type, and the off-thread state every
// enrolled instance's gate follows (abi_fixture.h's alpha and beta).
#include "kernel/src/abi/abi_shared.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/kernel/abi/abi_fixture.h"

namespace molt::kernel::abi {
namespace {

using AbiSharedTest = AbiFixture;

std::int32_t NeverEnabled(molt_context_t*, std::int32_t) noexcept { return 0; }

// A layer that writes what it hears into a list it is given.
class ListeningLayer : public HostLayer {
 public:
  ListeningLayer(std::string name, std::vector<std::string>* heard)
      : name_(std::move(name)), heard_(heard) {}
  void ReleaseOwner(const void*) override { heard_->push_back(name_ + " release owner"); }
  void Release(const void*, molt_handle_t, std::uint8_t, std::uint32_t) override {}
  void BeginHandoff() override { heard_->push_back(name_ + " begin handoff"); }

 private:
  std::string name_;
  std::vector<std::string>* heard_;
};
class OtherLayer : public ListeningLayer {
 public:
  using ListeningLayer::ListeningLayer;
};
class AbsentLayer : public ListeningLayer {
 public:
  using ListeningLayer::ListeningLayer;
};

TEST_F(AbiSharedTest, HandsOutTheTableItWasGivenForTheLayersToFillIn) {
  molt_host_api table = CoreHostApi();
  table.log_enabled = NeverEnabled;
  AbiShared shared(*kernel_, table);
  EXPECT_EQ(shared.api().log_enabled, &NeverEnabled);
  EXPECT_EQ(shared.api().struct_size, sizeof(molt_host_api));
  shared.mutable_api().log_enabled = nullptr;
  EXPECT_EQ(shared.api().log_enabled, nullptr);
  EXPECT_EQ(&shared.kernel(), kernel_.get());
}

TEST_F(AbiSharedTest, TopicHandlesAreStableAndABogusOneFindsNothing) {
  Bus::Topic* score = kernel_->bus().Resolve("Score.Changed");
  Bus::Topic* round = kernel_->bus().Resolve("Round.Ended");
  const molt_topic_t h = shared_->TopicHandle(score);
  EXPECT_EQ(shared_->TopicHandle(score), h);
  EXPECT_NE(shared_->TopicHandle(round), h);
  EXPECT_EQ(AbiShared::KindOf(h), AbiShared::kTopicTag);
  EXPECT_EQ(shared_->TopicAt(h), score);
  EXPECT_EQ(shared_->TopicAt(h + (100u << AbiShared::kKindBits)), nullptr) << "never issued";
  EXPECT_EQ(shared_->TopicAt(h + 1), nullptr) << "another kind";
  EXPECT_EQ(shared_->TopicAt(0), nullptr);
}

TEST_F(AbiSharedTest, LayersAreFoundByTypeAndHeardInTheOrderAdded) {
  std::vector<std::string> heard;
  ListeningLayer& first = shared_->AddLayer(std::make_unique<ListeningLayer>("first", &heard));
  OtherLayer& second = shared_->AddLayer(std::make_unique<OtherLayer>("second", &heard));
  EXPECT_EQ(shared_->Layer<ListeningLayer>(), &first);
  EXPECT_EQ(shared_->Layer<OtherLayer>(), &second);
  EXPECT_EQ(shared_->Layer<AbsentLayer>(), nullptr);
  shared_->ForEachLayer([](HostLayer& layer) { layer.BeginHandoff(); });
  EXPECT_EQ(heard, (std::vector<std::string>{"first begin handoff", "second begin handoff"}));
  heard.clear();
  Boot();
  ASSERT_TRUE(alpha_->Stop().ok());  // a stopping instance tells every layer, in order
  EXPECT_EQ(heard, (std::vector<std::string>{"first release owner", "second release owner"}));
  ASSERT_TRUE(beta_->Stop().ok());  // before `heard` goes: the kernel's shutdown stops it later
}

TEST_F(AbiSharedTest, OffThreadCallsRaiseEveryEnrolledInstancesGateUntilTheLastEnds) {
  EXPECT_FALSE(alpha_->off_thread());
  shared_->BeginOffThread();
  shared_->BeginOffThread();
  EXPECT_TRUE(alpha_->off_thread());
  EXPECT_TRUE(beta_->off_thread());
  shared_->EndOffThread();
  EXPECT_TRUE(alpha_->off_thread()) << "one still runs";
  shared_->EndOffThread();
  EXPECT_FALSE(alpha_->off_thread());
  shared_->BeginWorkerJobs();
  EXPECT_TRUE(shared_->worker_jobs());
  EXPECT_NE(beta_->gate() & PluginInstance::kGateWorkers, 0);
  shared_->EndWorkerJobs();
  EXPECT_FALSE(shared_->worker_jobs());
  EXPECT_EQ(beta_->gate() & PluginInstance::kGateWorkers, 0);
  EXPECT_TRUE(shared_->on_kernel_thread());
  shared_->MarkAbandoned();  // a callback was abandoned: for good
  EXPECT_TRUE(shared_->off_thread());
}

TEST_F(AbiSharedTest, AnInstanceThatOutlivesItsHostAsksItNothingMore) {
  auto host = std::make_unique<AbiShared>(*kernel_, CoreHostApi());
  auto instance = std::make_shared<PluginInstance>(*host, alpha_info_, "alpha.so");
  host->BeginWorkerJobs();
  EXPECT_NE(instance->gate() & PluginInstance::kGateWorkers, 0);
  host.reset();
  // A job's function may still run: its calls keep taking the slow path, without the host.
  EXPECT_TRUE(instance->off_thread());
  instance->UpdateGate();
  EXPECT_TRUE(instance->off_thread());
}

TEST_F(AbiSharedTest, KeepsTheStuckCallbacksAndTheWayToReload) {
  EXPECT_TRUE(shared_->stuck().empty());
  shared_->AddStuck("alpha: stop() did not return within 5 s");
  EXPECT_EQ(shared_->stuck(), std::vector<std::string>{"alpha: stop() did not return within 5 s"});
  EXPECT_FALSE(shared_->can_reload());
  std::string asked;
  shared_->set_reload([&](std::string reason) {
    asked = reason;
    return Status::Unsupported("not now");
  });
  EXPECT_TRUE(shared_->can_reload());
  EXPECT_EQ(shared_->RequestReload("plugin alpha").message(), "not now");
  EXPECT_EQ(asked, "plugin alpha");
}

}  // namespace
}  // namespace molt::kernel::abi
