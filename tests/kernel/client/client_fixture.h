// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/client/client_fixture.h
//
// ClientTest: a NetTest (an in-process Network on loopback) plus one libmolt_client client,
// driven in one thread as an app's frame loop would: Pump() alternates the server's loop and
// molt_client_step. Journal records the client's state changes, events and responses.
#ifndef MOLT_TESTS_CLIENT_CLIENT_FIXTURE_H_
#define MOLT_TESTS_CLIENT_CLIENT_FIXTURE_H_

#include <gtest/gtest.h>
#include <molt/client.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "net_fixture.h"

namespace molt::kernel::net {

struct Journal {
  std::vector<std::string> states;
  std::vector<std::string> events;
  std::vector<std::pair<molt_status_t, std::string>> responses;
};

inline void OnState(void* ud, std::int32_t state, const char* reason) {
  static const char* kNames[] = {"idle", "connecting", "connected", "closed", "reconnecting"};
  std::string s = kNames[state];
  if (reason[0] != '\0') {
    s += " (" + std::string(reason) + ")";
  }
  static_cast<Journal*>(ud)->states.push_back(s);
}

inline void OnEvent(void* ud, std::uint16_t, const void* data, std::size_t) {
  static_cast<Journal*>(ud)->events.push_back(
      flatbuffers::GetRoot<molt::test::Say>(data)->text()->str());
}

inline void OnResponse(void* ud, molt_status_t status, const void* data, std::size_t size) {
  static_cast<Journal*>(ud)->responses.emplace_back(
      status, std::string(static_cast<const char*>(data), data != nullptr ? size : 0));
}

class ClientTest : public NetTest {
 protected:
  void SetUp() override {
    NetTest::SetUp();
    molt_client_options o{};
    o.struct_size = sizeof(o);
    o.connect_timeout_seconds = 5;
    ASSERT_EQ(molt_client_create(&o, &client_), MOLT_OK);
    molt_client_on_state(client_, OnState, &journal_);
    molt_client_on_event(client_, MOLT_CLIENT_ALL_CHANNELS, OnEvent, &journal_);
  }
  void TearDown() override {
    molt_client_destroy(client_);
    NetTest::TearDown();
  }

  // The app's frame loop: the server's loop, then a client step, until `done`.
  bool Pump(const std::function<bool()>& done,
            std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      kernel_->loop().io().restart();
      kernel_->loop().RunFor(std::chrono::milliseconds(1));
      EXPECT_EQ(molt_client_step(client_, 0.0015), MOLT_OK);
    }
    return done();
  }
  bool Connect(const char* user = "ada", std::uint16_t port = 0) {
    EXPECT_EQ(molt_client_connect(client_, "127.0.0.1", port != 0 ? port : port_, user, "pw", 2,
                                  nullptr, 0),
              MOLT_OK);
    return Pump([&] { return molt_client_state(client_) != MOLT_CLIENT_CONNECTING; });
  }
  std::uint16_t Channel(const char* name) {
    std::uint16_t id = 0;
    EXPECT_EQ(molt_client_channel(client_, name, &id), MOLT_OK) << molt_client_last_error(client_);
    return id;
  }
  std::string Error() { return molt_client_last_error(client_); }

  molt_client* client_ = nullptr;
  Journal journal_;
};

}  // namespace molt::kernel::net

#endif  // MOLT_TESTS_CLIENT_CLIENT_FIXTURE_H_
