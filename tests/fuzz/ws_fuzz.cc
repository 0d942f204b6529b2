// SPDX-License-Identifier: Apache-2.0
// File: tests/fuzz/ws_fuzz.cc
//
// libFuzzer target for the WebSocket layer in front of the network's pipeline
// (kernel/src/wire/websocket.h): the upgrade request and RFC 6455 framing of one connection, fed
// through WebSocketFilter::Receive in several pieces (so a head or a frame header arrives split
// anywhere), after a valid upgrade for half of the inputs.
//
// With bit 3 of byte 0 the filter is a client's (libmolt_client's WebSocket transport) and the
// stream is what a server sends it, after the server filter's valid 101 answer for half of the
// inputs.
//
// Input layout:
//   byte 0      bit 0: send a valid upgrade (or, as a client, a valid answer) first; bit 1: an
//               Origin list that refuses it; bit 2: the filter sends a wire frame after each
//               piece; bit 3: the client's role
//   bytes 1..3  three cut points, each at byte / 256 of the stream
//   bytes 4..   the stream
//
// Besides ASan and UBSan, every input checks (a failure aborts, so libFuzzer keeps the input):
// the frames handed on are never more bytes than arrived; a refused or broken connection hands
// on nothing more and stays refused; what the server writes before the upgrade is answered is
// nothing, and the answer is HTTP; every message the server writes once open is an unmasked
// frame with FIN set whose length is right. A client writes nothing after its request until the
// answer, and once open only masked frames with FIN set whose length is right.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>
#include <vector>

#include "kernel/src/wire/websocket.h"

namespace {

using molt::kernel::wire::WebSocketFilter;
using molt::kernel::wire::WebSocketOptions;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "ws_fuzz: invariant broken: %s\n", what);
  std::abort();
}

constexpr std::string_view kUpgrade =
    "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: http://o\r\n"
    "Sec-WebSocket-Version: 13\r\n\r\n";

// Walks what a filter wrote once open: whole frames, FIN, masked by a client only, lengths that
// add up.
void CheckFrames(std::span<const std::uint8_t> out, bool client) {
  std::size_t at = 0;
  while (at < out.size()) {
    if (out.size() - at < 2) {
      Fail("a truncated frame header from the server");
    }
    if ((out[at] & 0x80) == 0 || (out[at] & 0x70) != 0) {
      Fail("a frame without FIN or with reserved bits");
    }
    if (((out[at + 1] & 0x80) != 0) != client) {
      Fail(client ? "an unmasked client frame" : "a masked server frame");
    }
    std::uint64_t len = out[at + 1] & 0x7F;
    std::size_t head = 2;
    if (len == 126 || len == 127) {
      const std::size_t ext = len == 126 ? 2 : 8;
      if (out.size() - at < 2 + ext) {
        Fail("a truncated length from the server");
      }
      len = 0;
      for (std::size_t i = 0; i < ext; ++i) {
        len = len << 8 | out[at + 2 + i];
      }
      head += ext;
    }
    head += client ? 4 : 0;  // the mask
    if (out.size() - at < head || out.size() - at - head < len) {
      Fail("a frame shorter than its length");
    }
    at += head + static_cast<std::size_t>(len);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) {
    return 0;
  }
  const std::uint8_t flags = data[0];
  const bool client = (flags & 8) != 0;
  WebSocketOptions options;
  if ((flags & 2) != 0) {
    options.origins = {"https://game.example"};
  }
  if (client) {
    options.role = WebSocketOptions::kClient;
    options.host = "h:1";
  }
  WebSocketFilter ws(options);
  std::vector<std::uint8_t> stream;
  if (client) {
    std::vector<std::uint8_t> request;
    ws.TakeOutput(&request);
    if ((flags & 1) != 0) {  // the server's own answer to it
      WebSocketFilter server({});
      std::vector<std::uint8_t> none;
      (void)server.Receive(request, &none);
      server.TakeOutput(&stream);
    }
  } else if ((flags & 1) != 0) {
    stream.assign(kUpgrade.begin(), kUpgrade.end());
  }
  stream.insert(stream.end(), data + 4, data + size);
  std::size_t cuts[5] = {0, stream.size() * data[1] / 256, stream.size() * data[2] / 256,
                         stream.size() * data[3] / 256, stream.size()};
  std::sort(cuts, cuts + 5);
  const std::uint8_t wire[8] = {4, 0, 0, 0, 1, 2, 3, 4};
  bool failed = false;
  bool was_open = false;
  for (int i = 0; i < 4; ++i) {
    const std::span<const std::uint8_t> piece(stream.data() + cuts[i], cuts[i + 1] - cuts[i]);
    std::vector<std::uint8_t> frames;
    const molt::kernel::Status s = ws.Receive(piece, &frames);
    if (failed && (s.ok() || !frames.empty())) {
      Fail("a failed connection handed on more, or recovered");
    }
    if (frames.size() > piece.size()) {
      Fail("more frame bytes handed on than arrived");
    }
    if (!s.ok()) {
      failed = true;
      if (!ws.answered() && !client) {
        Fail("an error before the upgrade was answered");
      }
    }
    if ((flags & 4) != 0) {
      ws.Send(wire);
    }
    std::vector<std::uint8_t> out;
    ws.TakeOutput(&out);
    if (!ws.answered() && !out.empty()) {
      Fail("output before the upgrade was answered");
    }
    std::span<const std::uint8_t> frames_out(out);
    if (!client && !was_open && ws.answered() && !out.empty()) {
      const std::string_view text(reinterpret_cast<const char*>(out.data()), out.size());
      if (text.rfind("HTTP/1.1 ", 0) != 0) {
        Fail("the upgrade's answer is not HTTP");
      }
      const std::size_t end = text.find("\r\n\r\n");
      if (end == std::string_view::npos) {
        Fail("the upgrade's answer has no end");
      }
      frames_out = ws.open() ? frames_out.subspan(end + 4) : std::span<const std::uint8_t>();
    }
    if (ws.open()) {
      was_open = true;
      CheckFrames(frames_out, client);
    }
  }
  return 0;
}
