// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/build_command.h
//
// molt build: packs a plugin directory into one build file (docs/deploys.md), without a server:
// the plugins gathered (plugin_set.h), the spec gate passed (spec_gate.h), where the build comes
// from (git_info.h), its manifest (build_manifest.h), then the archive written and reported.
// main.cc lists it; it takes the verb's arguments (argv[0] is the verb) and returns molt's exit
// code.
#ifndef MOLT_HOSTS_MOLT_BUILD_COMMAND_H_
#define MOLT_HOSTS_MOLT_BUILD_COMMAND_H_

namespace molt::cli {

int BuildCommand(int argc, char** argv);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_BUILD_COMMAND_H_
