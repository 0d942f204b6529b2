// SPDX-License-Identifier: Apache-2.0
// Reconnector (kernel/src/client/reconnector.h) on times the test picks: the backoff with its
// jitter, doubling to the maximum and starting afresh; a server's wait; the address a Redirect
// names, and the soon-after attempt that follows it.
#include "kernel/src/client/reconnector.h"

#include <gtest/gtest.h>

#include <chrono>

namespace molt::kernel::client {
namespace {

using std::chrono::duration;

const TimePoint kRetryNow = TimePoint() + std::chrono::hours(1);

double Wait(const Reconnector& r) { return duration<double>(r.next_attempt() - kRetryNow).count(); }

TEST(ReconnectorTest, TheBackoffDoublesWithJitterUpToTheMaximum) {
  Reconnector r(/*max_seconds=*/0.5);
  const double expected[] = {0.1, 0.2, 0.4, 0.5, 0.5};
  for (double base : expected) {
    r.AfterLoss(kRetryNow);
    EXPECT_GE(Wait(r), base * 0.75 - 1e-9);
    EXPECT_LE(Wait(r), base * 1.25 + 1e-9);
  }
  EXPECT_FALSE(r.Due(kRetryNow));
  EXPECT_TRUE(r.Due(r.next_attempt()));
  r.Reset();
  r.AfterLoss(kRetryNow);
  EXPECT_LE(Wait(r), 0.125 + 1e-9) << "afresh";
  r.AtLeast(3);  // a busy server asks for 3 s
  r.AfterLoss(kRetryNow);
  EXPECT_GE(Wait(r), 3 * 0.75 - 1e-9);
}

TEST(ReconnectorTest, ARedirectNamesAServerToJoinSoon) {
  Reconnector r(8);
  EXPECT_FALSE(r.Redirect("nowhere", "s", "drain"));
  EXPECT_FALSE(r.Redirect(":7777", "s", "drain"));
  EXPECT_FALSE(r.Redirect("host:0", "s", "drain"));
  EXPECT_FALSE(r.Redirect("host:70000", "s", "drain"));
  EXPECT_FALSE(r.Redirect("host:77x", "s", "drain"));
  EXPECT_FALSE(r.Redirect("[]:1", "s", "drain"));
  EXPECT_FALSE(r.Redirect("[::1:7777", "s", "drain"));
  EXPECT_FALSE(r.redirected());
  ASSERT_TRUE(r.Redirect("[::1]:7777", "moltd-2", "drain"));
  ASSERT_TRUE(r.redirected());
  for (int i = 0; i < 4; ++i) {
    r.AfterLoss(kRetryNow);  // a long backoff before the Redirect is followed
  }
  const Reconnector::Redirection to = r.Follow(kRetryNow);
  EXPECT_EQ(to.host, "::1");
  EXPECT_EQ(to.port, 7777);
  EXPECT_EQ(to.server, "moltd-2");
  EXPECT_EQ(to.reason, "drain");
  EXPECT_FALSE(r.redirected());
  EXPECT_LE(Wait(r), Reconnector::kFirstDelay) << "spread over the first backoff";
  r.AfterLoss(kRetryNow);
  EXPECT_LE(Wait(r), 0.125 + 1e-9) << "the backoff afresh";
  ASSERT_TRUE(r.Redirect("10.0.0.2:7777", "moltd-3", "drain"));
  r.ForgetRedirect();
  EXPECT_FALSE(r.redirected());
}

}  // namespace
}  // namespace molt::kernel::client
