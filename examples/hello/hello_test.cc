// SPDX-License-Identifier: Apache-2.0
// hello's own tests, with the plugin test kit of the installed Molt (Molt::testkit,
// molt/testkit.hpp): MOLT_PLUGIN_HELLO is the hello.so this build made (molt_add_plugin_test).
#include <gtest/gtest.h>

#include <molt/testkit.hpp>

#include "hello_generated.h"

namespace {

std::string Greet(const std::string& name) {
  flatbuffers::FlatBufferBuilder b;
  b.Finish(hello::CreateGreetDirect(b, name.c_str()));
  return {reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()};
}

molt::testkit::Options Greeting(const std::string& word) {
  molt::testkit::Options o;
  o.config_json = R"({"plugins": {"hello": {"greeting": ")" + word + R"("}}})";
  return o;
}

TEST(HelloTest, GreetsByNameWithTheConfiguredWord) {
  molt::testkit::Kit kit({MOLT_PLUGIN_HELLO}, Greeting("ahoy"));
  const molt_session_t ada = kit.Join("ada");
  const molt::testkit::Response r = kit.Request(ada, "hello.Greet", Greet("Ada"));
  ASSERT_TRUE(r.ok()) << r.payload;
  EXPECT_EQ(flatbuffers::GetRoot<hello::Greeting>(r.payload.data())->text()->str(), "ahoy, Ada");
}

TEST(HelloTest, ANameOverItsRuleIsRefusedBeforeThePluginSeesIt) {
  molt::testkit::Kit kit({MOLT_PLUGIN_HELLO});
  const molt_session_t ada = kit.Join("ada");
  EXPECT_EQ(kit.Request(ada, "hello.Greet", Greet(std::string(33, 'a'))).status, MOLT_ERR_REJECTED);
}

TEST(HelloTest, CountsTicksOnTheKitsClockAndSaysGoodbye) {
  molt::testkit::Kit kit({MOLT_PLUGIN_HELLO});
  ASSERT_TRUE(kit.Advance(10).ok());
  ASSERT_TRUE(kit.Close().ok());
  EXPECT_NE(kit.Logs().find("goodbye after 20 ticks"), std::string::npos);
}

}  // namespace
