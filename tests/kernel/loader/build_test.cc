// SPDX-License-Identifier: Apache-2.0
// Builds on disk (loader/build.h): writing one that loads as it was, and replacing a kept build
// in one step.
#include "kernel/src/loader/build.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/support/test_paths.h"

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;
using molt::test::kFixtures;

class BuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "molt_build_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
            std::to_string(::getpid());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string root_;
};

TEST_F(BuildTest, AWrittenBuildReadsBackWithItsEntriesAndHealth) {
  const std::string so = kFixtures + "/gen/v2/fx_gen_v2.so";
  const std::string dir = root_ + "/kept";
  ASSERT_TRUE(
      WriteBuild(dir, "b-7", {{so, "fx_gen.so", {"", "fx_gen", "1.0.0", "service"}}}, 7, 12.5)
          .ok());
  Result<Build> b = ReadBuild(dir);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->id, "b-7");
  ASSERT_EQ(b->entries.size(), 1u);
  const BuildEntry& e = b->entries.at("fx_gen.so");
  EXPECT_EQ(e.name, "fx_gen");
  EXPECT_EQ(e.version, "1.0.0");
  EXPECT_EQ(e.kind, "service");
  EXPECT_EQ(e.sha256, Sha256File(so).value());
  EXPECT_EQ(b->health_errors, 7u);
  EXPECT_EQ(b->health_window_seconds, 12.5);
  // A directory that exists already is refused, never written into.
  Status again = WriteBuild(dir, "b-8", {});
  EXPECT_FALSE(again.ok());
  EXPECT_NE(again.message().find("it exists"), std::string::npos) << again.message();
}

// InstallDirectory replaces a directory in one step: a reader (boot, after a crash at any
// moment) always finds a whole build there, the old one or the new one, never none.
TEST_F(BuildTest, InstallingOverAKeptBuildNeverLeavesItMissing) {
  const std::string so = kFixtures + "/gen/v1/fx_gen_v1.so";
  const std::string dir = root_ + "/last-known-good";
  ASSERT_TRUE(WriteBuild(root_ + "/staged", "b-0", {{so, "fx_gen.so", {}}}).ok());
  ASSERT_TRUE(InstallDirectory(root_ + "/staged", dir).ok());
  std::atomic<bool> done{false};
  std::atomic<int> missing{0};
  std::thread reader([&] {
    while (!done) {
      std::error_code ec;
      if (!fs::exists(fs::path(dir) / kBuildManifest, ec)) {
        ++missing;
      }
    }
  });
  for (int i = 1; i <= 300; ++i) {
    const std::string staged = root_ + "/staged";
    ASSERT_TRUE(WriteBuild(staged, "b-" + std::to_string(i), {{so, "fx_gen.so", {}}}).ok());
    ASSERT_TRUE(InstallDirectory(staged, dir).ok());
    ASSERT_FALSE(fs::exists(staged)) << "the old copy is removed";
  }
  done = true;
  reader.join();
  EXPECT_EQ(missing, 0) << "a reader found no build in " << dir;
  EXPECT_EQ(ReadBuild(dir)->id, "b-300");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(root_)) {
    ++entries;
  }
  EXPECT_EQ(entries, 1u) << "nothing but the installed build is left";
}

}  // namespace
}  // namespace molt::kernel::loader
