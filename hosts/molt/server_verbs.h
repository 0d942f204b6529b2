// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/server_verbs.h
//
// The verbs on one moltd, over its admin API (docs/operations.md): its status, its sessions (and
// kicking one), its log, a reload of its plugin directory and a debug bundle. main.cc lists them;
// each takes the verb's arguments (argv[0] is the verb) and returns molt's exit code.
#ifndef MOLT_HOSTS_MOLT_SERVER_VERBS_H_
#define MOLT_HOSTS_MOLT_SERVER_VERBS_H_

namespace molt::cli {

int StatusCommand(int argc, char** argv);
int SessionsCommand(int argc, char** argv);
int KickCommand(int argc, char** argv);
int LogsCommand(int argc, char** argv);
int ReloadCommand(int argc, char** argv);
int BundleCommand(int argc, char** argv);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_SERVER_VERBS_H_
