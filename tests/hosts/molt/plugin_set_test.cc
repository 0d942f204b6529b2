// SPDX-License-Identifier: Apache-2.0
// PluginSet (hosts/molt/plugin_set.h): the bundled plugins described as a build lists them, and
// the sets a build refuses (two plugins of one name, a library that is not a plugin), each
// reason named.
#include "hosts/molt/plugin_set.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kernel/src/loader/build.h"
#include "tests/support/test_paths.h"

namespace molt::cli {
namespace {

namespace fs = std::filesystem;
namespace loader = kernel::loader;

// The libraries of `dir`, as molt build lists them.
std::vector<std::string> LibrariesOf(const std::string& dir) {
  kernel::Result<loader::Build> b = loader::ReadBuild(dir);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return b.ok() ? b->files : std::vector<std::string>();
}

TEST(PluginSetTest, EachPluginIsDescribedFromItsOwnDescriptor) {
  const std::vector<std::string> files = LibrariesOf(test::kPlugins);
  kernel::Result<PluginSet> set = PluginSet::Read(test::kPlugins, files);
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_EQ(set->plugins().size(), static_cast<std::size_t>(test::kBundledPlugins));
  EXPECT_TRUE(set->has_services());
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const PluginEntry& p = set->plugins()[i];
    EXPECT_EQ(p.path, files[i]) << "in the order the build lists them";
    EXPECT_EQ(p.file, fs::path(files[i]).filename().string());
    EXPECT_EQ(p.sha256, loader::Sha256File(files[i]).value());
    EXPECT_FALSE(p.name.empty());
    EXPECT_FALSE(p.version.empty());
    EXPECT_EQ(p.kind, "service");
    EXPECT_EQ(p.abi.rfind("1.", 0), 0u) << p.abi;
    bytes += fs::file_size(files[i]);
  }
  EXPECT_EQ(set->bytes(), bytes);
}

TEST(PluginSetTest, TwoPluginsOfOneNameAreRefused) {
  const std::string dir = test::kFixtures + "/dup";
  kernel::Result<PluginSet> set = PluginSet::Read(dir, LibrariesOf(dir));
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().message().rfind("cannot build \"" + dir + "\":\n  plugin \"", 0), 0u)
      << set.status().message();
  EXPECT_NE(set.status().message().find(": plugin names must be unique"), std::string::npos)
      << set.status().message();
}

TEST(PluginSetTest, EveryLibraryThatIsNotAPluginIsNamed) {
  const std::string dir = ::testing::TempDir() + "plugin_set_" + std::to_string(::getpid());
  fs::create_directories(dir);
  std::ofstream(dir + "/notes.so") << "not a library";
  std::ofstream(dir + "/readme.so") << "nor this";
  kernel::Result<PluginSet> set = PluginSet::Read(dir, {dir + "/notes.so", dir + "/readme.so"});
  fs::remove_all(dir);
  ASSERT_FALSE(set.ok());
  const std::string why = set.status().message();
  EXPECT_EQ(why.rfind("cannot build \"" + dir + "\":\n  ", 0), 0u) << why;
  EXPECT_NE(why.find("notes.so"), std::string::npos) << why;
  EXPECT_NE(why.find("\n  "), why.rfind("\n  ")) << "one line each: " << why;
  EXPECT_NE(why.find("readme.so"), std::string::npos) << why;
}

}  // namespace
}  // namespace molt::cli
