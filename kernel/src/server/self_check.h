// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/server/self_check.h
//
// SelfCheck: moltd --self-test (--check), the spec gate over plugins that are loaded and started:
// their own tests, the security audit and the fuzz gate over what they declared, as a report on
// stdout. It fails on a failed self-test, a High finding or a validator that throws. Called by
// Server (server.h) in its check mode.
//
//   return SelfCheck("--self-test", dir, parts.plugins(), parts.network(), parts.kernel());
//
// Thread safety: the kernel thread.
#ifndef MOLT_KERNEL_SERVER_SELF_CHECK_H_
#define MOLT_KERNEL_SERVER_SELF_CHECK_H_

#include <string>

namespace molt::kernel {

class Kernel;
namespace loader {
class PluginHost;
}  // namespace loader
namespace net {
class Network;
}  // namespace net

// Runs the gate over the plugins `plugins` runs (loaded from `plugin_dir`, named with `flag` in
// the report) and prints the report; kExitOk when it passed, else kExitCheckFailed.
int SelfCheck(const std::string& flag, const std::string& plugin_dir, loader::PluginHost& plugins,
              net::Network& network, Kernel& kernel);

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_SELF_CHECK_H_
