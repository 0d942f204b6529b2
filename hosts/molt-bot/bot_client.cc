// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-bot/bot_client.cc
//
// BotClient: the C API's calls and callbacks, and the echo check.
#include "hosts/molt-bot/bot_client.h"

#include <flatbuffers/flatbuffers.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include "counter_generated.h"

namespace molt::bot {
namespace {

using Clock = std::chrono::steady_clock;

// One request in flight: where its answer is counted and when it was sent.
struct InFlight {
  Totals* totals;
  Clock::time_point sent;
};

std::vector<std::uint8_t> EchoPayload(std::uint64_t seq) {
  flatbuffers::FlatBufferBuilder fbb(32);
  fbb.Finish(molt::counter::CreateEcho(fbb, seq));
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

}  // namespace

BotClient::~BotClient() {
  if (client_ != nullptr) {
    molt_client_destroy(client_);
  }
}

bool BotClient::Create(const molt_client_options& options) {
  if (molt_client_create(&options, &client_) != MOLT_OK) {
    return false;
  }
  molt_client_on_state(client_, OnState, this);
  return true;
}

bool BotClient::RunControllers(const std::string& path) {
  return molt_client_load_controllers(client_, path.c_str()) == MOLT_OK &&
         molt_client_start(client_) == MOLT_OK;
}

bool BotClient::Connect(const std::string& host, std::uint16_t port, const std::string& user) {
  return molt_client_connect(client_, host.c_str(), port, user.c_str(), nullptr, 0, nullptr, 0) ==
         MOLT_OK;
}

std::optional<std::string> BotClient::Join(const std::vector<std::string>& intents,
                                           const std::vector<std::string>& requests, bool verify) {
  joined_ = true;
  if (verify) {
    std::uint16_t echoed = 0;
    if (molt_client_channel(client_, "counter.Echo", &echo_) != MOLT_OK ||
        molt_client_channel(client_, "counter.Echoed", &echoed) != MOLT_OK ||
        molt_client_on_event(client_, echoed, OnEcho, this) != MOLT_OK) {
      return std::string("--verify needs the counter plugin: ") + last_error();
    }
  }
  for (auto [names, ids] : {std::pair{&intents, &intents_}, std::pair{&requests, &requests_}}) {
    for (const std::string& n : *names) {
      std::uint16_t id = 0;
      if (molt_client_channel(client_, n.c_str(), &id) != MOLT_OK) {
        return std::string(last_error());
      }
      ids->push_back(id);
    }
  }
  return std::nullopt;
}

std::optional<std::string> BotClient::JoinWalk() {
  joined_ = true;
  walker_ = std::make_unique<Walker>(totals_);
  return walker_->Join(client_);
}

bool BotClient::DatagramLinkOpen() const {
  const int fd = molt_client_socket(client_);
  if (fd < 0) {
    return false;
  }
  char target[64];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  return n > 0 && std::string(target, static_cast<std::size_t>(n)) == "anon_inode:[eventpoll]";
}

void BotClient::Owe(double rate, double dt, bool verify) {
  const std::size_t channels = verify || walker_ ? 1 : intents_.size() + requests_.size();
  owed_ += channels > 0 ? rate * dt : 0;
}

void BotClient::SendOwed(bool verify, const std::vector<std::uint8_t>& payload) {
  while (owed_ >= 1) {
    owed_ -= 1;
    if (walker_) {
      walker_->Step();
    } else if (verify) {
      SendEcho();
    } else {
      SendNext(payload);
    }
  }
}

void BotClient::SendEcho() {
  const std::vector<std::uint8_t> echo = EchoPayload(next_seq_);
  if (molt_client_intent(client_, echo_, echo.data(), echo.size()) == MOLT_OK) {
    ++next_seq_;
    ++totals_.echoes_sent;
  } else {
    ++totals_.intents_refused;  // the same number goes next time
  }
}

void BotClient::SendNext(const std::vector<std::uint8_t>& payload) {
  const std::size_t k = next_++ % (intents_.size() + requests_.size());
  if (k < intents_.size()) {
    const bool ok =
        molt_client_intent(client_, intents_[k], payload.data(), payload.size()) == MOLT_OK;
    ++(ok ? totals_.intents_sent : totals_.intents_refused);
    return;
  }
  auto f = std::make_unique<InFlight>(InFlight{&totals_, Clock::now()});
  if (molt_client_request(client_, requests_[k - intents_.size()], payload.data(), payload.size(),
                          0, OnResponse, f.get()) == MOLT_OK) {
    f.release();  // OnResponse owns it now
    ++totals_.requests_sent;
  } else {
    ++totals_.requests_rate_limited;
  }
}

void BotClient::OnState(void* ud, std::int32_t state, const char* reason) {
  auto* b = static_cast<BotClient*>(ud);
  if (state == MOLT_CLIENT_CLOSED) {
    ++b->totals_.disconnects;
    std::cerr << "molt-bot: a client closed: " << reason << "\n";
  }
}

void BotClient::OnEcho(void* ud, std::uint16_t, const void* data, std::size_t size) {
  auto* b = static_cast<BotClient*>(ud);
  flatbuffers::Verifier v(static_cast<const std::uint8_t*>(data), size);
  if (!v.VerifyBuffer<molt::counter::Echo>(nullptr)) {
    return;
  }
  const std::uint64_t seq = flatbuffers::GetRoot<molt::counter::Echo>(data)->seq();
  if (seq == 0 || seq >= b->next_seq_) {
    return;  // never sent
  }
  if (b->echoed_.size() <= seq) {
    b->echoed_.resize(seq + 1);
  }
  Totals& t = b->totals_;
  if (b->echoed_[seq]) {
    ++t.duplicated;
    return;
  }
  b->echoed_[seq] = true;
  ++t.echoes_back;
  if (seq < b->highest_) {
    ++t.out_of_order;
  }
  b->highest_ = std::max(b->highest_, seq);
}

void BotClient::OnResponse(void* ud, molt_status_t status, const void*, std::size_t) {
  std::unique_ptr<InFlight> f(static_cast<InFlight*>(ud));
  Totals& t = *f->totals;
  switch (status) {
    case MOLT_OK:
      ++t.requests_ok;
      t.rtts.push_back(std::chrono::duration<double>(Clock::now() - f->sent).count());
      break;
    case MOLT_ERR_REJECTED:
      ++t.requests_rejected;
      break;
    case MOLT_ERR_RATE_LIMITED:
      ++t.requests_rate_limited;
      break;
    case MOLT_ERR_TIMEOUT:
      ++t.requests_timed_out;
      break;
    default:
      ++t.requests_failed;
  }
}

}  // namespace molt::bot
