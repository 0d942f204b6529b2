// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/main.cc
//
// molt-relay: a lossy UDP relay for tests and benchmarks, netem in user space. Clients send to
// --listen; each client address gets its own upstream socket towards --to (as behind a NAT); each
// datagram, each way, is lost, delayed, held back or duplicated by a seeded model. The first line
// on stdout says where it listens; SIGINT, SIGTERM or the end of --duration prints the counts as
// one line of JSON and exits 0. Bad flags exit 2, a socket that cannot be opened 1.
//
// The parts: the flags (relay_options.h), the model (impairment.h), the datagrams held
// (delay_queue.h), the sockets (udp_socket.h, socket_address.h), the loop and the table of
// clients (relay.h) and the counts (relay_stats.h).
#include <signal.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <string>
#include <variant>

#include "hosts/molt-relay/relay.h"
#include "hosts/molt-relay/relay_options.h"
#include "hosts/molt-relay/relay_stats.h"

namespace {

std::atomic<const molt::relay::Relay*> g_relay{nullptr};  // what SIGINT / SIGTERM stop

void OnSignal(int) {
  if (const molt::relay::Relay* relay = g_relay.load()) {
    relay->Stop();
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace molt::relay;
  std::variant<int, RelayOptions> parsed = ParseRelayOptions(argc, argv);
  if (const int* code = std::get_if<int>(&parsed)) {
    return *code;
  }
  std::variant<std::unique_ptr<Relay>, std::string> opened =
      Relay::Open(std::get<RelayOptions>(parsed));
  if (const std::string* error = std::get_if<std::string>(&opened)) {
    std::cerr << "molt-relay: " << *error << "\n";
    return 1;
  }
  const std::unique_ptr<Relay>& relay = std::get<std::unique_ptr<Relay>>(opened);
  g_relay = relay.get();
  struct sigaction action {};
  action.sa_handler = OnSignal;
  ::sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  std::cout << "molt-relay: listening on " << relay->listen_address().ToString() << std::endl;
  const RelayStats stats = relay->Run();
  g_relay = nullptr;
  std::cout << stats.ToJson() << std::endl;
  return 0;
}
