// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/cli.h
//
// What the molt CLI's verbs share: the options every verb takes, the exit codes, output helpers
// (aligned tables, JSON, sizes), the local verbs' flag parsing, and running another program (git,
// moltd --self-test). Every verb's unit includes it; each verb family declares its verbs in a
// header of its own (server_verbs.h, deploy_verbs.h, ...), which main.cc lists.
#ifndef MOLT_HOSTS_MOLT_CLI_H_
#define MOLT_HOSTS_MOLT_CLI_H_

#include <molt/kernel/status.h>

#include <boost/json/value.hpp>
#include <cstdint>
#include <cxxopts.hpp>
#include <optional>
#include <string>
#include <vector>

namespace molt::cli {

using kernel::Result;
using kernel::Status;

// Exit codes (molt --help lists them).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;       // the operation ran and failed (a swap, a build)
inline constexpr int kExitUsage = 2;        // bad flags or arguments
inline constexpr int kExitUnreachable = 3;  // no moltd at --server, or the token was refused

// The options every verb takes, after parsing.
struct Common {
  bool json = false;
  std::string server = "http://127.0.0.1:7778";
  std::string token_file;
  std::string data_dir;
};

// Adds the common options to a verb's parser.
void AddCommon(cxxopts::Options& options);
Common ReadCommon(const cxxopts::ParseResult& parsed);

// The admin token: MOLT_TOKEN, else --token-file, else --data DIR's admin.token, else
// ./data/admin.token (what scripts/run.sh uses); a refusal naming all four when there is none.
Result<std::string> AdminToken(const Common& common);

// Prints `rows` (the first is the header) with each column padded to its widest cell.
void PrintTable(const std::vector<std::vector<std::string>>& rows);
void PrintJson(const boost::json::value& v);
// Prints "molt: <text>" to stderr and returns `code`.
int Fail(int code, const std::string& text);
// "12.3 MB".
std::string Megabytes(std::uint64_t bytes);

// Parses the flags of a verb that works without a server (build, keys), adding --json and
// --help to `o`; an exit code when the verb is done (its help printed, a bad flag told).
std::optional<int> ParseLocal(cxxopts::Options& o, int argc, char** argv,
                              cxxopts::ParseResult* out);

// Runs `argv` (argv[0] found on PATH unless it has a '/'); its stdout (and stderr, merged) and
// its exit code (-1: it could not run).
struct RunResult {
  int exit_code = -1;
  std::string output;
};
RunResult RunProgram(const std::vector<std::string>& argv);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_CLI_H_
