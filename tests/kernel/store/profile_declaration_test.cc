// SPDX-License-Identifier: Apache-2.0
// ProfileDeclaration (kernel/src/store/profile_declaration.h), on its own with entries built in
// the test: defaults parsed once (bad ones logged), a stored document decoded (migrated step by
// step, defaults filled), the gate before and after Detach, the backoff, and Adopt: migrations
// all or none, a lower schema refused naming the key, and the documents a failed swap takes back.
#include "kernel/src/store/profile_declaration.h"

#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <string>
#include <vector>

#include "kernel/src/store/profile_document.h"

namespace molt::kernel::store {
namespace {

namespace json = boost::json;
using std::chrono::seconds;

const LogScope kDeclLog("Profiles PlayerData");

ProfileSpec DeclSpec(std::uint32_t version) {
  ProfileSpec spec;
  spec.name = "PlayerData";
  spec.defaults = R"({"coins":0})";
  spec.schema_version = version;
  // Each step adds a field named after it: "v1", "v2", ...
  spec.migrate = [](std::uint32_t from, std::string doc) -> Result<std::string> {
    if (doc.find("\"poison\"") != std::string::npos) {
      return Status::Internal("cannot migrate poison");
    }
    return doc.substr(0, doc.size() - 1) + ",\"v" + std::to_string(from + 1) + "\":true}";
  };
  return spec;
}

// A loaded entry with `doc`.
ProfileEntry& Loaded(ProfileEntries& entries, net::SessionId id, const std::string& doc) {
  ProfileEntry& e = entries.AddSession(id, "PlayerData/u" + std::to_string(id));
  e.state = ProfileState::kLoaded;
  e.doc = ParseJson(doc).value();
  return e;
}

TEST(ProfileDeclarationTest, DefaultsThatAreNotAnObjectAreLoggedAndGiveNone) {
  std::vector<std::string> lines;
  Logger::Registration capture =
      Logger::Get().Capture([&lines](std::string_view l, LogLevel) { lines.emplace_back(l); });
  ProfileSpec spec = DeclSpec(0);
  spec.defaults = "[1]";
  ProfileDeclaration declaration(std::move(spec), kDeclLog);
  capture.Remove();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("[Profiles PlayerData] the defaults are not a JSON object: profiles "
                           "get no defaults (give a JSON object)",
                           0),
            0u)
      << lines[0];
  EXPECT_EQ(json::serialize(declaration.Fresh()), "{}");
}

TEST(ProfileDeclarationTest, AStoredDocumentIsMigratedStepByStepAndFilledFromTheDefaults) {
  ProfileDeclaration declaration(DeclSpec(2), kDeclLog);
  EXPECT_EQ(json::serialize(declaration.Fresh()), R"({"coins":0})");
  bool changed = false;
  Result<json::value> doc = declaration.Decode(R"({"gold":1})", 0, "profile \"x\"", &changed);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(json::serialize(*doc), R"({"gold":1,"v1":true,"v2":true,"coins":0})");
  EXPECT_TRUE(changed);
  doc = declaration.Decode(R"({"coins":3})", 2, "profile \"x\"", &changed);
  EXPECT_FALSE(changed) << "at the version, nothing missing";
  EXPECT_EQ(declaration.Decode("[1]", 2, "profile \"x\"", &changed).status().message(),
            "profile \"x\" is not a JSON object");
  EXPECT_FALSE(declaration.Decode(R"({"poison":1})", 1, "profile \"x\"", &changed).ok());
}

TEST(ProfileDeclarationTest, TheGateKeepsItsVerdictOnceDetached) {
  ProfileSpec spec = DeclSpec(0);
  spec.validate = [](std::string_view doc) {
    return doc.find("cheat") == std::string_view::npos ? Status::Ok()
                                                       : Status::Rejected("no cheats");
  };
  ProfileDeclaration declaration(std::move(spec), kDeclLog);
  ProfileEntries entries;
  ProfileEntry& e = Loaded(entries, 1, R"({"cheat":1})");
  e.version = 1;  // dirty
  EXPECT_EQ(declaration.Validate(e, R"({"cheat":1})").message(), "no cheats");
  declaration.Detach(entries);
  EXPECT_FALSE(declaration.attached());
  EXPECT_EQ(declaration.Validate(e, "anything").message(), "no cheats") << "the kept verdict";
  ++e.version;
  EXPECT_TRUE(declaration.Validate(e, "anything").ok()) << "changed since: no verdict";
}

TEST(ProfileDeclarationTest, TheBackoffRepeatsItsLastStep) {
  ProfileSpec spec = DeclSpec(0);
  spec.backoff = {seconds(1), seconds(3)};
  ProfileDeclaration declaration(std::move(spec), kDeclLog);
  EXPECT_EQ(declaration.Backoff(0), seconds(1));
  EXPECT_EQ(declaration.Backoff(1), seconds(3));
  EXPECT_EQ(declaration.Backoff(9), seconds(3));
  ProfileSpec none = DeclSpec(0);
  none.backoff.clear();
  EXPECT_EQ(ProfileDeclaration(std::move(none), kDeclLog).Backoff(0), seconds(1));
}

TEST(ProfileDeclarationTest, AdoptionMigratesEveryLoadedDocumentOrNone) {
  ProfileDeclaration declaration(DeclSpec(0), kDeclLog);
  ProfileEntries entries;
  ProfileEntry& a = Loaded(entries, 1, R"({"coins":1})");
  ProfileEntry& b = Loaded(entries, 2, R"({"poison":true})");
  declaration.Detach(entries);
  const Status refused = declaration.Adopt(DeclSpec(1), entries);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("profile \"PlayerData/u2\""), std::string::npos)
      << refused.message();
  EXPECT_EQ(json::serialize(a.doc), R"({"coins":1})") << "none migrated";
  EXPECT_FALSE(declaration.attached());

  entries.Erase(b.session);
  ASSERT_TRUE(declaration.Adopt(DeclSpec(1), entries).ok());
  EXPECT_TRUE(declaration.attached());
  EXPECT_EQ(declaration.spec().schema_version, 1u);
  EXPECT_EQ(json::serialize(a.doc), R"({"coins":1,"v1":true})");
  EXPECT_TRUE(a.dirty());
}

TEST(ProfileDeclarationTest, ALowerSchemaIsRefusedUnlessAFailedSwapTakesTheDocumentsBack) {
  ProfileDeclaration declaration(DeclSpec(1), kDeclLog);
  ProfileEntries entries;
  ProfileEntry& a = Loaded(entries, 1, R"({"coins":1})");
  ASSERT_TRUE(declaration.Adopt(DeclSpec(2), entries).ok());
  EXPECT_EQ(json::serialize(a.doc), R"({"coins":1,"v2":true})");
  // The swap fails after the adoption: the restored build, at version 1, takes them back.
  ASSERT_TRUE(declaration.Adopt(DeclSpec(1), entries).ok());
  EXPECT_EQ(json::serialize(a.doc), R"({"coins":1})");
  // Forgotten at the end of a swap: a lower version is refused, naming the loaded key.
  ASSERT_TRUE(declaration.Adopt(DeclSpec(2), entries).ok());
  declaration.ForgetUndo();
  const Status lower = declaration.Adopt(DeclSpec(1), entries);
  EXPECT_EQ(lower.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(lower.message(),
            "profile store \"PlayerData\" holds documents at schema version 2 (profile "
            "\"PlayerData/u1\" is loaded): a build that reads up to 1 cannot take it over; deploy "
            "a build at schema version 2 or later");
  ProfileSpec bad = DeclSpec(2);
  bad.defaults = "[]";
  EXPECT_EQ(declaration.Adopt(std::move(bad), entries).message(),
            "the defaults of profile store \"PlayerData\" are not a JSON object: give a JSON "
            "object");
}

}  // namespace
}  // namespace molt::kernel::store
