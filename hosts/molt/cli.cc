// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/cli.cc
//
// What every molt verb shares (cli.h): the common options and the admin token, the output
// helpers, the local verbs' flag parsing, and running another program (git, moltd --self-test).
#include "hosts/molt/cli.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

extern char** environ;

namespace molt::cli {

namespace json = boost::json;

void AddCommon(cxxopts::Options& options) {
  options.add_options("common")(
      "server", "the admin endpoint of the moltd to talk to",
      cxxopts::value<std::string>()->default_value("http://127.0.0.1:7778"))(
      "token-file", "a file holding the admin token (else MOLT_TOKEN, or --data)",
      cxxopts::value<std::string>())("data", "moltd's data directory: its admin.token is the token",
                                     cxxopts::value<std::string>())(
      "json", "print JSON instead of text")("h,help", "this help");
}

Common ReadCommon(const cxxopts::ParseResult& parsed) {
  Common c;
  c.json = parsed.count("json") > 0;
  c.server = parsed["server"].as<std::string>();
  if (parsed.count("token-file") > 0) {
    c.token_file = parsed["token-file"].as<std::string>();
  }
  if (parsed.count("data") > 0) {
    c.data_dir = parsed["data"].as<std::string>();
  }
  return c;
}

Result<std::string> AdminToken(const Common& common) {
  if (const char* env = std::getenv("MOLT_TOKEN"); env != nullptr && *env != '\0') {
    return std::string(env);
  }
  std::string file = common.token_file;
  if (file.empty() && !common.data_dir.empty()) {
    file = common.data_dir + "/admin.token";
  }
  if (file.empty() && std::ifstream("data/admin.token")) {
    file = "data/admin.token";
  }
  if (file.empty()) {
    return Status::NotFound(
        "no admin token: set MOLT_TOKEN, or pass --token-file FILE or --data DIR (moltd keeps "
        "it in its data directory's admin.token)");
  }
  std::ifstream in(file);
  std::string token;
  if (!in || !std::getline(in, token) || token.empty()) {
    return Status::NotFound("the admin token file \"" + file + "\" cannot be read");
  }
  return token;
}

void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) {
        line += std::string(width[i] - row[i].size() + 2, ' ');
      }
    }
    std::cout << line << "\n";
  }
}

void PrintJson(const json::value& v) { std::cout << json::serialize(v) << "\n"; }

int Fail(int code, const std::string& text) {
  std::cerr << "molt: " << text << "\n";
  return code;
}

std::string Megabytes(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

std::optional<int> ParseLocal(cxxopts::Options& o, int argc, char** argv,
                              cxxopts::ParseResult* out) {
  o.add_options("common")("json", "print JSON instead of text")("h,help", "this help");
  try {
    *out = o.parse(argc, argv);
  } catch (const std::exception& e) {
    return Fail(kExitUsage,
                std::string(e.what()) + " (" + o.program() + " --help lists the flags)");
  }
  if (out->count("help") > 0) {
    std::cout << o.help() << "\n";
    return kExitOk;
  }
  return std::nullopt;
}

RunResult RunProgram(const std::vector<std::string>& argv) {
  RunResult r;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = argv[0].find('/') != std::string::npos
                     ? posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ)
                     : posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    return r;
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) {
    r.output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace molt::cli
