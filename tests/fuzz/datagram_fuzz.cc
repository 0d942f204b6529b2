// SPDX-License-Identifier: Apache-2.0
// File: tests/fuzz/datagram_fuzz.cc
//
// libFuzzer target for the datagram link's parser (kernel/src/wire/datagram_seal.h): what
// arrives at the server's UDP port once ENet hands it on. A run of datagrams goes, in order,
// through one server-end DatagramSeal with a fixed key and session (so its replay window carries
// from one to the next): the header parse (SessionOf), then Open.
//
// Input layout, repeated to the end: [length: u16 LE][that many bytes] (a last record shorter
// than its length takes what is left). The seeds (tests/fuzz/make_corpus.py) are datagrams
// sealed under the key and session below, in both directions, with counters in and out of order.
//
// Besides ASan and UBSan, every datagram checks (a failure aborts, so libFuzzer keeps the input):
// SessionOf names a session only for a datagram with room for a header and a tag and the magic
// byte; Open fails with InvalidArgument (not sealed, another session), AlreadyExists (a replay)
// or Rejected (does not authenticate), never anything else, and then leaves the window as it was;
// a datagram that opens is the session's, its frame is the datagram less the overhead, its
// counter was fresh and is now taken (opening it again is a replay), and the other direction's
// seal (the client's) never opens it: a datagram reflected back does not open. A new seal is the
// oracle: a datagram opens in the long-lived seal exactly when it authenticates in a new one and
// its counter is fresh, with the same frame (nothing a refused datagram did breaks the seal).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "kernel/src/wire/datagram_seal.h"

namespace {

using molt::kernel::Status;
using molt::wire::DatagramSeal;
using molt::wire::ReplayWindow;

constexpr std::uint64_t kSession = 0x1122334455667788ull;  // make_corpus.py: DATAGRAM_SESSION

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "datagram_fuzz: invariant broken: %s\n", what);
  std::abort();
}

// make_corpus.py: DATAGRAM_KEY, the bytes 0..31.
std::vector<std::uint8_t> Key() {
  std::vector<std::uint8_t> key(DatagramSeal::kKeyBytes);
  for (std::size_t i = 0; i < key.size(); ++i) {
    key[i] = static_cast<std::uint8_t>(i);
  }
  return key;
}

DatagramSeal Make(DatagramSeal::End end) {
  auto seal = DatagramSeal::Create(Key(), kSession, end);
  if (!seal.ok()) {
    Fail("no seal for a 32-byte key");
  }
  return std::move(seal).value();
}

std::uint64_t Le64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) {
    v = v << 8 | p[i];
  }
  return v;
}

// Whether two windows take the same counters: the highest, the window below it, the next one
// up, and `counter`.
bool SameWindow(const ReplayWindow& a, const ReplayWindow& b, std::uint64_t counter) {
  if (a.highest() != b.highest()) {
    return false;
  }
  const std::uint64_t top = a.highest();
  for (std::uint64_t i = 0; i <= ReplayWindow::kWidth; ++i) {
    const std::uint64_t c = top - std::min(top, i);
    if (a.Fresh(c) != b.Fresh(c)) {
      return false;
    }
  }
  if (top != UINT64_MAX && a.Fresh(top + 1) != b.Fresh(top + 1)) {
    return false;
  }
  return a.Fresh(counter) == b.Fresh(counter);
}

void One(DatagramSeal& server, DatagramSeal& client, std::span<const std::uint8_t> datagram,
         std::vector<std::uint8_t>* scratch) {
  const std::optional<std::uint64_t> named = DatagramSeal::SessionOf(datagram);
  const bool shaped =
      datagram.size() >= DatagramSeal::kOverhead && datagram[0] == DatagramSeal::kMagic;
  if (named.has_value() != shaped) {
    Fail("SessionOf disagrees with the header's shape");
  }
  if (named && *named != Le64(datagram.data() + 1)) {
    Fail("SessionOf is not the header's session");
  }
  const std::uint64_t counter = shaped ? Le64(datagram.data() + 9) : 0;
  // The oracle: whether the datagram authenticates at all, as a new seal with an empty window
  // finds (so nothing earlier datagrams left in the long-lived seal can change the answer).
  std::vector<std::uint8_t> oracle_frame;
  bool authentic = false;
  if (shaped && *named == kSession && counter != 0) {
    DatagramSeal oracle = Make(DatagramSeal::End::kServer);
    auto f = oracle.Open(datagram, &oracle_frame);
    authentic = f.ok();
    if (!f.ok() && f.status().code() != Status::Code::kRejected) {
      Fail("a new seal refused a datagram of its session for another reason than its tag");
    }
    if (authentic) {
      oracle_frame.assign(f->begin(), f->end());
    }
  }
  const ReplayWindow before = server.window();
  auto frame = server.Open(datagram, scratch);
  if (!frame.ok()) {
    const Status::Code code = frame.status().code();
    if (code != Status::Code::kInvalidArgument && code != Status::Code::kAlreadyExists &&
        code != Status::Code::kRejected) {
      Fail("Open failed with an unexpected code");
    }
    if (code == Status::Code::kInvalidArgument && shaped && *named == kSession) {
      Fail("InvalidArgument for a datagram shaped and named ours");
    }
    if (code == Status::Code::kAlreadyExists && before.Fresh(counter)) {
      Fail("a fresh counter refused as a replay");
    }
    if (!SameWindow(before, server.window(), counter)) {
      Fail("a datagram that did not open moved the window");
    }
    if (authentic && code != Status::Code::kAlreadyExists) {
      Fail("an authentic datagram with a fresh counter did not open (the seal's state broke)");
    }
    return;
  }
  if (!authentic) {
    Fail("a datagram opened that a new seal finds not authentic");
  }
  if (!shaped || *named != kSession) {
    Fail("a datagram opened that is not the session's");
  }
  if (frame->size() != datagram.size() - DatagramSeal::kOverhead) {
    Fail("the frame is not the datagram less the overhead");
  }
  if (!before.Fresh(counter) || server.window().Fresh(counter) ||
      server.window().highest() < counter) {
    Fail("an opened datagram's counter was not fresh, or is not taken now");
  }
  if (!std::equal(frame->begin(), frame->end(), oracle_frame.begin(), oracle_frame.end())) {
    Fail("the frame differs from the one a new seal opens");
  }
  std::vector<std::uint8_t> other;
  if (server.Open(datagram, &other).status().code() != Status::Code::kAlreadyExists) {
    Fail("a datagram opened twice");
  }
  if (client.Open(datagram, &other).ok()) {
    Fail("a client's datagram opened at the client: the directions share a key");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  DatagramSeal server = Make(DatagramSeal::End::kServer);
  DatagramSeal client = Make(DatagramSeal::End::kClient);
  std::vector<std::uint8_t> scratch;
  std::span<const std::uint8_t> in(data, size);
  while (in.size() >= 2) {
    const std::size_t n = std::min<std::size_t>(in[0] | in[1] << 8, in.size() - 2);
    One(server, client, in.subspan(2, n), &scratch);
    in = in.subspan(2 + n);
  }
  return 0;
}
