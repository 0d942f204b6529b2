// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/doctor_verb.h
//
// molt doctor: checks what deploys need (the server and its token, its rules and keys, the
// operator's signing key, moltd beside molt). main.cc lists it; it takes the verb's arguments
// (argv[0] is the verb) and returns molt's exit code.
#ifndef MOLT_HOSTS_MOLT_DOCTOR_VERB_H_
#define MOLT_HOSTS_MOLT_DOCTOR_VERB_H_

namespace molt::cli {

int DoctorCommand(int argc, char** argv);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_DOCTOR_VERB_H_
