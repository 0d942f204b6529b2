// SPDX-License-Identifier: Apache-2.0
// walk (service): every session walks a square grid, from (0, 0), one step at a time. The
// example of the channel kinds of ABI 1.10 (plugins/walk/README.md):
// - walk.Move is a predicted intent: the client moves its player at once and the server's answer
//   confirms the step or undoes it. Declarative rules keep dx and dy in -1 .. 1 before this code
//   runs; the handler refuses (MOLT_ERR_REJECTED: a game rule, not a plugin error) a step that
//   would leave the square -100 .. 100, so the client hears it rejected and rolls it back.
// - walk.Pos is an unreliable, latest-wins channel: after each accepted step the mover's position
//   goes to everyone. A position is worth nothing once a newer one exists, so an old one is
//   dropped rather than delivered late.
// The positions survive a hot swap (state version 1: "<session> <x> <y>" lines).
#include <flatbuffers/flatbuffers.h>

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <molt/molt.hpp>
#include <string>
#include <string_view>

#include "walk_generated.h"

namespace molt::plugins::walk {

template <class T>
bool Verify(std::string_view p) {
  flatbuffers::Verifier v(reinterpret_cast<const std::uint8_t*>(p.data()), p.size());
  return v.VerifyBuffer<T>(nullptr);
}

struct Spot {
  std::int32_t x = 0;
  std::int32_t y = 0;
  bool operator==(const Spot& o) const { return x == o.x && y == o.y; }
};
using Spots = std::map<molt::SessionId, Spot>;

// The state a swap hands over: one "<session> <x> <y>" line per session that moved.
std::string FormatState(const Spots& spots) {
  std::string out;
  for (const auto& [session, at] : spots) {
    out += std::to_string(session) + " " + std::to_string(at.x) + " " + std::to_string(at.y) + "\n";
  }
  return out;
}

molt::Result<Spots> ParseState(std::string_view data) {
  Spots spots;
  const char* at = data.data();
  const char* const end = data.data() + data.size();
  while (at != end) {
    molt::SessionId session = 0;
    Spot spot;
    auto r = std::from_chars(at, end, session);
    if (r.ec == std::errc() && r.ptr != end && *r.ptr == ' ') {
      r = std::from_chars(r.ptr + 1, end, spot.x);
    }
    if (r.ec == std::errc() && r.ptr != end && *r.ptr == ' ') {
      r = std::from_chars(r.ptr + 1, end, spot.y);
    }
    if (r.ec != std::errc() || r.ptr == end || *r.ptr != '\n') {
      return molt::Status::Error("walk state is not \"<session> <x> <y>\" lines: \"" +
                                 std::string(data) + "\"");
    }
    spots[session] = spot;
    at = r.ptr + 1;
  }
  return spots;
}

class Walk : public molt::Service {
 public:
  static constexpr const char* kName = "walk";
  static constexpr const char* kVersion = "0.1.0";
  static constexpr const char* kDescription =
      "a walk on a square: a predicted intent and an unreliable channel";
  static constexpr std::uint32_t kStateVersion = 1;
  static constexpr std::int32_t kEdge = 100;  // the square is -kEdge .. kEdge on both axes

  molt::Status Init() override {
    molt::ChannelOptions pos;
    pos.schema = "molt.walk.Pos";
    pos.latest_wins = true;  // a position older than the newest one is worth nothing
    pos.unreliable_priority = MOLT_UNRELIABLE_LOW;
    MOLT_ASSIGN_OR_RETURN(pos_, host().DeclareUnreliable("walk.Pos", pos));
    molt::ChannelOptions move;
    move.schema = "molt.walk.Move";
    move.rules = {molt::RangeRule(0, "dx", MOLT_FIELD_INT8, -1, 1),
                  molt::RangeRule(1, "dy", MOLT_FIELD_INT8, -1, 1)};
    move.rate = 60;  // a step a frame at 60 Hz
    MOLT_ASSIGN_OR_RETURN(move_, host().DeclarePredictedIntent(
                                     "walk.Move", move, Verify<molt::walk::Move>,
                                     [this](molt::SessionId s, std::string_view payload) {
                                       const auto* m =
                                           flatbuffers::GetRoot<molt::walk::Move>(payload.data());
                                       return Step(s, m->dx(), m->dy());
                                     }));
    // A session's position goes with it (a swap releases the binding; the next instance binds
    // again when it sees the live sessions).
    MOLT_ASSIGN_OR_RETURN(sessions_, host().OnSession([this](molt::SessionId s) {
      return host().BindEnd(s, [this, s](std::int32_t) { spots_.erase(s); });
    }));
    return molt::Status::Ok();
  }

  molt::Status ExportState(std::string* out) override {
    *out = FormatState(spots_);
    return molt::Status::Ok();
  }
  molt::Status ImportState(std::uint32_t, std::string_view data) override {
    MOLT_ASSIGN_OR_RETURN(spots_, ParseState(data));
    return molt::Status::Ok();
  }

  void SelfTest(molt::SelfTests& tests) override {
    tests.Run("the state it exports reads back the same", []() -> molt::Status {
      const Spots spots = {{7, {-100, 3}}, {1ull << 40, {100, -100}}};
      MOLT_ASSIGN_OR_RETURN(const Spots back, ParseState(FormatState(spots)));
      return back == spots
                 ? molt::Status::Ok()
                 : molt::Status(MOLT_ERR_INTERNAL, "read back \"" + FormatState(back) +
                                                       "\" from \"" + FormatState(spots) + "\"");
    });
  }

 private:
  // The handler of walk.Move (dx and dy are in -1 .. 1: the rules said so). MOLT_ERR_REJECTED
  // refuses the step (counted as the rejection "refused", not as an error of this plugin): the
  // client's prediction is rolled back.
  molt::Status Step(molt::SessionId session, std::int32_t dx, std::int32_t dy) {
    Spot& at = spots_[session];
    const Spot to{at.x + dx, at.y + dy};
    if (std::abs(to.x) > kEdge || std::abs(to.y) > kEdge) {
      return molt::Status(MOLT_ERR_REJECTED, "a step to (" + std::to_string(to.x) + ", " +
                                                 std::to_string(to.y) +
                                                 ") leaves the square -100 .. 100");
    }
    at = to;
    flatbuffers::FlatBufferBuilder b(64);
    b.Finish(molt::walk::CreatePos(b, session, to.x, to.y));
    // The step is taken whether or not its position goes out: walk.Pos is "lost > late", and
    // the next step sends a newer one.
    if (molt::Status s = pos_.Broadcast(
            std::string_view(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()));
        !s.ok()) {
      host().Debug("walk.Pos not sent: ", s.message());
    }
    return molt::Status::Ok();
  }

  Spots spots_;  // the sessions that moved; the others stand at (0, 0)
  molt::Channel pos_;
  molt::Channel move_;
  molt::Subscription sessions_;
};

}  // namespace molt::plugins::walk

MOLT_PLUGIN(molt::plugins::walk::Walk)
