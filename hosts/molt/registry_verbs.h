// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/registry_verbs.h
//
// The verbs that read the server's deploy registry (docs/deploys.md): its builds, its branches
// with their heads, the deploy history, and one deployment's report across the fleet. main.cc
// lists them; each takes the verb's arguments (argv[0] is the verb) and returns molt's exit code.
#ifndef MOLT_HOSTS_MOLT_REGISTRY_VERBS_H_
#define MOLT_HOSTS_MOLT_REGISTRY_VERBS_H_

namespace molt::cli {

int BuildsCommand(int argc, char** argv);
int BranchesCommand(int argc, char** argv);
int DeploymentsCommand(int argc, char** argv);
int ReportCommand(int argc, char** argv);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_REGISTRY_VERBS_H_
