// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/core/config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace molt::kernel {
namespace {

TEST(ConfigTest, FlattensNestedObjectsToDottedKeys) {
  Config c;
  ASSERT_TRUE(c.MergeJson(R"({"server": {"tick_rate": 30, "log_level": "debug"},
                             "plugins": {"rounds": {"round_seconds": 2.5, "on": true,
                                                    "tags": ["a", "b"]}}})",
                          "test")
                  .ok());
  EXPECT_EQ(std::get<std::int64_t>(*c.Get("server.tick_rate")), 30);
  EXPECT_EQ(c.GetValue("server.log_level").AsString(), "debug");
  EXPECT_DOUBLE_EQ(c.GetValue("plugins.rounds.round_seconds").AsDouble(), 2.5);
  EXPECT_TRUE(c.GetValue("plugins.rounds.on").AsBool());
  EXPECT_EQ(c.GetValue("plugins.rounds.tags").AsString(), "[\"a\",\"b\"]");
  EXPECT_TRUE(c.GetValue("missing").is_nil());
  EXPECT_EQ(c.Get("missing"), nullptr);
}

TEST(ConfigTest, LaterValuesOverrideAndStringsStayValid) {
  Config c;
  c.Set("a", std::string("one"));
  Value first = c.GetValue("a");
  c.Set("b", std::string("two"));  // other keys never move existing values
  EXPECT_EQ(first.AsString(), "one");
  c.Set("a", std::int64_t{3});
  EXPECT_EQ(c.GetValue("a").AsInt(), 3);
}

TEST(ConfigTest, RejectsMalformedJsonNamingTheSource) {
  Config c;
  Status s = c.MergeJson("{\"a\": ", "config file \"x.json\"");
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("config file \"x.json\": not valid JSON: ", 0), 0u) << s.message();
  EXPECT_EQ(c.MergeJson("[1]", "f").message(), "f: the top level must be a JSON object");
  EXPECT_EQ(c.MergeJson("{\"a.b\": 1}", "f").message(),
            "f: key \"a.b\" under \"\" must be non-empty and contain no '.'");
}

TEST(ConfigTest, ReadsFilesAndNamesUnreadableOnes) {
  const std::string path = ::testing::TempDir() + "molt_config_test.json";
  {
    std::ofstream out(path);
    out << R"({"x": {"y": 1}})";
  }
  Config c;
  ASSERT_TRUE(c.MergeJsonFile(path).ok());
  EXPECT_EQ(c.GetValue("x.y").AsInt(), 1);
  std::remove(path.c_str());
  Status s = c.MergeJsonFile(path);
  EXPECT_EQ(s.code(), Status::Code::kIoError);
  EXPECT_EQ(s.message(), "config file \"" + path + "\" cannot be read");
}

}  // namespace
}  // namespace molt::kernel
