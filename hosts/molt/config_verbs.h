// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/config_verbs.h
//
// molt config: the live values (docs/live-values.md): get, set, unset and history. main.cc lists
// it; it takes the verb's arguments (argv[0] is the verb) and returns molt's exit code.
#ifndef MOLT_HOSTS_MOLT_CONFIG_VERBS_H_
#define MOLT_HOSTS_MOLT_CONFIG_VERBS_H_

namespace molt::cli {

int ConfigCommand(int argc, char** argv);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_CONFIG_VERBS_H_
