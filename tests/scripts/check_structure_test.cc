// SPDX-License-Identifier: Apache-2.0
// scripts/check-structure.sh against small trees made for each case, with the repository's own
// docs/architecture.md (the room table and the sources without a header are read from there):
// a clean tree passes, and each kind of break is named where it is, as a compiler would.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

struct Outcome {
  int status = -1;
  std::string output;
};

class CheckStructureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("molt-structure-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "docs");
    fs::copy_file(fs::path(MOLT_SOURCE_DIR) / "docs/architecture.md",
                  root_ / "docs/architecture.md");
    // A small tree in room order: core below net, a host and a plugin on public headers.
    Write("kernel/src/core/clock.h", "#pragma once\n");
    Write("kernel/src/core/clock.cc", "#include \"kernel/src/core/clock.h\"\n");
    Write("kernel/src/net/peer.h", "#include \"kernel/src/core/clock.h\"\n");
    Write("kernel/src/net/peer.cc", "#include \"kernel/src/net/peer.h\"\n");
    Write("kernel/src/net/link.h", "#include \"kernel/src/net/peer.h\"\n");
    Write("kernel/src/net/link.cc", "#include \"kernel/src/net/link.h\"\n");
    Write("hosts/moltd/main.cc", "#include <molt/kernel/server.h>\n");
    Write("plugins/echo/echo_plugin.cc", "#include <molt/molt.hpp>\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text;
  }
  Outcome Check() {
    const std::string command = "bash " + std::string(MOLT_SOURCE_DIR) +
                                "/scripts/check-structure.sh " + root_.string() + " 2>&1";
    Outcome run;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) {
      return run;
    }
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
      run.output += buffer;
    }
    const int status = ::pclose(pipe);
    run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return run;
  }

  fs::path root_;
};

TEST_F(CheckStructureTest, ATreeInRoomOrderWithEverySourcePairedPasses) {
  const Outcome run = Check();
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_EQ(run.output,
            "check-structure: 8 files: none over 800 lines, every source paired, includes in "
            "room order, no circle\n");
}

TEST_F(CheckStructureTest, AProductionFileOverEightHundredLinesFailsAtItsFirstLineTooMany) {
  Write("kernel/src/net/big.h", "#pragma once\n");
  Write("kernel/src/net/big.cc", std::string(801, '\n'));
  Write("hosts/molt/small.cc", std::string(800, '\n'));  // at the limit: fine
  const Outcome run = Check();
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.output.find("kernel/src/net/big.cc:801: error: 801 lines: a production file holds "
                            "at most 800; split it by object, a class to a header and its source "
                            "(STYLE.md §12)\n"),
            std::string::npos)
      << run.output;
  EXPECT_EQ(run.output.find("small.cc"), std::string::npos) << run.output;
}

TEST_F(CheckStructureTest, ASourceWithoutAHeaderOfItsStemFailsUnlessTheDocListsIt) {
  Write("kernel/src/net/inbound.cc", "#include \"kernel/src/net/peer.h\"\n");
  Write("kernel/src/client/client.cc", "\n");  // the C entry points: listed in the doc
  const Outcome run = Check();
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.output.find("kernel/src/net/inbound.cc:1: error: no header "
                            "kernel/src/net/inbound.h: a source holds the methods of the class "
                            "its own header declares;"),
            std::string::npos)
      << run.output;
  EXPECT_EQ(run.output.find("client.cc"), std::string::npos) << run.output;
}

TEST_F(CheckStructureTest, AnIncludeAgainstTheRoomOrderFailsNamingWhatTheRoomMayInclude) {
  Write("kernel/src/core/clock.cc",
        "#include \"kernel/src/core/clock.h\"\n\n#include \"kernel/src/net/peer.h\"\n");
  Write("plugins/echo/echo_plugin.cc", "#include \"kernel/src/core/clock.h\"\n");
  const Outcome run = Check();
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.output.find("kernel/src/core/clock.cc:3: error: \"core\" may not include "
                            "kernel/src/net/peer.h: the room table of docs/architecture.md lets "
                            "it include only core;"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("plugins/echo/echo_plugin.cc:1: error: \"plugins\" may not include "
                            "kernel/src/core/clock.h: the room table of docs/architecture.md lets "
                            "it include nothing of kernel/src;"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("check-structure: 2 error(s)"), std::string::npos) << run.output;
}

TEST_F(CheckStructureTest, FilesOfOneDirectoryThatIncludeEachOtherInACircleFail) {
  // The part reaches back into its owner: peer.cc includes link.h, which includes peer.h.
  Write("kernel/src/net/peer.cc",
        "#include \"kernel/src/net/peer.h\"\n#include \"kernel/src/net/link.h\"\n");
  const Outcome run = Check();
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.output.find("error: a circle of includes: kernel/src/net/link -> "
                            "kernel/src/net/peer -> kernel/src/net/link;"),
            std::string::npos)
      << run.output;
}

TEST_F(CheckStructureTest, ADirectoryTheRoomTableDoesNotKnowFails) {
  Write("kernel/src/reactor/epoll.h", "#pragma once\n");
  Write("kernel/src/reactor/epoll.cc", "#include \"kernel/src/reactor/epoll.h\"\n");
  const Outcome run = Check();
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.output.find("kernel/src/reactor/epoll.cc:1: error: directory \"reactor\" is not "
                            "in the room table of docs/architecture.md: add its row"),
            std::string::npos)
      << run.output;
}

}  // namespace
