// SPDX-License-Identifier: Apache-2.0
// rounds: timed rounds over the scores plugin. Every `round_seconds` (configuration, default 30)
// it asks the Round.CanEnd hook chain whether the round may end (a handler may veto to extend
// it), reads the leaderboard through the "scores.v1" interface, publishes
// Round.Ended(round, leader, points), logs the result and resets the scores. When the server
// drains (Kernel.SoftShutdown: its players are about to move to another server), the round ends
// at once, without a veto, so it is crowned while its players are still here.
#include <molt/plugins/scores.h>

#include <molt/molt.hpp>
#include <string>

namespace molt::plugins::rounds {

class Rounds : public molt::Service {
 public:
  static constexpr const char* kName = "rounds";
  static constexpr const char* kVersion = "0.1.0";
  static constexpr const char* kDependencies[] = {"scores"};
  static constexpr const char* kDescription = "timed rounds that crown the scores leader";

  molt::Status Init() override {
    round_seconds_ = host().ConfigDouble("round_seconds", 30.0);
    if (!(round_seconds_ > 0)) {
      return molt::Status::Error("round_seconds must be a positive number of seconds, not " +
                                     std::to_string(round_seconds_),
                                 MOLT_ERR_INVALID_ARGUMENT);
    }
    // Round.CanEnd: fail-closed, so a crashing veto handler extends the round instead of ending
    // it on bad data.
    if (molt::Status s = host().DefineHook("Round.CanEnd", false); !s) {
      return s;
    }
    MOLT_ASSIGN_OR_RETURN(ended_, host().Resolve("Round.Ended"));
    return molt::Status::Ok();
  }

  molt::Status Start() override {
    MOLT_ASSIGN_OR_RETURN(scores_,
                          host().GetInterface<molt_scores_v1>("scores", MOLT_SCORES_INTERFACE));
    MOLT_ASSIGN_OR_RETURN(timer_, host().Every(round_seconds_, [this] { return EndRound(); }));
    MOLT_ASSIGN_OR_RETURN(drain_, host().Subscribe("Kernel.SoftShutdown", [this](std::string_view,
                                                                                 molt::Args a) {
      host().Info("the server drains (", a.Int(0), " players move): round ", round_, " ends now");
      timer_.Reset();  // no round after this one here
      return Crown();
    }));
    host().Info("round 1 started: ", round_seconds_, "s per round");
    return molt::Status::Ok();
  }

  molt::Status Stop() override {
    timer_.Reset();
    drain_.Reset();
    host().Info("stopped after ", round_ - 1, " completed rounds");
    return molt::Status::Ok();
  }

 private:
  molt::Status EndRound() {
    molt_value args[] = {molt::Value::Int(round_)};
    MOLT_ASSIGN_OR_RETURN(const molt::Host::FireResult verdict,
                          host().FireHook("Round.CanEnd", args, 1));
    if (!verdict.passed) {
      host().Info("round ", round_, " extended",
                  verdict.error.empty() ? "" : " (a Round.CanEnd handler failed: ", verdict.error,
                  verdict.error.empty() ? "" : ")");
      return molt::Status::Ok();
    }
    return Crown();
  }

  // Ends the round: its leader, Round.Ended, and the scores start over.
  molt::Status Crown() {
    molt_score_entry top[1];
    const std::size_t n = scores_.vtable->top(scores_.self, top, 1);
    const std::string leader = n > 0 ? top[0].player : "";
    const std::int64_t points = n > 0 ? top[0].points : 0;
    if (n > 0) {
      host().Info("round ", round_, " ended: ", leader, " leads with ", points, " points");
    } else {
      host().Info("round ", round_, " ended with no scores");
    }
    if (molt::Status s = host().Publish(
            ended_,
            {molt::Value::Int(round_), molt::Value::String(leader), molt::Value::Int(points)});
        !s) {
      return s;
    }
    scores_.vtable->reset(scores_.self);
    ++round_;
    return molt::Status::Ok();
  }

  double round_seconds_ = 30.0;
  std::int64_t round_ = 1;
  molt::Interface<molt_scores_v1> scores_;
  molt::Topic ended_;
  molt::Task timer_;
  molt::Subscription drain_;
};

}  // namespace molt::plugins::rounds

MOLT_PLUGIN(molt::plugins::rounds::Rounds)
