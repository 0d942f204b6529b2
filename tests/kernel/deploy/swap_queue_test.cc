// SPDX-License-Identifier: Apache-2.0
// SwapQueue (deploy/swap_queue.h): one swap at a time, in the order asked, each answer heard on
// the deploy thread; an answer after the queue is gone is dropped.
#include "kernel/src/deploy/swap_queue.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <string>
#include <vector>

namespace molt::kernel::deploy {
namespace {

class SwapQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    thread_.Start();
    queue_->set_swap(
        [this](SwapTarget target, std::string reason, std::function<void(SwapOutcome)> done) {
          std::lock_guard lock(mu_);
          asked_.push_back(target.build_id + " " + reason);
          held_.push_back(std::move(done));  // the kernel answers when the test says
        });
  }
  void TearDown() override { thread_.Stop(); }
  // Runs `fn` on the deploy thread and waits for it.
  void Run(const std::function<void()>& fn) {
    std::promise<void> ran;
    thread_.Post([&] {
      fn();
      ran.set_value();
    });
    ran.get_future().wait();
  }
  std::vector<std::string> Asked() {
    std::lock_guard lock(mu_);
    return asked_;
  }
  std::function<void(SwapOutcome)> Held(std::size_t i) {
    std::lock_guard lock(mu_);
    return held_.at(i);
  }

  SerialThread thread_;
  std::unique_ptr<SwapQueue> queue_ = std::make_unique<SwapQueue>(thread_);
  std::mutex mu_;
  std::vector<std::string> asked_;
  std::vector<std::function<void(SwapOutcome)>> held_;
  std::vector<std::string> finished_;  // on the deploy thread
};

TEST_F(SwapQueueTest, SwapsRunOneAtATimeInTheOrderAsked) {
  Run([&] {
    for (const char* id : {"one", "two"}) {
      queue_->Enqueue({{"", "", id}, "deploy", [this, id = std::string(id)](const SwapOutcome& o) {
                         finished_.push_back(id + " " + o.result);
                       }});
    }
  });
  EXPECT_EQ(Asked(), std::vector<std::string>{"one deploy"});  // two waits for one's answer
  Held(0)({"failed", "boom", "", true});
  Run([] {});  // the answer was posted to the deploy thread before this
  EXPECT_EQ(Asked(), (std::vector<std::string>{"one deploy", "two deploy"}));
  Held(1)({"swapped", "", "{}", false});
  Run([] {});
  EXPECT_EQ(finished_, (std::vector<std::string>{"one failed", "two swapped"}));
}

TEST_F(SwapQueueTest, AnAnswerAfterTheQueueIsGoneIsDropped) {
  Run([&] {
    queue_->Enqueue(
        {{"", "", "one"}, "deploy", [this](const SwapOutcome&) { finished_.push_back("heard"); }});
  });
  std::function<void(SwapOutcome)> late = Held(0);
  queue_.reset();
  late({"swapped", "", "{}", false});
  Run([] {});
  EXPECT_TRUE(finished_.empty());
}

}  // namespace
}  // namespace molt::kernel::deploy
