// SPDX-License-Identifier: Apache-2.0
// Bus: per-topic resolved subscriber lists (exact subscribers plus matching families, in
// subscription order), rebuilt lazily when the subscription set changed since the last publish.
#include "kernel/src/core/bus.h"

#include <algorithm>
#include <stdexcept>

namespace molt::kernel {

struct Bus::Sub final : internal::ConnectionNode {
  Handler fn;
  Bus* bus = nullptr;
  std::uint64_t seq = 0;
  Topic* topic = nullptr;  // exact subscription
  std::string family;      // family subscription (when topic == nullptr)
  bool connected = true;

  void Disconnect() noexcept override {
    if (connected && bus != nullptr) {
      bus->Remove(this);
    }
  }
  bool Connected() const noexcept override { return connected; }
};

class Bus::Topic {
 public:
  std::string name;
  std::vector<std::shared_ptr<Sub>> exact;
  std::vector<Sub*> resolved;  // what a publish delivers to, valid when version == bus version
  std::uint64_t version = 0;
};

Bus::Bus() = default;

Bus::~Bus() {
  auto detach = [](std::vector<std::shared_ptr<Sub>>& subs) {
    for (auto& s : subs) {
      s->connected = false;
      s->bus = nullptr;
      s->fn = nullptr;
    }
  };
  for (auto& [name, topic] : topics_) {
    detach(topic->exact);
  }
  for (auto& [prefix, subs] : families_) {
    detach(subs);
  }
}

void Bus::Clear() {
  std::vector<std::shared_ptr<Sub>> all;
  for (auto& [name, topic] : topics_) {
    all.insert(all.end(), topic->exact.begin(), topic->exact.end());
  }
  for (auto& [prefix, subs] : families_) {
    all.insert(all.end(), subs.begin(), subs.end());
  }
  for (auto& s : all) {
    s->Disconnect();
  }
}

Status Bus::CheckTopic(std::string_view topic) {
  if (topic.empty()) {
    return Status::InvalidArgument("bus: a topic name must not be empty");
  }
  if (topic.find('*') != std::string_view::npos) {
    return Status::InvalidArgument("bus: topic \"" + std::string(topic) +
                                   "\" contains '*': wildcards are for subscribing, publish to "
                                   "a concrete topic such as \"Combat.Kill\"");
  }
  return Status::Ok();
}

Status Bus::CheckPattern(std::string_view pattern) {
  if (pattern.empty()) {
    return Status::InvalidArgument("bus: a subscription pattern must not be empty");
  }
  const std::size_t star = pattern.find('*');
  if (star == std::string_view::npos || pattern == "*") {
    return Status::Ok();
  }
  const bool trailing =
      star == pattern.size() - 1 && pattern.size() >= 3 && pattern[pattern.size() - 2] == '.';
  if (!trailing) {
    return Status::InvalidArgument("bus: pattern \"" + std::string(pattern) +
                                   "\" is invalid: a wildcard may only end a pattern as \".*\" "
                                   "(\"Combat.*\"), or stand alone (\"*\")");
  }
  return Status::Ok();
}

Bus::Topic* Bus::Resolve(std::string_view topic) {
  auto it = topics_.find(topic);
  if (it != topics_.end()) {
    return it->second.get();
  }
  if (Status s = CheckTopic(topic); !s.ok()) {
    throw std::invalid_argument(s.message());
  }
  auto entry = std::make_unique<Topic>();
  entry->name = std::string(topic);
  Topic* raw = entry.get();
  topics_.emplace(entry->name, std::move(entry));
  return raw;
}

std::string_view Bus::name(const Topic* topic) const { return topic->name; }

Connection Bus::Subscribe(std::string_view pattern, Handler fn) {
  if (Status s = CheckPattern(pattern); !s.ok()) {
    throw std::invalid_argument(s.message());
  }
  auto sub = std::make_shared<Sub>();
  sub->fn = std::move(fn);
  sub->bus = this;
  sub->seq = next_seq_++;
  if (pattern.back() == '*') {
    sub->family = std::string(pattern.substr(0, pattern.size() - 1));  // "Combat." or ""
    auto it = families_.find(sub->family);
    if (it == families_.end()) {
      it = families_.emplace(sub->family, std::vector<std::shared_ptr<Sub>>()).first;
    }
    it->second.push_back(sub);
  } else {
    sub->topic = Resolve(pattern);
    sub->topic->exact.push_back(sub);
  }
  ++version_;
  ++subscriber_count_;
  return Connection(std::move(sub));
}

void Bus::Remove(Sub* sub) noexcept {
  sub->connected = false;
  std::vector<std::shared_ptr<Sub>>* owner = nullptr;
  if (sub->topic != nullptr) {
    owner = &sub->topic->exact;
  } else if (auto it = families_.find(sub->family); it != families_.end()) {
    owner = &it->second;
  }
  if (owner != nullptr) {
    auto it = std::find_if(owner->begin(), owner->end(),
                           [sub](const std::shared_ptr<Sub>& s) { return s.get() == sub; });
    if (it != owner->end()) {
      if (depth_ > 0) {
        retired_subs_.push_back(std::move(*it));  // a publish may still hold it
      } else {
        sub->fn = nullptr;  // release what the handler captured, even if a Connection lingers
      }
      owner->erase(it);
    }
  }
  ++version_;
  --subscriber_count_;
}

void Bus::Rebuild(Topic* topic) {
  std::vector<Sub*> list;
  for (auto& s : topic->exact) {
    list.push_back(s.get());
  }
  auto add_family = [&](std::string_view prefix) {
    if (auto it = families_.find(prefix); it != families_.end()) {
      for (auto& s : it->second) {
        list.push_back(s.get());
      }
    }
  };
  if (!families_.empty()) {
    add_family("");
    const std::string_view name = topic->name;
    for (std::size_t dot = name.find('.'); dot != std::string_view::npos;
         dot = name.find('.', dot + 1)) {
      add_family(name.substr(0, dot + 1));
    }
    std::sort(list.begin(), list.end(), [](Sub* a, Sub* b) { return a->seq < b->seq; });
  }
  if (depth_ > 0) {
    retired_lists_.push_back(std::move(topic->resolved));  // a publish may be iterating it
  }
  topic->resolved = std::move(list);
  topic->version = version_;
}

void Bus::Publish(std::string_view topic, Args args) { Deliver(Resolve(topic), args); }

void Bus::Publish(Topic* topic, Args args) { Deliver(topic, args); }

void Bus::Deliver(Topic* topic, Args args) {
  ++published_;
  if (topic->version != version_) {
    Rebuild(topic);
  }
  if (!topic->resolved.empty()) {
    Notify(topic, args);
  }
}

[[gnu::noinline]] void Bus::Notify(Topic* topic, Args args) {
  ++depth_;
  Sub* const* subs = topic->resolved.data();  // survives a rebuild: see retired_lists_
  const std::size_t n = topic->resolved.size();
  for (std::size_t i = 0; i < n; ++i) {
    Sub* sub = subs[i];
    if (!sub->connected) {
      continue;
    }
    try {
      sub->fn(topic->name, args);
    } catch (...) {
      internal::ReportHandlerError("bus subscriber of \"" + topic->name + "\"",
                                   std::current_exception());
    }
  }
  if (--depth_ == 0 && (!retired_lists_.empty() || !retired_subs_.empty())) {
    retired_lists_.clear();
    for (auto& s : retired_subs_) {
      s->fn = nullptr;
    }
    retired_subs_.clear();
  }
}

}  // namespace molt::kernel
