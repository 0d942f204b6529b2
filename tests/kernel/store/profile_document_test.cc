// SPDX-License-Identifier: Apache-2.0
// The JSON helpers of profile documents (kernel/src/store/profile_document.h) on their own: JSON
// Pointer tokens and array indices, defaults filled recursively, migrations step by step and
// their failures. What the driver makes of them (Get, Set, loads) is profiles_test.cc's.
#include "kernel/src/store/profile_document.h"

#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace molt::kernel::store {
namespace {

namespace json = boost::json;

TEST(ProfileDocumentTest, ParseJsonNamesWhatIsWrong) {
  EXPECT_EQ(json::serialize(ParseJson(R"({"coins": 7})").value()), R"({"coins":7})");
  const Result<json::value> bad = ParseJson(R"({"coins": 7)");
  EXPECT_EQ(bad.status().code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(bad.status().message().starts_with("not valid JSON (")) << bad.status().message();
}

TEST(ProfileDocumentTest, PointerTokensDecodeEscapesAndRefuseAPathWithoutASlash) {
  EXPECT_TRUE(PointerTokens("").value().empty()) << "the whole document";
  EXPECT_EQ(PointerTokens("/a~1b/~0c/0/").value(),
            (std::vector<std::string>{"a/b", "~c", "0", ""}));
  const Status bad = PointerTokens("coins").status();
  EXPECT_EQ(bad.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(bad.message(),
            "the path \"coins\" is not a JSON Pointer: start it with '/' (\"/coins\")");
}

TEST(ProfileDocumentTest, PointerIndexIsDigitsWithinTheArrayOrAnAppend) {
  EXPECT_EQ(PointerIndex("0", 2, false), std::optional<std::size_t>(0));
  EXPECT_EQ(PointerIndex("2", 2, false), std::nullopt);
  EXPECT_EQ(PointerIndex("2", 2, true), std::optional<std::size_t>(2));
  EXPECT_EQ(PointerIndex("-", 2, true), std::optional<std::size_t>(2));
  EXPECT_EQ(PointerIndex("-", 2, false), std::nullopt);
  EXPECT_EQ(PointerIndex("1x", 5, false), std::nullopt);
  EXPECT_EQ(PointerIndex("", 5, true), std::nullopt);
}

TEST(ProfileDocumentTest, FillDefaultsAddsWhatIsMissingRecursivelyAndKeepsWhatIsThere) {
  json::value doc = ParseJson(R"({"coins":5,"settings":{"music":false}})").value();
  const json::value defaults =
      ParseJson(R"({"coins":0,"items":[],"settings":{"music":true,"volume":3}})").value();
  EXPECT_TRUE(FillDefaults(doc, defaults));
  EXPECT_EQ(doc,
            ParseJson(R"({"coins":5,"settings":{"music":false,"volume":3},"items":[]})").value());
  EXPECT_FALSE(FillDefaults(doc, defaults)) << "nothing left to add";
  json::value not_an_object = json::array{1};
  EXPECT_FALSE(FillDefaults(not_an_object, defaults));
}

TEST(ProfileDocumentTest, MigrationsRunOneStepAtATimeAndFailClosed) {
  ProfileSpec spec;
  spec.schema_version = 3;
  spec.migrate = [](std::uint32_t from, std::string doc) -> Result<std::string> {
    json::value v = ParseJson(doc).value();
    v.as_object()["steps"].as_array().push_back(from);
    return json::serialize(v);
  };
  const std::string where = "profile \"PlayerData/ada\"";
  Result<json::value> doc = MigrateDocument(spec, ParseJson(R"({"steps":[]})").value(), 1, where);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(json::serialize(*doc), R"({"steps":[1,2]})");
  doc = MigrateDocument(spec, ParseJson(R"({"steps":[]})").value(), 3, where);
  EXPECT_EQ(json::serialize(*doc), R"({"steps":[]})") << "already at the schema version";

  spec.migrate = nullptr;
  EXPECT_EQ(MigrateDocument(spec, json::object(), 2, where).status().message(),
            "profile \"PlayerData/ada\" has schema version 2 and there is no migration to 3");
  spec.migrate = [](std::uint32_t, std::string) -> Result<std::string> {
    return std::string("[1]");
  };
  EXPECT_EQ(MigrateDocument(spec, json::object(), 2, where).status().message(),
            "profile \"PlayerData/ada\": the migration from schema version 2 failed: it did not "
            "return a JSON object");
  spec.migrate = [](std::uint32_t, std::string) -> Result<std::string> {
    return Status::Internal("no coins field");
  };
  const Status failed = MigrateDocument(spec, json::object(), 2, where).status();
  EXPECT_EQ(failed.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(failed.message(),
            "profile \"PlayerData/ada\": the migration from schema version 2 failed: no coins "
            "field");
}

}  // namespace
}  // namespace molt::kernel::store
