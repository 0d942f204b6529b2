// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-bot/walker.cc
//
// Walker: walk.Move's payload, the predict call, and what each resolution and position counts.
#include "hosts/molt-bot/walker.h"

#include <flatbuffers/flatbuffers.h>

#include <vector>

#include "walk_generated.h"

namespace molt::bot {
namespace {

std::vector<std::uint8_t> MovePayload(int dx) {
  flatbuffers::FlatBufferBuilder fbb(32);
  fbb.Finish(molt::walk::CreateMove(fbb, static_cast<std::int8_t>(dx), 0));
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

}  // namespace

std::optional<std::string> Walker::Join(molt_client* client) {
  client_ = client;
  std::uint16_t pos = 0;
  if (molt_client_channel(client_, "walk.Move", &move_) != MOLT_OK ||
      molt_client_channel(client_, "walk.Pos", &pos) != MOLT_OK ||
      molt_client_on_event(client_, pos, OnPos, this) != MOLT_OK ||
      molt_client_on_resolved(client_, OnResolved, this) != MOLT_OK) {
    return std::string("--udp needs the walk plugin: ") + molt_client_last_error(client_);
  }
  return std::nullopt;
}

void Walker::Step() {
  const int dx = x_ > 0 ? -1 : 1;  // towards 0: back and forth on the square
  const std::vector<std::uint8_t> move = MovePayload(dx);
  std::uint32_t seq = 0;
  if (molt_client_predict(client_, move_, move.data(), move.size(), &seq) != MOLT_OK) {
    ++totals_.predictions_refused;
    return;
  }
  x_ += dx;  // predicted: applied at once
  in_flight_[seq] = InFlight{dx, Clock::now()};
  ++totals_.predictions_sent;
}

void Walker::OnResolved(void* ud, std::uint16_t, std::uint32_t seq, std::int32_t accepted,
                        molt_status_t status) {
  auto* w = static_cast<Walker*>(ud);
  const auto it = w->in_flight_.find(seq);
  if (it == w->in_flight_.end()) {
    return;  // not ours (never sent by Step)
  }
  const InFlight f = it->second;
  w->in_flight_.erase(it);
  Totals& t = w->totals_;
  if (accepted != 0) {
    ++t.predictions_accepted;
  } else {
    w->x_ -= f.dx;  // rolled back
    ++(status == MOLT_ERR_TIMEOUT ? t.predictions_timed_out : t.predictions_rejected);
  }
  if (accepted != 0 || status != MOLT_ERR_TIMEOUT) {
    // The server answered: its ack's round trip.
    t.ack_rtts.push_back(std::chrono::duration<double>(Clock::now() - f.sent).count());
  }
}

void Walker::OnPos(void* ud, std::uint16_t, const void*, std::size_t) {
  ++static_cast<Walker*>(ud)->totals_.positions;
}

}  // namespace molt::bot
