// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/main.cc
//
// molt: the operators' CLI. The table of verbs, molt --help and the dispatch to a verb. Verbs
// that talk to a moltd go through its admin API (session.h, admin_client.h); build and keys work
// on local files (build_command.h, keys_verbs.h). Each verb family has its unit.
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "hosts/molt/build_command.h"
#include "hosts/molt/cli.h"
#include "hosts/molt/config_verbs.h"
#include "hosts/molt/deploy_verbs.h"
#include "hosts/molt/doctor_verb.h"
#include "hosts/molt/fleet_verbs.h"
#include "hosts/molt/keys_verbs.h"
#include "hosts/molt/pin_verbs.h"
#include "hosts/molt/registry_verbs.h"
#include "hosts/molt/server_verbs.h"

namespace molt::cli {
namespace {

struct Verb {
  const char* name;
  const char* summary;
  int (*run)(int, char**);
};

constexpr Verb kVerbs[] = {
    {"status", "the server: version, uptime, the generation serving, sessions, health",
     StatusCommand},
    {"sessions", "the live sessions", SessionsCommand},
    {"servers", "the servers of the fleet: id, build, sessions, health, state [--branch B]",
     ServersCommand},
    {"kick", "end a session: kick ID [--reason TEXT]", KickCommand},
    {"drain", "move a server's players to the others and close it: drain ID [--deadline S]",
     DrainCommand},
    {"logs", "the newest log lines [--follow]", LogsCommand},
    {"reload", "swap in the plugin directory again and print the report [--wait S]", ReloadCommand},
    {"bundle", "write a debug bundle on the server", BundleCommand},
    {"build", "pack a plugin directory into a build file: build DIR [--out FILE]", BuildCommand},
    {"deploy",
     "deploy a build to a branch: deploy BUILD_FILE|BUILD --branch B [--wait [S]] [--rollout "
     "PCT], deploy --widen PCT",
     DeployCommand},
    {"promote", "deploy a stored build to another branch: promote BRANCH BUILD|#SEQ",
     PromoteCommand},
    {"rollback", "deploy a branch's previous build: rollback --branch B [--to BUILD|#SEQ]",
     RollbackCommand},
    {"pin", "hold this server on a deployed build: pin BUILD|#SEQ", PinCommand},
    {"unpin", "end this server's pin", UnpinCommand},
    {"builds", "the builds the server stored", BuildsCommand},
    {"branches", "the branches, their heads and this server's rules and keys", BranchesCommand},
    {"deployments", "the deploy history [--branch B] [--limit N]", DeploymentsCommand},
    {"report", "one deployment on every server of its branch: report SEQ", ReportCommand},
    {"keys", "signing keys: keys init [--fallback] [--dir DIR], keys rotate, keys resign",
     KeysCommand},
    {"doctor", "check the server, the token, the keys and moltd for deploys", DoctorCommand},
    {"config", "live values: config get [KEY], set KEY JSON, unset KEY, history [KEY]",
     ConfigCommand},
};

int Help() {
  std::cout << "molt: the Molt operators' CLI.\n\n"
               "Usage: molt VERB [options]    (molt VERB --help explains each)\n\n"
               "Verbs:\n";
  std::vector<std::vector<std::string>> rows;
  for (const Verb& v : kVerbs) {
    rows.push_back({std::string("  ") + v.name, v.summary});
  }
  PrintTable(rows);
  std::cout
      << "\n"
         "Every verb takes --json (machine-readable output). The verbs that talk to a server\n"
         "take --server URL (default http://127.0.0.1:7778, moltd's admin endpoint) and the\n"
         "admin token from MOLT_TOKEN, --token-file FILE, or --data DIR (moltd's data\n"
         "directory, whose admin.token it is; ./data/admin.token when none is given).\n\n"
         "Exit codes: 0 done; 1 the operation failed (a swap, a build); 2 bad flags or\n"
         "arguments; 3 no server at --server, or the token was refused.\n"
         "docs/operations.md, docs/deploys.md and docs/live-values.md describe what each verb\n"
         "does.\n";
  return kExitOk;
}

}  // namespace

}  // namespace molt::cli

int main(int argc, char** argv) {
  using namespace molt::cli;
  if (argc < 2 || std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h" ||
      std::string_view(argv[1]) == "help") {
    return argc < 2 ? (Help(), kExitUsage) : Help();
  }
  if (std::string_view(argv[1]) == "--version") {
    std::cout << "molt " << MOLT_VERSION << "\n";
    return kExitOk;
  }
  for (const Verb& v : kVerbs) {
    if (v.name == std::string_view(argv[1])) {
      return v.run(argc - 1, argv + 1);
    }
  }
  return Fail(kExitUsage,
              "unknown verb \"" + std::string(argv[1]) + "\" (molt --help lists the verbs)");
}
