// SPDX-License-Identifier: Apache-2.0
// PendingReply (deploy/pending_reply.h): one answer, the outcome's or the pending one at the
// deadline, whichever comes first.
#include "kernel/src/deploy/pending_reply.h"

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

namespace molt::kernel::deploy {
namespace {

TEST(PendingReplyTest, TheFirstAnswerWinsAndTheOthersAreDropped) {
  std::vector<std::string> heard;
  PendingReply<std::string> reply(
      [&](Result<std::string> r) { heard.push_back(r.ok() ? *r : r.status().message()); });
  EXPECT_TRUE(reply.Answer(std::string("swapped")));
  EXPECT_FALSE(reply.Answer(Status::Internal("late")));
  EXPECT_EQ(heard, std::vector<std::string>{"swapped"});
}

TEST(PendingReplyTest, TheDeadlineAnswersPendingUnlessTheOutcomeCameFirst) {
  SerialThread thread;
  thread.Start();
  std::promise<std::string> first;
  auto slow = PendingReply<std::string>::Arm(
      thread, std::chrono::seconds(0), [&](Result<std::string> r) { first.set_value(*r); },
      "pending");
  EXPECT_EQ(first.get_future().get(), "pending");
  std::promise<bool> late;
  thread.Post([&] { late.set_value(slow->Answer(std::string("swapped"))); });
  EXPECT_FALSE(late.get_future().get());

  std::promise<std::string> second;
  auto fast = PendingReply<std::string>::Arm(
      thread, std::chrono::seconds(600), [&](Result<std::string> r) { second.set_value(*r); },
      "pending");
  thread.Post([&] { fast->Answer(std::string("swapped")); });
  EXPECT_EQ(second.get_future().get(), "swapped");
  thread.Stop();
}

}  // namespace
}  // namespace molt::kernel::deploy
