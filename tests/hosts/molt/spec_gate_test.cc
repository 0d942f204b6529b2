// SPDX-License-Identifier: Apache-2.0
// The spec gate (hosts/molt/spec_gate.h): the real moltd passes the bundled plugins and says
// their protocol, fails an unsafe set with its report, and each way a moltd cannot serve as the
// gate is named.
#include "hosts/molt/spec_gate.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_paths.h"

namespace molt::cli {
namespace {

namespace fs = std::filesystem;

class SpecGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "spec_gate_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A stand-in moltd: a shell script with `body`.
  std::string FakeMoltd(const std::string& name, const std::string& body) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }

  std::string dir_;
};

TEST_F(SpecGateTest, TheFlagThenMoltdThenTheOneBesideThenPath) {
  EXPECT_EQ(MoltdPath(std::string("/opt/molt/bin/moltd")), "/opt/molt/bin/moltd");
  EXPECT_EQ(MoltdPath(std::string()), "") << "a flag given empty is taken as given";
  ::setenv("MOLTD", "/from/env/moltd", 1);
  EXPECT_EQ(MoltdPath(std::nullopt), "/from/env/moltd");
  ::unsetenv("MOLTD");
  const std::string found = MoltdPath(std::nullopt);
  EXPECT_TRUE(found == "moltd" ||
              found == (fs::read_symlink("/proc/self/exe").parent_path() / "moltd").string())
      << found;
}

TEST_F(SpecGateTest, TheBundledPluginsPassAndTheirProtocolIsSaid) {
  kernel::Result<std::string> protocol = RunSpecGate(test::kMoltd, test::kPlugins);
  ASSERT_TRUE(protocol.ok()) << protocol.status().message();
  EXPECT_EQ(protocol->size(), 16u) << *protocol;
  EXPECT_EQ(protocol->find_first_not_of("0123456789abcdef"), std::string::npos) << *protocol;
  EXPECT_EQ(RunSpecGate(test::kMoltd, test::kPlugins).value(), *protocol) << "the same set";
}

TEST_F(SpecGateTest, ASetThatFailsTheGateIsNotBuiltAndTheReportSaysWhy) {
  kernel::Result<std::string> r = RunSpecGate(test::kMoltd, test::kFixtures + "/unsafe");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind(
                "the plugin set does not pass moltd --self-test (its own tests, the security "
                "audit, the fuzz gate), so it is not built:\n",
                0),
            0u)
      << r.status().message();
}

TEST_F(SpecGateTest, AMoltdThatCannotServeAsTheGateIsNamed) {
  const std::string none = dir_ + "/no-moltd";
  EXPECT_EQ(RunSpecGate(none, test::kPlugins).status().message(),
            "cannot run \"" + none + "\" for the check: pass --moltd PATH (or set MOLTD)");
  const std::string old = FakeMoltd("old-moltd", "exit 2");
  EXPECT_EQ(RunSpecGate(old, test::kPlugins).status().message(),
            "\"" + old +
                "\" does not know --self-test: it is older than this molt (use the moltd of the "
                "same release, --moltd)");
  const std::string mute = FakeMoltd("mute-moltd", "echo self-test passed; exit 0");
  EXPECT_EQ(RunSpecGate(mute, test::kPlugins).status().message(),
            "\"" + mute +
                "\" printed no protocol hash: it is older than this molt (use the moltd of the "
                "same release, --moltd)");
}

}  // namespace
}  // namespace molt::cli
