// SPDX-License-Identifier: Apache-2.0
// DatagramSeal and ReplayWindow: a session's datagrams open only under its key, in its
// direction, once each; whatever does not open changes nothing.
#include "kernel/src/wire/datagram_seal.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace molt::wire {
namespace {

using End = DatagramSeal::End;

std::vector<std::uint8_t> Key(std::uint8_t fill) { return std::vector<std::uint8_t>(32, fill); }
std::vector<std::uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string Text(std::span<const std::uint8_t> b) { return {b.begin(), b.end()}; }

TEST(ReplayWindowTest, TakesEachCounterOnceAndLateOnesInsideTheWindow) {
  ReplayWindow w;
  EXPECT_FALSE(w.Fresh(0));
  EXPECT_TRUE(w.Fresh(5));
  w.Take(5);
  EXPECT_FALSE(w.Fresh(5));
  EXPECT_TRUE(w.Fresh(3));  // late, inside the window
  w.Take(3);
  EXPECT_FALSE(w.Fresh(3));
  w.Take(100);
  EXPECT_TRUE(w.Fresh(37));   // 63 behind: the window's edge
  EXPECT_FALSE(w.Fresh(36));  // 64 behind: too old
  EXPECT_FALSE(w.Fresh(100));
  w.Take(1000);  // a jump past the window forgets what it held
  EXPECT_TRUE(w.Fresh(999));
  EXPECT_EQ(w.highest(), 1000u);
}

TEST(DatagramSealTest, AFrameOpensOnTheOtherEndOnceAndInEitherOrder) {
  auto client = DatagramSeal::Create(Key(7), 42, End::kClient);
  auto server = DatagramSeal::Create(Key(7), 42, End::kServer);
  ASSERT_TRUE(client.ok() && server.ok());
  const std::vector<std::uint8_t> a = client->Seal(Bytes("first"));
  const std::vector<std::uint8_t> b = client->Seal(Bytes("second"));
  EXPECT_EQ(a.size(), DatagramSeal::kOverhead + 5);
  EXPECT_EQ(DatagramSeal::SessionOf(a), 42u);
  std::vector<std::uint8_t> scratch;
  auto second = server->Open(b, &scratch);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(Text(*second), "second");
  auto first = server->Open(a, &scratch);  // reordered: still inside the window
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(Text(*first), "first");
  const auto replayed = server->Open(a, &scratch);
  EXPECT_EQ(replayed.status().code(), molt::kernel::Status::Code::kAlreadyExists);
  EXPECT_EQ(replayed.status().message(), "a replayed or too old datagram (counter 1)");
  // And back: the server's own direction.
  auto back = client->Open(server->Seal(Bytes("ack")), &scratch);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(Text(*back), "ack");
}

TEST(DatagramSealTest, WhatDoesNotAuthenticateChangesNothing) {
  auto client = DatagramSeal::Create(Key(7), 42, End::kClient);
  auto server = DatagramSeal::Create(Key(7), 42, End::kServer);
  auto stranger = DatagramSeal::Create(Key(8), 42, End::kClient);
  ASSERT_TRUE(client.ok() && server.ok() && stranger.ok());
  std::vector<std::uint8_t> scratch;
  const std::vector<std::uint8_t> good = client->Seal(Bytes("move"));
  // A wrong key; one changed byte anywhere; a truncation; the sender's own datagram reflected.
  EXPECT_EQ(server->Open(stranger->Seal(Bytes("move")), &scratch).status().message(),
            "a datagram that does not authenticate");
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::vector<std::uint8_t> bad = good;
    bad[i] ^= 0x01;
    EXPECT_FALSE(server->Open(bad, &scratch).ok()) << "byte " << i;
  }
  EXPECT_FALSE(server->Open(std::span(good).first(good.size() - 1), &scratch).ok());
  EXPECT_EQ(server->Open(std::span(good).first(10), &scratch).status().message(),
            "not a sealed datagram (10 bytes)");
  EXPECT_FALSE(client->Open(good, &scratch).ok()) << "a reflected datagram never opens";
  // None of it moved the window: the good one still opens.
  EXPECT_EQ(server->window().highest(), 0u);
  auto opened = server->Open(good, &scratch);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(Text(*opened), "move");
  auto other = DatagramSeal::Create(Key(7), 43, End::kServer);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->Open(client->Seal(Bytes("x")), &scratch).status().message(),
            "a datagram for another session");
  EXPECT_EQ(
      DatagramSeal::Create(std::vector<std::uint8_t>(16, 0), 1, End::kServer).status().message(),
      "a datagram key is 32 bytes, not 16");
}

}  // namespace
}  // namespace molt::wire
