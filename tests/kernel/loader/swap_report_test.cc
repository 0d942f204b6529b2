// SPDX-License-Identifier: Apache-2.0
// SwapReport as the swap's log line and history entry: every field, durations to the microsecond.
#include "kernel/src/loader/swap_report.h"

#include <gtest/gtest.h>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <string>

namespace molt::kernel::loader {
namespace {

TEST(SwapReportTest, ToJsonNamesEveryFieldAndRoundsDurationsToTheMicrosecond) {
  SwapReport r;
  r.reason = "SIGHUP";
  r.build = "b2";
  r.generation = "b2#2";
  r.previous = "b1#1";
  r.serving = "b2#2";
  r.ok = true;
  r.stage = "done";
  r.load_ms = 1.23456789;
  r.staged_ms = 0.0004;
  r.hold_ms = 2.0005;
  r.hard_stopped = {"slow"};
  r.retired = {"channel chat.Say"};
  r.held = {"worker@b1#1: 1 worker job(s) still running"};
  r.handed = {{"counter", 2, 17}};
  const boost::json::object o = r.ToJson();
  EXPECT_EQ(o.at("swap"), "ok");
  EXPECT_EQ(o.at("reason"), "SIGHUP");
  EXPECT_EQ(o.at("build"), "b2");
  EXPECT_EQ(o.at("generation"), "b2#2");
  EXPECT_EQ(o.at("previous"), "b1#1");
  EXPECT_EQ(o.at("serving"), "b2#2");
  EXPECT_EQ(o.at("ok"), true);
  EXPECT_EQ(o.at("stage"), "done");
  EXPECT_DOUBLE_EQ(o.at("load_ms").as_double(), 1.235);
  EXPECT_DOUBLE_EQ(o.at("staged_ms").as_double(), 0);
  EXPECT_DOUBLE_EQ(o.at("hold_ms").as_double(), 2.001);
  EXPECT_EQ(o.at("hard_stopped").as_array().size(), 1u);
  EXPECT_EQ(o.at("retired").as_array().at(0), "channel chat.Say");
  EXPECT_EQ(o.at("held").as_array().size(), 1u);
  const boost::json::object& handed = o.at("handed").as_array().at(0).as_object();
  EXPECT_EQ(handed.at("plugin"), "counter");
  EXPECT_EQ(handed.at("state_version").to_number<int>(), 2);
  EXPECT_EQ(handed.at("bytes").to_number<int>(), 17);
  EXPECT_EQ(o.at("restored"), false);
  EXPECT_EQ(o.at("rollback"), false);
  EXPECT_EQ(o.at("error"), "");
}

TEST(SwapReportTest, AFailedSwapIsOneLineThatSaysSoFirst) {
  SwapReport r;
  r.reason = "test";
  r.stage = "mount";
  r.error = "1 of 1 plugin files refused:\n  plugin file \"x.so\" is not a plugin";
  const std::string line = r.Json();
  EXPECT_EQ(line.rfind("{\"swap\":\"failed\",\"reason\":\"test\",", 0), 0u) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << "the error's line break is escaped";
  EXPECT_EQ(std::string(boost::json::parse(line).as_object().at("error").as_string()), r.error);
}

}  // namespace
}  // namespace molt::kernel::loader
