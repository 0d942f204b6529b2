// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/pin_verbs.h
//
// molt pin and molt unpin (docs/deploys.md, "Pins"): hold this server on a deployed build, and
// let it go. main.cc lists them; each takes the verb's arguments (argv[0] is the verb) and
// returns molt's exit code.
#ifndef MOLT_HOSTS_MOLT_PIN_VERBS_H_
#define MOLT_HOSTS_MOLT_PIN_VERBS_H_

namespace molt::cli {

int PinCommand(int argc, char** argv);
int UnpinCommand(int argc, char** argv);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_PIN_VERBS_H_
