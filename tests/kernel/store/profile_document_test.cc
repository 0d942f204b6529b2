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

TEST(ProfileDocumentTest, APointerFindsItsValueOrNothing) {
  const json::value doc = ParseJson(R"({"a":{"b":[10,20]},"c~d":1})").value();
  EXPECT_EQ(json::serialize(*FindPointer(doc, "/a/b/1").value()), "20");
  EXPECT_EQ(json::serialize(*FindPointer(doc, "").value()), json::serialize(doc));
  EXPECT_EQ(json::serialize(*FindPointer(doc, "/c~0d").value()), "1");
  EXPECT_EQ(FindPointer(doc, "/a/b/2").value(), nullptr);
  EXPECT_EQ(FindPointer(doc, "/a/x").value(), nullptr);
  EXPECT_EQ(FindPointer(doc, "a").status().code(), Status::Code::kInvalidArgument);
}

TEST(ProfileDocumentTest, APointerSetsCreatingObjectsAndAppendingToArrays) {
  json::value doc = ParseJson(R"({"items":[1]})").value();
  ASSERT_TRUE(SetPointer(doc, "/a/b", json::value(1)).ok());
  ASSERT_TRUE(SetPointer(doc, "/items/-", json::value(2)).ok());
  ASSERT_TRUE(SetPointer(doc, "/items/0", json::value(0)).ok());
  EXPECT_EQ(json::serialize(doc), R"({"items":[0,2],"a":{"b":1}})");
  EXPECT_EQ(SetPointer(doc, "/items/5", json::value(1)).message(),
            "\"/items/5\": no element 5 in that array");
  EXPECT_EQ(SetPointer(doc, "/a/b/c", json::value(1)).message(),
            "\"/a/b/c\": its parent is neither an object nor an array");
  EXPECT_EQ(SetPointer(doc, "/a/b/c/d", json::value(1)).message(),
            "\"/a/b/c/d\": \"c\" is inside a value that is neither object nor array");
  EXPECT_EQ(SetPointer(doc, "", json::value(1)).message(), "a profile document is a JSON object");
  ASSERT_TRUE(SetPointer(doc, "", ParseJson(R"({"x":1})").value()).ok());
  EXPECT_EQ(json::serialize(doc), R"({"x":1})");
}
}  // namespace
}  // namespace molt::kernel::store
