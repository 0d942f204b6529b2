// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-bot/bot_options.cc
//
// molt-bot's flags: the cxxopts table and help, each check with its message, the payload file
// read.
#include "hosts/molt-bot/bot_options.h"

#include <cxxopts.hpp>
#include <fstream>
#include <iostream>
#include <iterator>

namespace molt::bot {
namespace {

// molt-bot's flags and help.
cxxopts::Options Flags() {
  cxxopts::Options options(
      "molt-bot",
      "molt-bot: simulated clients for a Molt server (load and soak tests).\n\n"
      "Each client joins as <user-prefix><n>, then sends --rate messages per second, taking\n"
      "the named intent and request channels in turn. Payloads are an empty FlatBuffers table\n"
      "unless --payload names a file. A progress line is printed every second, then a summary;\n"
      "the exit code is 0 when every client stayed connected (and, with --verify, every echo\n"
      "came back once and in order), 1 otherwise, 2 on bad flags. SIGINT ends the run early.\n"
      "--controllers runs client-side plugins (controllers) in the first client. --udp walks\n"
      "the walk plugin's square by predicted intents instead, by the datagram link when the\n"
      "server offers one (moltd --udp), and reports the predictions, their ack round trip and\n"
      "the positions heard; its exit code is then 1 too when a prediction was rolled back or\n"
      "left unanswered, or no position came.\n");
  options.set_width(100);
  // clang-format off
  options.add_options()
      ("host", "server address", cxxopts::value<std::string>()->default_value("127.0.0.1"))
      ("p,port", "server port (with --ws: its WebSocket port, moltd --ws)",
       cxxopts::value<int>()->default_value("7777"))
      ("c,clients", "simulated clients", cxxopts::value<int>()->default_value("10"))
      ("d,duration", "seconds to run after the clients joined",
       cxxopts::value<double>()->default_value("10"))
      ("r,rate", "messages per client per second", cxxopts::value<double>()->default_value("10"))
      ("intent", "an intent channel to send on (repeatable)",
       cxxopts::value<std::vector<std::string>>())
      ("request", "a request channel to call (repeatable)",
       cxxopts::value<std::vector<std::string>>())
      ("payload", "file holding the payload bytes (default: an empty table)",
       cxxopts::value<std::string>())
      ("join-rate", "clients connecting per second (the server limits handshakes per address: "
                    "net.handshakes_per_address, 20/s by default)",
       cxxopts::value<double>()->default_value("20"))
      ("user-prefix", "user ids are this plus the client's number",
       cxxopts::value<std::string>()->default_value("bot"))
      ("controllers", "controllers (a .so or a directory of them) for the first client to run, "
       "e.g. build/default/controllers", cxxopts::value<std::string>())
      ("tls", "connect over TLS, verifying the server's certificate (against the system's CAs, "
              "or --tls-ca)")
      ("tls-ca", "with --tls: the CA certificates to trust (PEM)", cxxopts::value<std::string>(),
       "FILE")
      ("tls-name", "with --tls: the name the certificate must carry (default: --host)",
       cxxopts::value<std::string>(), "NAME")
      ("ws", "connect over WebSocket (ws://HOST:PORT/; wss:// with --tls), as a browser's "
             "client does: the same frames, one per binary message")
      ("verify", "send numbered messages on the counter plugin's echo channel (counter.Echo, "
                 "echoed on counter.Echoed) at --rate instead, and check every echo comes back "
                 "once and in order")
      ("udp", "walk instead: each client sends the walk plugin's predicted intent walk.Move "
              "(a step of 1, back and forth, at --rate, at most 60) and hears its unreliable "
              "walk.Pos; both go by the datagram link when the server offers one (moltd --udp), "
              "else by the reliable link. Reports predictions sent / accepted / rolled back "
              "(rejected, timed out), the ack round trip (predict to resolution), the positions "
              "heard, and the clients whose datagram link was open (as the client sees it: "
              "offered by the Welcome and opened; the server's view is GET /api/v1/sessions)")
      ("h,help", "print this help and exit");
  // clang-format on
  return options;
}

// Copies the parsed flags into `o`; false (told on stderr) when one is out of its range or
// --payload cannot be read. The checks run in the order molt-bot always ran them.
bool ReadFlags(const cxxopts::ParseResult& args, BotOptions& o) {
  o.clients = args["clients"].as<int>();
  o.rate = args["rate"].as<double>();
  o.duration = args["duration"].as<double>();
  o.port = args["port"].as<int>();
  if (o.clients < 1 || o.clients > 100000 || !(o.rate >= 0) || !(o.duration > 0) || o.port < 1 ||
      o.port > 65535) {
    std::cerr << "molt-bot: --clients must be 1..100000, --rate >= 0, --duration > 0, --port "
                 "1..65535\n";
    return false;
  }
  if (args.count("intent")) {
    o.intents = args["intent"].as<std::vector<std::string>>();
  }
  if (args.count("request")) {
    o.requests = args["request"].as<std::vector<std::string>>();
  }
  if (args.count("payload") != 0) {
    std::ifstream in(args["payload"].as<std::string>(), std::ios::binary);
    if (!in) {
      std::cerr << "molt-bot: cannot read --payload " << args["payload"].as<std::string>() << "\n";
      return false;
    }
    o.payload.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  o.verify = args.count("verify") != 0;
  if (o.verify && (!o.intents.empty() || !o.requests.empty())) {
    std::cerr << "molt-bot: --verify sends on counter.Echo only: drop --intent and --request\n";
    return false;
  }
  o.udp = args.count("udp") != 0;
  if (o.udp && (o.verify || !o.intents.empty() || !o.requests.empty())) {
    std::cerr << "molt-bot: --udp sends on walk.Move only: drop --verify, --intent and --request\n";
    return false;
  }
  if (o.udp && o.rate > kWalkMaxRate) {
    std::cerr << "molt-bot: --udp: the walk plugin takes at most 60 steps a second per client "
                 "(walk.Move's rate limit): --rate must be 60 or less\n";
    return false;
  }
  o.join_rate = args["join-rate"].as<double>();
  if (!(o.join_rate > 0)) {
    std::cerr << "molt-bot: --join-rate must be above 0\n";
    return false;
  }
  o.tls = args.count("tls") != 0;
  o.tls_ca = args.count("tls-ca") ? args["tls-ca"].as<std::string>() : "";
  o.tls_name = args.count("tls-name") ? args["tls-name"].as<std::string>() : "";
  if (!o.tls && (!o.tls_ca.empty() || !o.tls_name.empty())) {
    std::cerr << "molt-bot: --tls-ca and --tls-name go with --tls\n";
    return false;
  }
  o.ws = args.count("ws") != 0;
  if (o.udp && o.ws) {
    std::cerr << "molt-bot: --udp needs a datagram link, and a WebSocket client is offered none "
                 "(it keeps everything on its reliable link): drop --ws\n";
    return false;
  }
  o.host = args["host"].as<std::string>();
  o.user_prefix = args["user-prefix"].as<std::string>();
  if (args.count("controllers") != 0) {
    o.controllers = args["controllers"].as<std::string>();
  }
  return true;
}

}  // namespace

molt_client_options BotOptions::ClientOptions() const {
  molt_client_options client_options{};
  client_options.struct_size = sizeof(client_options);
  if (tls) {
    client_options.flags |= MOLT_CLIENT_TLS;
    client_options.tls_ca_file = tls_ca.empty() ? nullptr : tls_ca.c_str();
    client_options.tls_server_name = tls_name.empty() ? nullptr : tls_name.c_str();
  }
  if (ws) {
    client_options.flags |= MOLT_CLIENT_WEBSOCKET;
  }
  return client_options;
}

std::string BotOptions::Scheme() const { return !ws ? "" : tls ? "wss://" : "ws://"; }

std::variant<int, BotOptions> ParseBotOptions(int argc, char** argv) {
  cxxopts::Options options = Flags();
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << "molt-bot: " << e.what() << "\nTry 'molt-bot --help'.\n";
    return 2;
  }
  if (args.count("help") != 0) {
    std::cout
        << options.help() << "\nExample:\n"
        << "  molt-bot --port 7777 --clients 50 --rate 20 --request scores.Get\n"
        << "  molt-bot --clients 1 --rate 0 --duration 2 --controllers build/default/controllers\n"
        << "  molt-bot --clients 50 --rate 20 --duration 60 --verify   (then kill -HUP moltd)\n"
        << "  molt-bot --host game.example.com --tls --tls-ca ca.pem\n"
        << "  molt-bot --ws --port 7780 --clients 100 --verify   (moltd --ws 127.0.0.1:7780)\n"
        << "  molt-bot --clients 50 --rate 30 --duration 30 --udp   (moltd --udp 127.0.0.1:7779)\n";
    return 0;
  }
  BotOptions o;
  if (!ReadFlags(args, o)) {
    return 2;
  }
  return o;
}

}  // namespace molt::bot
