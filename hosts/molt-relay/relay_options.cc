// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/relay_options.cc
//
// molt-relay's flags: the cxxopts table and help, and each value checked. Every value is read
// as text and converted here, so that a mistake names its flag (cxxopts's own conversion error
// names only the text).
#include "hosts/molt-relay/relay_options.h"

#include <charconv>
#include <cmath>
#include <cxxopts.hpp>
#include <iostream>
#include <optional>
#include <string>

namespace molt::relay {
namespace {

constexpr std::int64_t kMaxDelayMs = 600'000;  // ten minutes: more is a typo
constexpr double kMaxDurationSeconds = 1e7;

cxxopts::Options Flags() {
  cxxopts::Options options(
      "molt-relay",
      "molt-relay: a lossy UDP relay for tests and benchmarks (user-space netem).\n\n"
      "Datagrams sent to --listen go to --to; each client address gets its own upstream socket,\n"
      "as behind a NAT, and the server's replies come back to it from --listen. Each datagram,\n"
      "each way, is lost, delayed, held back or duplicated by a model seeded with --seed: the\n"
      "same seed and the same datagrams in the same order give the same decisions. The first\n"
      "line on stdout is \"molt-relay: listening on HOST:PORT\"; at SIGINT, SIGTERM or the end of\n"
      "--duration, one line of JSON (the counts each way) and exit 0. Bad flags exit 2.\n");
  options.set_width(100);
  // clang-format off
  options.add_options()
      ("listen", "where clients send: HOST:PORT, IPv6 as [::1]:PORT; port 0 picks a free port",
       cxxopts::value<std::string>()->default_value("127.0.0.1:0"), "HOST:PORT")
      ("to", "the server datagrams are relayed to: HOST:PORT (required)",
       cxxopts::value<std::string>(), "HOST:PORT")
      ("drop", "probability (0..1) that a datagram is lost",
       cxxopts::value<std::string>()->default_value("0"), "P")
      ("delay-ms", "milliseconds each datagram waits before it is sent on",
       cxxopts::value<std::string>()->default_value("0"), "D")
      ("jitter-ms", "milliseconds of jitter: each wait is uniform in D-J..D+J, never below 0",
       cxxopts::value<std::string>()->default_value("0"), "J")
      ("reorder", "probability (0..1) that a datagram is held back an extra D+J milliseconds "
                  "(at least 1), so later ones overtake it",
       cxxopts::value<std::string>()->default_value("0"), "P")
      ("duplicate", "probability (0..1) that a datagram is sent twice (each copy delayed on "
                    "its own)",
       cxxopts::value<std::string>()->default_value("0"), "P")
      ("seed", "seed of the model (std::mt19937_64; the server-to-client direction uses one "
               "derived from it)",
       cxxopts::value<std::string>()->default_value("1"), "N")
      ("rebind-after", "after every N datagrams from a client, replace its upstream socket by a "
                       "new one (a new source port: a NAT rebinding); 0 never",
       cxxopts::value<std::string>()->default_value("0"), "N")
      ("duration", "seconds to run, then print the counts and exit; 0 runs until SIGINT or "
                   "SIGTERM",
       cxxopts::value<std::string>()->default_value("0"), "SECONDS")
      ("h,help", "print this help and exit");
  // clang-format on
  return options;
}

// Tells on stderr that `flag`'s value `text` is not `expected`; false, for the caller to return.
bool Bad(const std::string& flag, const std::string& text, const std::string& expected) {
  std::cerr << "molt-relay: --" << flag << ": \"" << text << "\" is not " << expected
            << "\nTry 'molt-relay --help'.\n";
  return false;
}

// The whole of `text` as a number of type T, or nothing.
template <typename T>
std::optional<T> Number(const std::string& text) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || at != end) {
    return std::nullopt;
  }
  return value;
}

bool ReadProbability(const cxxopts::ParseResult& args, const std::string& flag, double& out) {
  const std::string text = args[flag].as<std::string>();
  const std::optional<double> p = Number<double>(text);
  if (!p || !(*p >= 0 && *p <= 1)) {
    return Bad(flag, text, "a probability from 0 to 1");
  }
  out = *p;
  return true;
}

bool ReadMilliseconds(const cxxopts::ParseResult& args, const std::string& flag,
                      std::chrono::milliseconds& out) {
  const std::string text = args[flag].as<std::string>();
  const std::optional<std::int64_t> ms = Number<std::int64_t>(text);
  if (!ms || *ms < 0 || *ms > kMaxDelayMs) {
    return Bad(flag, text, "whole milliseconds from 0 to " + std::to_string(kMaxDelayMs));
  }
  out = std::chrono::milliseconds(*ms);
  return true;
}

bool ReadAddress(const cxxopts::ParseResult& args, const std::string& flag, HostPort& out) {
  const std::string text = args[flag].as<std::string>();
  const std::optional<HostPort> where = ParseHostPort(text);
  if (!where) {
    return Bad(flag, text, "HOST:PORT (a port 0..65535; IPv6 in brackets: [::1]:7777)");
  }
  out = *where;
  return true;
}

// Copies the checked flags into `o`; false (told on stderr) at the first mistake.
bool ReadFlags(const cxxopts::ParseResult& args, RelayOptions& o) {
  if (!args.unmatched().empty()) {
    std::cerr << "molt-relay: unexpected argument \"" << args.unmatched().front()
              << "\" (every value follows its flag)\nTry 'molt-relay --help'.\n";
    return false;
  }
  if (args.count("to") == 0) {
    std::cerr << "molt-relay: --to is required: the server's HOST:PORT\n"
                 "Try 'molt-relay --help'.\n";
    return false;
  }
  if (!ReadAddress(args, "listen", o.listen) || !ReadAddress(args, "to", o.to)) {
    return false;
  }
  if (o.to.port == 0) {
    return Bad("to", args["to"].as<std::string>(), "a server's address: its port is 0");
  }
  ImpairmentSettings& m = o.impairment;
  if (!ReadProbability(args, "drop", m.drop) || !ReadProbability(args, "reorder", m.reorder) ||
      !ReadProbability(args, "duplicate", m.duplicate) ||
      !ReadMilliseconds(args, "delay-ms", m.delay) ||
      !ReadMilliseconds(args, "jitter-ms", m.jitter)) {
    return false;
  }
  const std::string seed = args["seed"].as<std::string>();
  const std::optional<std::uint64_t> seed_value = Number<std::uint64_t>(seed);
  if (!seed_value) {
    return Bad("seed", seed, "a whole number from 0 to 2^64-1");
  }
  o.seed = *seed_value;
  const std::string rebind = args["rebind-after"].as<std::string>();
  const std::optional<std::uint64_t> rebind_value = Number<std::uint64_t>(rebind);
  if (!rebind_value) {
    return Bad("rebind-after", rebind, "a count of datagrams (0: never)");
  }
  o.rebind_after = *rebind_value;
  const std::string duration = args["duration"].as<std::string>();
  const std::optional<double> seconds = Number<double>(duration);
  if (!seconds || !(*seconds >= 0 && *seconds <= kMaxDurationSeconds)) {
    return Bad("duration", duration, "seconds, 0 or more (0: until SIGINT or SIGTERM)");
  }
  o.duration = std::chrono::milliseconds(std::llround(*seconds * 1000));
  if (*seconds > 0 && o.duration.count() == 0) {
    o.duration = std::chrono::milliseconds(1);
  }
  return true;
}

}  // namespace

std::variant<int, RelayOptions> ParseRelayOptions(int argc, char** argv) {
  cxxopts::Options options = Flags();
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << "molt-relay: " << e.what() << "\nTry 'molt-relay --help'.\n";
    return 2;
  }
  if (args.count("help") != 0) {
    std::cout << options.help() << "\nExamples:\n"
              << "  molt-relay --listen 127.0.0.1:7000 --to 127.0.0.1:7777 --drop 0.05 "
                 "--delay-ms 40 --jitter-ms 10\n"
              << "  molt-relay --listen [::1]:0 --to [::1]:7777 --duplicate 0.01 --reorder 0.02 "
                 "--seed 42 --duration 60\n"
              << "  molt-relay --to 127.0.0.1:7777 --rebind-after 100   (a NAT rebinding every "
                 "100 datagrams)\n";
    return 0;
  }
  RelayOptions o;
  if (!ReadFlags(args, o)) {
    return 2;
  }
  return o;
}

}  // namespace molt::relay
