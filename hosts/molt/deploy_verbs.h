// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/deploy_verbs.h
//
// The verbs that move a branch's head (docs/deploys.md): deploy (and deploy --widen), promote,
// rollback, and keys resign, which signs the prod heads again. main.cc lists them (keys resign
// through keys_verbs.cc); each takes the verb's arguments (argv[0] is the verb) and returns
// molt's exit code.
#ifndef MOLT_HOSTS_MOLT_DEPLOY_VERBS_H_
#define MOLT_HOSTS_MOLT_DEPLOY_VERBS_H_

namespace molt::cli {

int DeployCommand(int argc, char** argv);
int PromoteCommand(int argc, char** argv);
int RollbackCommand(int argc, char** argv);
int KeysResignCommand(int argc, char** argv);  // molt keys resign: it needs a server

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_DEPLOY_VERBS_H_
