// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/spec_gate.cc
//
// moltd --self-test run as a child process, and its report read for the protocol hash.
#include "hosts/molt/spec_gate.h"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>

#include "hosts/molt/cli.h"

namespace molt::cli {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::string MoltdPath(const std::optional<std::string>& flag) {
  if (flag.has_value()) {
    return *flag;
  }
  if (const char* env = std::getenv("MOLTD"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code ec;
  const fs::path beside = fs::read_symlink("/proc/self/exe", ec).parent_path() / "moltd";
  return !ec && fs::exists(beside, ec) ? beside.string() : "moltd";
}

kernel::Result<std::string> RunSpecGate(const std::string& moltd, const std::string& dir) {
  char check_tmpl[] = "/tmp/molt-check-XXXXXX";
  const char* data = ::mkdtemp(check_tmpl);
  RunResult check =
      RunProgram({moltd, "--self-test", "-p", dir, "-d", data != nullptr ? data : "/tmp"});
  if (data != nullptr) {
    std::error_code ec;
    fs::remove_all(data, ec);
  }
  if (check.exit_code == -1) {
    return kernel::Status::NotFound("cannot run \"" + moltd +
                                    "\" for the check: pass --moltd PATH (or set MOLTD)");
  }
  if (check.exit_code == 2) {  // a usage error: a moltd from before --self-test
    return kernel::Status::Unsupported("\"" + moltd +
                                       "\" does not know --self-test: it is older than this molt "
                                       "(use the moltd of the same release, --moltd)");
  }
  if (check.exit_code != 0) {
    return kernel::Status::Rejected(
        "the plugin set does not pass moltd --self-test (its own tests, the security "
        "audit, the fuzz gate), so it is not built:\n" +
        check.output);
  }
  const std::size_t at = check.output.find("  protocol: ");
  if (at == std::string::npos) {
    return kernel::Status::Unsupported("\"" + moltd +
                                       "\" printed no protocol hash: it is older than "
                                       "this molt (use the moltd of the same release, --moltd)");
  }
  return check.output.substr(at + 12, 16);
}

}  // namespace molt::cli
