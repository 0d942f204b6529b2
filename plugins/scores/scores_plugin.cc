// SPDX-License-Identifier: Apache-2.0
// scores: per-player scores for the current round or season. Other plugins add points through
// the "scores.v1" interface (molt/plugins/scores.h) or by publishing Score.Add(player, points);
// every change is announced as Score.Changed(player, total). Clients (scores.fbs) ask for a total
// with the scores.Get request and hear every change on the scores.Changed event. Where the host
// keeps profiles, a connected player's points also add up in their "scores" profile
// ({"lifetime": N}): kept across rounds, reconnects, swaps and restarts.
#include <flatbuffers/flatbuffers.h>
#include <molt/plugins/scores.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <molt/molt.hpp>
#include <string>
#include <vector>

#include "scores_generated.h"

namespace molt::plugins::scores {

class Scores : public molt::Service {
 public:
  static constexpr const char* kName = "scores";
  static constexpr const char* kVersion = "0.1.0";
  static constexpr const char* kDescription = "per-player scores, as an interface and on the Bus";
  static const molt_scores_v1 kVtable;
  static constexpr molt_interface_export kInterfaces[] = {
      {MOLT_SCORES_INTERFACE, &kVtable, sizeof(molt_scores_v1), 0}};

  molt::Status Init() override {
    MOLT_ASSIGN_OR_RETURN(changed_, host().Resolve("Score.Changed"));
    MOLT_ASSIGN_OR_RETURN(
        adds_, host().Subscribe("Score.Add", [this](std::string_view, molt::Args args) {
          const std::string_view player = args.String(0);
          if (player.empty() || args.Type(1) != MOLT_VALUE_INT) {
            return molt::Status::Error("Score.Add wants (player: string, points: int)",
                                       MOLT_ERR_INVALID_ARGUMENT);
          }
          Add(std::string(player), args.Int(1));
          return molt::Status::Ok();
        }));
    if (molt::Status st = DeclareProfiles(); !st.ok()) {
      return st;
    }
    return DeclareChannels();
  }

  molt::Status Stop() override {
    host().Info("stopped with ", scores_.size(), " players scored");
    return molt::Status::Ok();
  }

  std::int64_t Add(const std::string& player, std::int64_t points) {
    std::int64_t& total = scores_[player];
    total += points;
    if (auto it = online_.find(player); it != online_.end()) {
      Credit(it->second, points);
    }
    (void)host().Publish(changed_, {molt::Value::String(player), molt::Value::Int(total)});
    if (changed_event_) {
      (void)changed_event_.Broadcast(TotalBytes(player, total));
    }
    return total;
  }

  std::int64_t Get(const std::string& player) const {
    auto it = scores_.find(player);
    return it == scores_.end() ? 0 : it->second;
  }

  std::size_t Top(molt_score_entry* out, std::size_t max) {
    ranking_.assign(scores_.begin(), scores_.end());
    std::stable_sort(ranking_.begin(), ranking_.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    const std::size_t n = std::min(max, ranking_.size());
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = molt_score_entry{ranking_[i].first.c_str(), ranking_[i].second};
    }
    return n;
  }

  void Reset() { scores_.clear(); }

 private:
  // --- Lifetime points, in each connected player's "scores" profile ---

  molt::Status DeclareProfiles() {
    molt::ProfileOptions o;
    o.defaults = R"({"lifetime":0})";
    o.schema_version = 1;
    o.autosave_seconds = host().ConfigDouble("autosave_seconds", 60);
    o.validate = [](std::string_view doc) -> molt::Status {
      return doc.find("\"lifetime\":") != std::string_view::npos
                 ? molt::Status::Ok()
                 : molt::Status::Error("a scores profile without \"lifetime\"", MOLT_ERR_REJECTED);
    };
    molt::Result<molt::ProfileStore> store = host().DeclareProfiles("scores", std::move(o));
    if (!store.ok()) {
      if (store.status().code() != MOLT_ERR_UNSUPPORTED) {
        return store.status();
      }
      host().Debug("no lifetime totals: ", store.status().message());
      return molt::Status::Ok();
    }
    profiles_ = *store;
    MOLT_ASSIGN_OR_RETURN(sessions_, host().OnSession([this](molt::SessionId s) -> molt::Status {
      const auto who = host().GetSession(s);
      if (!who.ok()) {
        return who.status();
      }
      const std::string user = who->user;
      online_[user] = s;
      return host().BindEnd(s, [this, user, s](std::int32_t) {
        if (auto it = online_.find(user); it != online_.end() && it->second == s) {
          online_.erase(it);
        }
        pending_.erase(s);
      });
    }));
    MOLT_ASSIGN_OR_RETURN(
        loaded_, host().Subscribe("Kernel.ProfileLoaded", [this](std::string_view, molt::Args a) {
          auto it = pending_.find(a.Handle(0));
          if (a.String(1) == "scores" && it != pending_.end()) {
            const std::int64_t points = it->second;
            pending_.erase(it);
            Credit(a.Handle(0), points);
          }
        }));
    return molt::Status::Ok();
  }

  // Adds `points` to the session's lifetime total, or keeps them until its profile loaded.
  void Credit(molt::SessionId s, std::int64_t points) {
    molt::Result<std::string> now = profiles_.Get(s, "/lifetime");
    if (!now.ok()) {
      pending_[s] += points;  // loading: Kernel.ProfileLoaded credits it
      return;
    }
    std::int64_t n = 0;
    std::from_chars(now->data(), now->data() + now->size(), n);
    if (molt::Status st = profiles_.Set(s, "/lifetime", std::to_string(n + points)); !st.ok()) {
      host().Warn("lifetime points of session ", s, " not kept: ", st.message());
    }
  }

  // The player's lifetime points while they are connected here with their profile loaded;
  // -1 when unknown (elsewhere, or loading).
  std::int64_t Lifetime(const std::string& player) const {
    auto it = online_.find(player);
    if (!profiles_ || it == online_.end()) {
      return -1;
    }
    molt::Result<std::string> now = profiles_.Get(it->second, "/lifetime");
    std::int64_t n = -1;
    if (now.ok()) {
      std::from_chars(now->data(), now->data() + now->size(), n);
    }
    return n;
  }

  std::string TotalBytes(const std::string& user, std::int64_t total) const {
    flatbuffers::FlatBufferBuilder b(64);
    b.Finish(molt::scores::CreateTotal(b, b.CreateString(user), total, Lifetime(user)));
    return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
  }

  // The client channels, where the host has a network (a host without one refuses them).
  molt::Status DeclareChannels() {
    if (!MOLT_API_HAS(host().api(), channel_declare)) {
      return molt::Status::Ok();
    }
    molt::Result<molt::Channel> changed =
        host().DeclareEvent("scores.Changed", "molt.scores.Total");
    if (!changed.ok()) {
      host().Debug("no client channels: ", changed.status().message());
      return molt::Status::Ok();
    }
    changed_event_ = std::move(changed).value();
    molt::ChannelOptions get;
    get.schema = "molt.scores.Query";
    get.rules = {molt::MaxLengthRule(0, "user", 64)};
    get.rate = 10;
    MOLT_ASSIGN_OR_RETURN(
        get_, host().DeclareRequest(
                  "scores.Get", get,
                  [](std::string_view p) {
                    flatbuffers::Verifier v(reinterpret_cast<const std::uint8_t*>(p.data()),
                                            p.size());
                    return v.VerifyBuffer<molt::scores::Query>(nullptr);
                  },
                  [this](molt::SessionId s, std::string_view p, molt_request_t r) -> molt::Status {
                    const auto* q = flatbuffers::GetRoot<molt::scores::Query>(p.data());
                    std::string user = q->user() != nullptr ? q->user()->str() : std::string();
                    if (user.empty()) {  // your own total
                      const auto session = host().GetSession(s);
                      user = session.ok() ? session->user : "";
                    }
                    return host().Reply(r, MOLT_OK, TotalBytes(user, Get(user)));
                  }));
    return molt::Status::Ok();
  }

  std::map<std::string, std::int64_t> scores_;
  molt::ProfileStore profiles_;                      // empty: the host keeps no profiles
  std::map<std::string, molt::SessionId> online_;    // connected players by user
  std::map<molt::SessionId, std::int64_t> pending_;  // points scored while loading
  molt::Subscription sessions_;
  molt::Subscription loaded_;
  std::vector<std::pair<std::string, std::int64_t>> ranking_;  // backs Top()'s strings
  molt::Topic changed_;
  molt::Subscription adds_;
  molt::Channel changed_event_;
  molt::Channel get_;
};

// The interface: C functions taking the plugin state as `self`. Exceptions never cross.
const molt_scores_v1 Scores::kVtable = {
    [](void* self, const char* player, std::int64_t points, std::int64_t* out) -> molt_status_t {
      if (player == nullptr || player[0] == '\0') {
        return MOLT_ERR_INVALID_ARGUMENT;
      }
      auto* s = static_cast<Scores*>(self);
      return molt::detail::CallGuarded(s->host(), [&] {
        const std::int64_t total = s->Add(player, points);
        if (out != nullptr) {
          *out = total;
        }
      });
    },
    [](void* self, const char* player) -> std::int64_t {
      return player == nullptr ? 0 : static_cast<Scores*>(self)->Get(player);
    },
    [](void* self, molt_score_entry* out, std::size_t max) -> std::size_t {
      if (out == nullptr) {
        return 0;
      }
      try {
        return static_cast<Scores*>(self)->Top(out, max);
      } catch (...) {
        return 0;
      }
    },
    [](void* self) { static_cast<Scores*>(self)->Reset(); },
};

}  // namespace molt::plugins::scores

MOLT_PLUGIN(molt::plugins::scores::Scores)
