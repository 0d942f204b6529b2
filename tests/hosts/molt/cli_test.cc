// SPDX-License-Identifier: Apache-2.0
// What every molt verb shares (hosts/molt/cli.h): the admin token's sources in order, the
// output helpers, the local verbs' flag parsing and running another program.
#include "hosts/molt/cli.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace molt::cli {
namespace {

namespace fs = std::filesystem;

TEST(CliTest, PrintTablePadsEachColumnToItsWidestCell) {
  ::testing::internal::CaptureStdout();
  PrintTable({{"ID", "USER"}, {"12345", "ada"}, {"7", "grace hopper"}});
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "ID     USER\n"
            "12345  ada\n"
            "7      grace hopper\n");
}

TEST(CliTest, FailTellsStderrAndReturnsTheCode) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Fail(kExitUnreachable, "no moltd"), kExitUnreachable);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "molt: no moltd\n");
  EXPECT_EQ(Megabytes(1'250'000), "1.2 MB");
  EXPECT_EQ(Megabytes(0), "0.0 MB");
}

TEST(CliTest, RunProgramMergesStdoutAndStderrAndSaysTheExitCode) {
  RunResult r = RunProgram({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output, "out\nerr\n");
  EXPECT_EQ(RunProgram({"/nonexistent/program"}).exit_code, -1);
  EXPECT_EQ(RunProgram({"no-such-program-on-any-path"}).exit_code, -1);
}

TEST(CliTest, TheAdminTokenComesFromTheEnvironmentThenTheFileThenTheDataDirectory) {
  const std::string dir = ::testing::TempDir() + "cli_token_" + std::to_string(::getpid());
  fs::create_directories(dir + "/data");
  std::ofstream(dir + "/file.token") << "from-file\n";
  std::ofstream(dir + "/data/admin.token") << "from-data\n";
  Common c;
  c.token_file = dir + "/file.token";
  c.data_dir = dir + "/data";
  ::setenv("MOLT_TOKEN", "from-env", 1);
  EXPECT_EQ(AdminToken(c).value(), "from-env");
  ::unsetenv("MOLT_TOKEN");
  EXPECT_EQ(AdminToken(c).value(), "from-file");
  c.token_file.clear();
  EXPECT_EQ(AdminToken(c).value(), "from-data");
  c.data_dir = dir + "/nowhere";
  Result<std::string> missing = AdminToken(c);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "the admin token file \"" + dir + "/nowhere/admin.token\" cannot be read");
  fs::remove_all(dir);
}

// ParseLocal over `args` (the verb's name first).
std::optional<int> ParseArgs(cxxopts::Options& o, std::vector<std::string> args,
                             cxxopts::ParseResult* parsed) {
  std::vector<char*> argv;
  for (std::string& a : args) {
    argv.push_back(a.data());
  }
  return ParseLocal(o, static_cast<int>(argv.size()), argv.data(), parsed);
}

TEST(CliTest, ParseLocalAddsJsonAndHelpAndExitsTwoOnABadFlag) {
  cxxopts::Options o("molt thing", "Does a thing.");
  o.add_options()("dir", "where", cxxopts::value<std::string>());
  cxxopts::ParseResult parsed;
  EXPECT_EQ(ParseArgs(o, {"thing", "--dir", "d", "--json"}, &parsed), std::nullopt);
  EXPECT_EQ(parsed["dir"].as<std::string>(), "d");
  EXPECT_EQ(parsed.count("json"), 1u);

  cxxopts::Options help("molt thing", "Does a thing.");
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(ParseArgs(help, {"thing", "--help"}, &parsed), kExitOk);
  EXPECT_NE(::testing::internal::GetCapturedStdout().find("Does a thing."), std::string::npos);

  cxxopts::Options bad("molt thing", "Does a thing.");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(ParseArgs(bad, {"thing", "--frobnicate"}, &parsed), kExitUsage);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.rfind("molt: ", 0), 0u) << err;
  EXPECT_NE(err.find(" (molt thing --help lists the flags)\n"), std::string::npos) << err;
}

}  // namespace
}  // namespace molt::cli
