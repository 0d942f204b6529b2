// SPDX-License-Identifier: Apache-2.0
// File: tests/fuzz/client_fuzz.cc
//
// libFuzzer target for libmolt_client's frame parser: what a hostile (or broken) server sends.
// Each input is the byte stream of one connection as the client reads it, fed through
// the connection's Link::Parse in several pieces (frames arrive split anywhere), with no socket:
// writes fail and are dropped, as on a link that just broke. The client either waits for its
// Welcome, or is already welcomed by a valid Welcome built here with three channels and has
// requests in flight:
//   0 fuzz.Event  event         1 fuzz.Add  request (timeout 1 s)   2 fuzz.Say  intent
// tests/fuzz/make_corpus.py writes seeds against them.
//
// Input layout:
//   byte 0      bit 0: welcomed first (else the Welcome, if any, must come from the input);
//               bit 1: three requests in flight (ids 1, 2, 3) once welcomed;
//               bit 2: step the client after each piece (timers: request deadlines, pings)
//   bytes 1..3  three cut points, each at byte / 256 of the stream
//   bytes 4..   the stream
//
// Besides ASan and UBSan, every input checks (a failure aborts, so libFuzzer keeps the input):
// each request's callback runs exactly once by the time the app disconnects, with a known
// status; every payload a callback gets is readable to its end; the state is one of the API's.
#include <molt/client.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "kernel/src/client/connection.h"
#include "molt_wire_generated.h"

namespace molt::kernel::client {

// The friend of Connection and of its Link that feeds it bytes as if they were read from its
// socket.
struct ConnectionFuzzer {
  // A link that waits for its Welcome (what StartAttempt and Link::OnConnected leave).
  static void Link(Connection& c) {
    c.state_ = MOLT_CLIENT_CONNECTING;
    c.attempting_ = true;
    c.link_.linked_ = true;
  }
  static void Feed(Connection& c, std::span<const std::uint8_t> bytes) {
    if (!c.link_.linked_) {
      return;  // the connection ended: nothing more is read
    }
    c.link_.rx_.insert(c.link_.rx_.end(), bytes.begin(), bytes.end());
    c.link_.Parse(c.link_.generation_);
  }
};

}  // namespace molt::kernel::client

namespace {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;
using molt::kernel::client::Connection;
using molt::kernel::client::ConnectionFuzzer;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "client_fuzz invariant broken: %s\n", what);
  std::abort();
}

std::vector<std::uint8_t> WelcomeFrame() {
  fb::FlatBufferBuilder b;
  std::vector<fb::Offset<w::ChannelInfo>> channels = {
      w::CreateChannelInfoDirect(b, 0, "fuzz.Event", w::ChannelKind::Event, "fuzz.Say", 0, 0, 0),
      w::CreateChannelInfoDirect(b, 1, "fuzz.Add", w::ChannelKind::Request, "fuzz.Add", 100, 100,
                                 1000),
      w::CreateChannelInfoDirect(b, 2, "fuzz.Say", w::ChannelKind::Intent, "fuzz.Say", 100, 100,
                                 0)};
  const std::vector<std::uint8_t> token(16, 7);
  auto welcome =
      w::CreateWelcomeDirect(b, 1, 0, 60, &channels, 8192, 8192, 64, 1000, &token, false, 30000, 4);
  b.FinishSizePrefixed(w::CreateEnvelope(b, w::Body::Welcome, welcome.Union()));
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

unsigned Touch(const std::uint8_t* data, std::size_t size) {
  unsigned sum = 0;
  for (std::size_t i = 0; i < size; ++i) {
    sum += data[i];  // ASan: every byte of a payload handed to the app is readable
  }
  return sum;
}

volatile unsigned g_sink = 0;

void OnEvent(void*, std::uint16_t, const void* payload, std::size_t size) {
  g_sink = g_sink + Touch(static_cast<const std::uint8_t*>(payload), size);
}

void OnState(void*, std::int32_t state, const char* reason) {
  if (state < MOLT_CLIENT_IDLE || state > MOLT_CLIENT_RECONNECTING) {
    Fail("a state outside the API's");
  }
  if (reason != nullptr) {
    g_sink = g_sink + Touch(reinterpret_cast<const std::uint8_t*>(reason), std::strlen(reason));
  }
}

void OnReplica(void*, molt_client_replica_t, std::int32_t what, std::int32_t field) {
  if (what < MOLT_CLIENT_REPLICA_SNAPSHOT || what > MOLT_CLIENT_REPLICA_REMOVED || field < -1) {
    Fail("a replica update outside the API's");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) {
    return 0;
  }
  const std::uint8_t flags = data[0];
  const std::span<const std::uint8_t> stream(data + 4, size - 4);
  std::array<std::size_t, 5> cuts = {0, stream.size() * data[1] / 256,
                                     stream.size() * data[2] / 256, stream.size() * data[3] / 256,
                                     stream.size()};
  std::sort(cuts.begin(), cuts.end());

  std::array<int, 3> answered{};
  {
    molt_client_options options{};
    options.struct_size = sizeof(options);
    options.flags = MOLT_CLIENT_NO_RECONNECT;
    Connection c(options);
    c.OnState(OnState, nullptr);
    c.OnEvent(MOLT_CLIENT_ALL_CHANNELS, OnEvent, nullptr);
    c.OnReplica("", OnReplica, nullptr);
    ConnectionFuzzer::Link(c);
    if (flags & 1) {
      ConnectionFuzzer::Feed(c, WelcomeFrame());
      if (c.state() != MOLT_CLIENT_CONNECTED) {
        Fail("a valid Welcome did not connect");
      }
      if (flags & 2) {
        const std::uint8_t payload[8] = {};
        for (int i = 0; i < 3; ++i) {
          const molt::kernel::Status s = c.SendRequest(
              1, payload, 1.0,
              [&answered, i](molt_status_t status, std::span<const std::uint8_t> p) {
                if (status > 0) {
                  Fail("a request answered with a positive status (not a molt status)");
                }
                g_sink = g_sink + Touch(p.data(), p.size());
                ++answered[static_cast<std::size_t>(i)];
              });
          if (!s.ok()) {
            answered[static_cast<std::size_t>(i)] = 1;  // never in flight: nothing to answer
          }
        }
      } else {
        answered = {1, 1, 1};
      }
    } else {
      answered = {1, 1, 1};
    }
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      ConnectionFuzzer::Feed(c, stream.subspan(cuts[i], cuts[i + 1] - cuts[i]));
      if (flags & 4) {
        c.Step(0);
      }
    }
    c.Disconnect();  // what is still in flight is answered now (MOLT_ERR_TIMEOUT)
  }
  for (int n : answered) {
    if (n != 1) {
      Fail("a request's callback ran other than exactly once");
    }
  }
  return 0;
}
