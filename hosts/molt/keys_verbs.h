// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/keys_verbs.h
//
// molt keys: the operator's Ed25519 signing keys for deploys (docs/deploys.md): init and rotate
// work on local files; resign needs a server (deploy_verbs.h). main.cc lists it; it takes the
// verb's arguments (argv[0] is the verb) and returns molt's exit code.
#ifndef MOLT_HOSTS_MOLT_KEYS_VERBS_H_
#define MOLT_HOSTS_MOLT_KEYS_VERBS_H_

namespace molt::cli {

int KeysCommand(int argc, char** argv);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_KEYS_VERBS_H_
