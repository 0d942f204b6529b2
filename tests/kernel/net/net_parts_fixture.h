// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/net/net_parts_fixture.h
//
// The network's parts tested alone, with no socket: MemoryPeer, a connection that keeps every
// frame written to it and how it was closed, and NetPartsTest, a kernel on a manual clock with the
// network's parts built as the test asks, after it set its options: Build() the lower ones every
// other part needs (sessions, handshake slots, the refusal log, the link table), BuildAll() the
// rest as the Network composes them, each reachable by the test.
#ifndef MOLT_TESTS_KERNEL_NET_NET_PARTS_FIXTURE_H_
#define MOLT_TESTS_KERNEL_NET_NET_PARTS_FIXTURE_H_

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernel/src/core/kernel.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/net/datagram_links.h"
#include "kernel/src/net/front_door.h"
#include "kernel/src/net/handshake_slots.h"
#include "kernel/src/net/inbound_pipeline.h"
#include "kernel/src/net/link_table.h"
#include "kernel/src/net/net_governor.h"
#include "kernel/src/net/net_options.h"
#include "kernel/src/net/net_stats.h"
#include "kernel/src/net/peer.h"
#include "kernel/src/net/redirection.h"
#include "kernel/src/net/refusal_log.h"
#include "kernel/src/net/replica.h"
#include "kernel/src/net/requests.h"
#include "kernel/src/net/session.h"
#include "kernel/src/net/wire_tap.h"
#include "molt_wire_generated.h"

namespace molt::kernel::net {

class MemoryPeer final : public Peer {
 public:
  explicit MemoryPeer(std::string address = "10.0.0.1") : Peer(std::move(address)) {}

  void Write(std::span<const std::uint8_t> frame) override {
    // One write may hold several frames (a resumed session's outbox): cut them apart.
    while (frame.size() >= 4) {
      std::uint32_t size = 0;
      std::memcpy(&size, frame.data(), 4);
      frames_.emplace_back(frame.begin(), frame.begin() + 4 + size);
      frame = frame.subspan(4 + size);
    }
  }
  std::size_t queued_bytes() const override { return queued_; }
  void Close(bool flush) override { close_ = flush; }

  // Bytes the transport pretends it could not write yet (the slow-reader check).
  void set_queued(std::size_t bytes) { queued_ = bytes; }
  // How the network closed it: nullopt while open, else whether it asked for a flush.
  std::optional<bool> close() const { return close_; }
  std::size_t frame_count() const { return frames_.size(); }
  const ::molt::wire::Envelope* frame(std::size_t i) const {
    return ::molt::wire::GetSizePrefixedEnvelope(frames_.at(i).data());
  }
  const ::molt::wire::Envelope* last() const { return frame(frames_.size() - 1); }
  // The kinds of the frames written, in order ("Welcome", "Bye", ...).
  std::vector<std::string> Kinds() const {
    std::vector<std::string> kinds;
    for (std::size_t i = 0; i < frames_.size(); ++i) {
      kinds.emplace_back(::molt::wire::EnumNameBody(frame(i)->body_type()));
    }
    return kinds;
  }

 private:
  std::vector<std::vector<std::uint8_t>> frames_;
  std::size_t queued_ = 0;
  std::optional<bool> close_;
};

class NetPartsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KernelOptions ko;
    ko.clock = &clock_;
    auto k = Kernel::Boot(std::move(ko));
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    kernel_ = std::move(k.value());
    channels_ = std::make_unique<ChannelRegistry>(kernel_->hooks(), kernel_->bus());
    sessions_ = std::make_unique<Sessions>(kernel_->hooks(), kernel_->bus());
  }
  void TearDown() override {
    pipeline_.reset();
    door_.reset();
    datagrams_.reset();
    requests_.reset();
    redirection_.reset();
    replicas_.reset();
    links_.reset();
    governor_.reset();
    sessions_.reset();
    channels_.reset();
    (void)kernel_->Shutdown();
  }
  // The link table, with `options_` as the test set them.
  void Build() {
    slots_ = std::make_unique<HandshakeSlots>(options_.handshakes_per_address);
    refusals_ = std::make_unique<RefusalLog>(options_.refusal_log_seconds);
    governor_ = std::make_unique<NetGovernor>(*sessions_, kernel_->bus(), options_);
    links_ = std::make_unique<LinkTable>(kernel_->scheduler(), *sessions_, options_, stats_,
                                         *slots_, *refusals_, *governor_);
  }
  // Every part, as network.cc composes them.
  void BuildAll() {
    Build();
    replicas_ = std::make_unique<Replicas>(*sessions_, *links_, kernel_->scheduler(),
                                           options_.max_frame_bytes);
    redirection_ = std::make_unique<Redirection>(*sessions_, *links_);
    requests_ = std::make_unique<PendingRequests>(kernel_->scheduler(), options_, *channels_,
                                                  *sessions_, *links_, tap_);
    datagrams_ = std::make_unique<DatagramLinks>(*sessions_);
    door_ = std::make_unique<FrontDoor>(*kernel_, options_, stats_, *channels_, *sessions_,
                                        *replicas_, *links_, *slots_, *redirection_, *datagrams_);
    pipeline_ = std::make_unique<InboundPipeline>(*kernel_, options_, stats_, *channels_,
                                                  *sessions_, *links_, *door_, *requests_, tap_,
                                                  *datagrams_, *governor_);
  }
  TimePoint Now() { return clock_.Now(); }
  // Lets `d` pass and runs what is due.
  void Pass(Duration d) {
    clock_.Advance(d);
    kernel_->scheduler().Step();
  }
  // A new connection in the table.
  MemoryPeer& Connect(std::string address = "10.0.0.1") {
    peers_.push_back(std::make_unique<MemoryPeer>(std::move(address)));
    links_->Add(*peers_.back(), Now());
    return *peers_.back();
  }
  // A new connection linked to a new session of `user`.
  MemoryPeer& Join(const std::string& user) {
    MemoryPeer& p = Connect();
    Session& s = sessions_->Create(user, {}, p.address(), Now());
    links_->Bind(p, s);
    sessions_->Announce(s);
    return p;
  }
  Session* SessionOf(const Peer& p) { return sessions_->Get(p.session()); }
  // Runs the kernel for `d` of clock with more work than time: 3 tasks of 10 ms always queued
  // against a server's 16.5 ms budget (each step runs 2 and leaves 1 waiting), 1 ms between
  // steps (the kernel thread is in steps 95% of the time); asks `each_step` (if any) after each.
  void Busy(Duration d, const std::function<void()>& each_step = nullptr) {
    const TimePoint until = Now() + d;
    while (Now() < until) {
      for (; burning_ < 3; ++burning_) {
        kernel_->scheduler().Schedule([this] {
          --burning_;
          clock_.Advance(std::chrono::milliseconds(10));
        });
      }
      Pass(std::chrono::milliseconds(1));
      if (each_step) {
        each_step();
      }
    }
  }
  // Runs the kernel for `d` of clock at 60 steps a second with nothing of the test's to do.
  void Calm(Duration d) {
    const TimePoint until = Now() + d;
    while (Now() < until) {
      Pass(std::chrono::microseconds(16667));
    }
  }
  // A new connection as the Network takes one (BuildAll): its budgets, the link table, the door.
  MemoryPeer& Arrive(std::string address = "10.0.0.1") {
    peers_.push_back(std::make_unique<MemoryPeer>(std::move(address)));
    MemoryPeer& p = *peers_.back();
    pipeline_->Open(p.link(), Now());
    links_->Add(p, Now());
    door_->Admit(p, Now());
    return p;
  }

  ManualClock clock_;
  int burning_ = 0;  // Busy's tasks queued
  std::unique_ptr<Kernel> kernel_;
  NetOptions options_;
  NetStats stats_;
  WireTap tap_;
  std::unique_ptr<ChannelRegistry> channels_;
  std::unique_ptr<Sessions> sessions_;
  std::unique_ptr<HandshakeSlots> slots_;
  std::unique_ptr<RefusalLog> refusals_;
  std::unique_ptr<NetGovernor> governor_;
  std::unique_ptr<LinkTable> links_;
  std::unique_ptr<Replicas> replicas_;
  std::unique_ptr<Redirection> redirection_;
  std::unique_ptr<PendingRequests> requests_;
  std::unique_ptr<DatagramLinks> datagrams_;
  std::unique_ptr<FrontDoor> door_;
  std::unique_ptr<InboundPipeline> pipeline_;
  std::vector<std::unique_ptr<MemoryPeer>> peers_;  // outlive the parts that point at them
};

}  // namespace molt::kernel::net

#endif  // MOLT_TESTS_KERNEL_NET_NET_PARTS_FIXTURE_H_
