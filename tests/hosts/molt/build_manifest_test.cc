// SPDX-License-Identifier: Apache-2.0
// A build's id and manifest (hosts/molt/build_manifest.h): the id follows the commit and what the
// libraries are, and the loader reads the manifest molt build writes.
#include "hosts/molt/build_manifest.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "kernel/src/loader/build.h"
#include "tests/support/test_paths.h"

namespace molt::cli {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace loader = kernel::loader;

std::vector<PluginEntry> TwoPlugins() {
  return {{"a.so", "/p/a.so", std::string(64, 'a'), "a", "1.0.0", "service", "1.6"},
          {"b.so", "/p/b.so", std::string(64, 'b'), "b", "2.1.0", "controller", "1.6"}};
}

GitInfo Clean() {
  GitInfo g;
  g.in_git = true;
  g.commit = "0123456789abcdef0123456789abcdef01234567";
  g.branch = "main";
  g.commit_time = 1'700'000'000;
  return g;
}

TEST(BuildManifestTest, TheIdIsTheCommitAndAHashOfWhatTheLibrariesAre) {
  const std::string id = BuildId(Clean(), TwoPlugins());
  ASSERT_EQ(id.size(), 14u) << id;
  EXPECT_EQ(id.substr(0, 8), "0123456-");
  EXPECT_EQ(id.substr(8).find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_EQ(BuildId(Clean(), TwoPlugins()), id) << "the same inputs, the same id";
  GitInfo dirty = Clean();
  dirty.dirty = true;
  EXPECT_EQ(BuildId(dirty, TwoPlugins()), "0123456-dirty-" + id.substr(8));
  EXPECT_EQ(BuildId(GitInfo{}, TwoPlugins()), "nogit-" + id.substr(8));
  std::vector<PluginEntry> changed = TwoPlugins();
  changed[1].sha256 = std::string(64, 'c');
  EXPECT_NE(BuildId(Clean(), changed), id) << "other bytes, another id";
}

TEST(BuildManifestTest, TheManifestSaysWhereTheBuildComesFromAndWhatItIsFor) {
  BuildTarget t{"prod", "prod", "00112233aabbccdd", 5, 60};
  const BuildManifest m = MakeManifest(Clean(), t, TwoPlugins());
  EXPECT_EQ(m.id, BuildId(Clean(), TwoPlugins()));
  EXPECT_EQ(m.text, json::serialize(m.json) + "\n");
  EXPECT_EQ(m.text.rfind("{\"build\":\"" + m.id + "\",\"commit\":\"0123456789abcdef", 0), 0u)
      << m.text;
  EXPECT_FALSE(m.json.at("dirty").as_bool());
  EXPECT_EQ(m.json.at("branch").as_string(), "prod");
  EXPECT_EQ(m.json.at("channel").as_string(), "prod");
  EXPECT_EQ(m.json.at("built_at").to_number<std::uint64_t>(), 1'700'000'000u);
  EXPECT_EQ(m.json.at("protocol").as_string(), "00112233aabbccdd");
  EXPECT_EQ(m.json.at("health").at("errors").to_number<int>(), 5);
  EXPECT_EQ(m.json.at("health").at("window_seconds").to_number<double>(), 60);
  const json::array& plugins = m.json.at("plugins").as_array();
  ASSERT_EQ(plugins.size(), 2u);
  EXPECT_EQ(json::serialize(plugins[1]),
            "{\"file\":\"b.so\",\"sha256\":\"" + std::string(64, 'b') +
                "\",\"name\":\"b\",\"version\":\"2.1.0\",\"kind\":\"controller\",\"abi\":\"1.6\"}");
  BuildTarget unset{"dev", "dev", "", 0, 0};
  EXPECT_FALSE(MakeManifest(Clean(), unset, TwoPlugins()).json.contains("health"))
      << "no health window set: the server's own applies";
}

TEST(BuildManifestTest, TheLoaderReadsWhatMoltBuildWrites) {
  const std::string dir = ::testing::TempDir() + "build_manifest_" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const loader::Build bundled = loader::ReadBuild(test::kPlugins).value();
  std::vector<PluginEntry> plugins;
  for (const std::string& path : bundled.files) {
    const std::string file = fs::path(path).filename().string();
    fs::copy_file(path, dir + "/" + file);
    plugins.push_back({file, dir + "/" + file, loader::Sha256File(path).value(), "n-" + file,
                       "1.0.0", "service", "1.6"});
  }
  const BuildManifest m = MakeManifest(GitInfo{}, BuildTarget{"dev", "dev", "", 7, 45}, plugins);
  std::ofstream(dir + "/" + loader::kBuildManifest) << m.text;
  kernel::Result<loader::Build> read = loader::ReadBuild(dir);
  fs::remove_all(dir);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_TRUE(read->has_manifest);
  EXPECT_EQ(read->id, m.id);
  EXPECT_EQ(read->health_errors, 7u);
  EXPECT_EQ(read->health_window_seconds, 45);
  ASSERT_EQ(read->entries.size(), plugins.size());
  for (const PluginEntry& p : plugins) {
    EXPECT_EQ(read->entries.at(p.file).sha256, p.sha256);
    EXPECT_EQ(read->entries.at(p.file).name, p.name);
  }
}

}  // namespace
}  // namespace molt::cli
