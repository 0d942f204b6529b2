// SPDX-License-Identifier: Apache-2.0
// FrameDispatcher (kernel/src/client/frame_dispatcher.h): frames built here, each handed to the
// handler for its kind; a frame that does not verify or that only a client sends is refused, an
// Error needs nothing, and a positive response status reads as MOLT_ERR_INTERNAL.
#include "kernel/src/client/frame_dispatcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernel/src/wire/envelope.h"

namespace molt::kernel::client {
namespace {

namespace w = ::molt::wire;

// Records what it was handed, one line per frame.
class Recorder final : public ServerFrameHandler {
 public:
  void OnWelcome(const w::Welcome& m) override {
    seen.push_back("welcome " + std::to_string(m.session_id()));
  }
  void OnRefuse(const w::Refuse& m) override {
    seen.push_back(std::string("refuse ") + w::EnumNameRefuseReason(m.reason()));
  }
  void OnBye(const w::Bye& m) override { seen.push_back("bye " + m.reason()->str()); }
  void OnRedirect(const w::Redirect& m) override {
    seen.push_back("redirect " + m.address()->str());
  }
  void OnServerEvent(std::uint16_t channel, std::uint32_t seq,
                     std::span<const std::uint8_t> payload) override {
    seen.push_back("event " + std::to_string(channel) + " " +
                   std::string(payload.begin(), payload.end()) +
                   (seq != 0 ? " seq " + std::to_string(seq) : ""));
  }
  void OnAcks(std::span<const std::uint32_t> accepted,
              std::span<const std::uint32_t> rejected) override {
    std::string text = "acks";
    for (std::uint32_t seq : accepted) {
      text += " +" + std::to_string(seq);
    }
    for (std::uint32_t seq : rejected) {
      text += " -" + std::to_string(seq);
    }
    seen.push_back(text);
  }
  void OnResponse(std::uint32_t id, molt_status_t status,
                  std::span<const std::uint8_t> payload) override {
    seen.push_back("response " + std::to_string(id) + " " + std::to_string(status) + " " +
                   std::string(payload.begin(), payload.end()));
  }
  void OnPing(const w::Ping& m) override { seen.push_back("ping " + std::to_string(m.seq())); }
  void OnPong(const w::Pong& m) override { seen.push_back("pong " + std::to_string(m.seq())); }
  void OnReplicaMessage(const w::Replica& m) override {
    seen.push_back("replica " + std::to_string(m.id()));
  }
  void OnChannels(const w::Channels&) override { seen.push_back("channels"); }
  void OnBadFrame(const std::string& reason) override { seen.push_back("bad: " + reason); }
  std::vector<std::string> seen;
};

std::vector<std::uint8_t> Owned(std::span<const std::uint8_t> frame) {
  return {frame.begin(), frame.end()};
}

TEST(FrameDispatcherTest, EachFrameGoesToTheHandlerForItsKind) {
  Recorder r;
  FrameDispatcher frames(r);
  const std::vector<std::uint8_t> hi = {'h', 'i'};
  std::vector<std::vector<std::uint8_t>> sent;
  {
    flatbuffers::FlatBufferBuilder b;
    w::WelcomeBuilder welcome(b);
    welcome.add_session_id(9);
    sent.push_back(Owned(w::FinishFrame(b, w::Body::Welcome, welcome.Finish().Union())));
  }
  {
    flatbuffers::FlatBufferBuilder b;
    sent.push_back(Owned(
        w::FinishFrame(b, w::Body::Event, w::CreateEvent(b, 4, w::PayloadVector(b, hi)).Union())));
  }
  {
    flatbuffers::FlatBufferBuilder b;
    sent.push_back(Owned(w::FinishFrame(
        b, w::Body::Response, w::CreateResponseDirect(b, 2, 5, &hi).Union())));  // 5: not a status
  }
  {
    flatbuffers::FlatBufferBuilder b;
    sent.push_back(Owned(w::FinishFrame(b, w::Body::Ping, w::CreatePing(b, 3, 1).Union())));
  }
  {
    flatbuffers::FlatBufferBuilder b;
    sent.push_back(Owned(w::FinishFrame(
        b, w::Body::Error,
        w::CreateErrorDirect(b, w::RejectReason::RateLimited, 4, 0, "dropped").Union())));
  }
  {
    flatbuffers::FlatBufferBuilder b;
    sent.push_back(Owned(
        w::FinishFrame(b, w::Body::Redirect,
                       w::CreateRedirectDirect(b, "10.0.0.2:7777", "moltd-2", "drain").Union())));
  }
  {
    flatbuffers::FlatBufferBuilder b;
    sent.push_back(Owned(w::FinishFrame(
        b, w::Body::Event, w::CreateEvent(b, 5, w::PayloadVector(b, hi), 77).Union())));
  }
  {
    flatbuffers::FlatBufferBuilder b;
    const std::vector<std::uint32_t> accepted = {1, 2}, rejected = {3};
    sent.push_back(Owned(
        w::FinishFrame(b, w::Body::Acks, w::CreateAcksDirect(b, &accepted, &rejected).Union())));
  }
  {
    flatbuffers::FlatBufferBuilder b;
    sent.push_back(
        Owned(w::FinishFrame(b, w::Body::Bye, w::CreateByeDirect(b, "Kicked", "").Union())));
  }
  for (const std::vector<std::uint8_t>& f : sent) {
    frames.Dispatch(f);
  }
  EXPECT_EQ(
      r.seen,
      (std::vector<std::string>{
          "welcome 9", "event 4 hi", "response 2 " + std::to_string(MOLT_ERR_INTERNAL) + " hi",
          "ping 3", "redirect 10.0.0.2:7777", "event 5 hi seq 77", "acks +1 +2 -3", "bye Kicked"}));
}

TEST(FrameDispatcherTest, WhatDoesNotVerifyOrOnlyAClientSendsIsABadFrame) {
  Recorder r;
  FrameDispatcher frames(r);
  const std::vector<std::uint8_t> junk = {8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  frames.Dispatch(junk);
  flatbuffers::FlatBufferBuilder b;
  frames.Dispatch(w::FinishFrame(b, w::Body::Intent, w::CreateIntent(b, 1).Union()));
  EXPECT_EQ(r.seen, (std::vector<std::string>{"bad: the server sent a malformed frame",
                                              "bad: the server sent a client-to-server message"}));
}

}  // namespace
}  // namespace molt::kernel::client
