// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/fleet_verbs.h
//
// The verbs on a server's fleet (docs/fleet.md): the servers as their heartbeats report them, and
// draining one. main.cc lists them; each takes the verb's arguments (argv[0] is the verb) and
// returns molt's exit code.
#ifndef MOLT_HOSTS_MOLT_FLEET_VERBS_H_
#define MOLT_HOSTS_MOLT_FLEET_VERBS_H_

namespace molt::cli {

int ServersCommand(int argc, char** argv);
int DrainCommand(int argc, char** argv);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_FLEET_VERBS_H_
