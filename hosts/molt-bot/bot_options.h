// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-bot/bot_options.h
//
// molt-bot's flags (molt-bot --help, docs/client.md "molt-bot"): parsed, checked, and turned
// into what a client is created with. Included by main.cc and swarm.h.
#ifndef MOLT_HOSTS_MOLT_BOT_BOT_OPTIONS_H_
#define MOLT_HOSTS_MOLT_BOT_BOT_OPTIONS_H_

#include <molt/client.h>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace molt::bot {

// An empty FlatBuffers table: a valid payload for any root type whose fields are all optional.
inline const std::vector<std::uint8_t> kEmptyTable = {0x08, 0x00, 0x00, 0x00, 0x04, 0x00,
                                                      0x04, 0x00, 0x04, 0x00, 0x00, 0x00};

// The walk plugin's limit on walk.Move: steps a second per session (plugins/walk/README.md). A
// faster --udp would be refused by the server's rate limit, not by the network.
inline constexpr double kWalkMaxRate = 60;

struct BotOptions {
  std::string host = "127.0.0.1";
  int port = 7777;
  int clients = 10;
  double duration = 10;               // seconds to run after the clients joined
  double rate = 10;                   // messages per client per second
  double join_rate = 20;              // clients connecting per second
  std::vector<std::string> intents;   // channels to send on, in turn with `requests`
  std::vector<std::string> requests;  // channels to call
  std::vector<std::uint8_t> payload = kEmptyTable;
  std::string user_prefix = "bot";
  std::optional<std::string> controllers;  // for the first client to run
  bool tls = false;
  std::string tls_ca;    // with tls: "" for the system's CAs
  std::string tls_name;  // with tls: "" for the host
  bool ws = false;
  bool verify = false;  // numbered echoes on counter.Echo instead of intents and requests
  bool udp = false;     // walk on walk.Move by predicted intents instead, and hear walk.Pos

  // Whether each round sends anything (a channel to send on, --verify or --udp).
  bool sends() const { return verify || udp || !intents.empty() || !requests.empty(); }

  // The options every client is created with. Valid while this object lives (it points into
  // tls_ca and tls_name).
  molt_client_options ClientOptions() const;

  // "ws://" or "wss://" with --ws, else "".
  std::string Scheme() const;
};

// Parses molt-bot's command line. Returns the options, or the exit code when molt-bot is done:
// 0 after --help (printed to stdout), 2 after a bad flag (told on stderr, as molt-bot always
// told it).
std::variant<int, BotOptions> ParseBotOptions(int argc, char** argv);

}  // namespace molt::bot

#endif  // MOLT_HOSTS_MOLT_BOT_BOT_OPTIONS_H_
