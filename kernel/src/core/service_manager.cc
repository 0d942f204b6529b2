// SPDX-License-Identifier: Apache-2.0
// ServiceManager: Kahn's algorithm in registration order, cycle chains by depth-first search.
#include "kernel/src/core/service_manager.h"

#include <algorithm>
#include <exception>
#include <unordered_map>

#include "kernel/src/core/logger.h"

namespace molt::kernel {
namespace {

// Runs a service callback; an exception becomes an internal error.
template <class F>
Status Call(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Status::Internal(std::string("threw: ") + e.what());
  } catch (...) {
    return Status::Internal("threw: unknown exception");
  }
}

Duration Since(TimePoint t0) { return RealNow() - t0; }

}  // namespace

Status ServiceManager::Register(std::shared_ptr<Service> service) {
  if (state_ != State::kRegistering) {
    return Status::FailedPrecondition("cannot register service \"" + service->name() +
                                      "\": services are already booted");
  }
  if (service->name().empty()) {
    return Status::InvalidArgument("a service name must not be empty");
  }
  if (Get(service->name()) != nullptr) {
    return Status::AlreadyExists("service \"" + service->name() + "\" is already registered");
  }
  services_.push_back(std::move(service));
  return Status::Ok();
}

Service* ServiceManager::Get(std::string_view name) const {
  for (const auto& s : services_) {
    if (s->name() == name) {
      return s.get();
    }
  }
  return nullptr;
}

Result<std::vector<Service*>> ServiceManager::ResolveOrder() const {
  const std::size_t n = services_.size();
  std::unordered_map<std::string_view, std::size_t> index;
  for (std::size_t i = 0; i < n; ++i) {
    index.emplace(services_[i]->name(), i);
  }
  // deps[i]: indexes of what service i needs, deduplicated.
  std::vector<std::vector<std::size_t>> deps(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const std::string& d : services_[i]->dependencies()) {
      auto it = index.find(d);
      if (it == index.end()) {
        return Status::NotFound("service \"" + services_[i]->name() + "\" depends on \"" + d +
                                "\", which is not registered");
      }
      if (std::find(deps[i].begin(), deps[i].end(), it->second) == deps[i].end()) {
        deps[i].push_back(it->second);
      }
    }
  }
  std::vector<Service*> order;
  std::vector<bool> done(n, false);
  while (order.size() < n) {
    bool progressed = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (done[i]) {
        continue;
      }
      const bool ready =
          std::all_of(deps[i].begin(), deps[i].end(), [&](std::size_t d) { return done[d]; });
      if (ready) {
        done[i] = true;
        order.push_back(services_[i].get());
        progressed = true;
        break;  // restart from the first registered: registration order among ready services
      }
    }
    if (!progressed) {
      // Every remaining service waits on another remaining one: follow the first unmet
      // dependency from the earliest remaining service until a service repeats.
      std::size_t at = 0;
      while (done[at]) {
        ++at;
      }
      std::vector<std::size_t> path;
      std::vector<int> position(n, -1);
      while (position[at] < 0) {
        position[at] = static_cast<int>(path.size());
        path.push_back(at);
        for (std::size_t d : deps[at]) {
          if (!done[d]) {
            at = d;
            break;
          }
        }
      }
      std::string chain;
      for (std::size_t k = static_cast<std::size_t>(position[at]); k < path.size(); ++k) {
        chain += services_[path[k]]->name() + " -> ";
      }
      chain += services_[at]->name();
      return Status::FailedPrecondition("dependency cycle: " + chain);
    }
  }
  return order;
}

Status ServiceManager::Boot() {
  MOLT_RETURN_IF_ERROR(InitAll());
  return StartAll();
}

Status ServiceManager::InitAll() {
  if (state_ != State::kRegistering) {
    return Status::FailedPrecondition("services are already booted");
  }
  Result<std::vector<Service*>> order = ResolveOrder();
  if (!order.ok()) {
    state_ = State::kFailed;
    return order.status();
  }
  state_ = State::kBooting;
  for (Service* s : *order) {
    attempted_.push_back(s);
    timings_.push_back({s->name(), {}, {}});
    const TimePoint t0 = RealNow();
    Status st = Call([&] { return s->Init(); });
    timings_.back().init = Since(t0);
    if (!st.ok()) {
      return Fail(st.Prefixed("service \"" + s->name() + "\": init failed"));
    }
  }
  state_ = State::kInitialized;
  return Status::Ok();
}

Status ServiceManager::StartAll() {
  if (state_ != State::kInitialized) {
    return Status::FailedPrecondition("services are not initialized (or already started)");
  }
  state_ = State::kBooting;
  for (std::size_t i = 0; i < attempted_.size(); ++i) {
    Service* s = attempted_[i];
    const TimePoint t0 = RealNow();
    Status st = Call([&] { return s->Start(); });
    timings_[i].start = Since(t0);
    if (!st.ok()) {
      return Fail(st.Prefixed("service \"" + s->name() + "\": start failed"));
    }
  }
  state_ = State::kRunning;
  return Status::Ok();
}

Status ServiceManager::Fail(Status failure) {
  state_ = State::kRunning;  // StopAll's precondition
  StopAll();
  state_ = State::kFailed;
  return failure;
}

Status ServiceManager::Stop(Service* service, Duration limit) {
  stopped_.push_back(service);
  return Call([&] {
           return limit == Duration::max() ? service->Stop() : service->StopWithin(limit);
         })
      .Prefixed("service \"" + service->name() + "\": stop failed");
}

std::vector<Status> ServiceManager::StopAll(const StopObserver& observer, Duration budget) {
  std::vector<Status> failures;
  const TimePoint begin = RealNow();
  for (auto it = attempted_.rbegin(); it != attempted_.rend(); ++it) {
    Service* s = *it;
    if (std::find(stopped_.begin(), stopped_.end(), s) != stopped_.end()) {
      continue;
    }
    const TimePoint t0 = RealNow();
    Status st;
    if (t0 - begin >= budget) {
      stopped_.push_back(s);
      halted_.push_back(s);
      st = Call([&] {
        s->Halt();
        return Status::Ok();
      });
      if (st.ok()) {
        st = Status::TimedOut(fmt::format(
            "service \"{}\": stop skipped: the stops before it took more than {:.3g} s; hard stop",
            s->name(), std::chrono::duration<double>(budget).count()));
      }
    } else {
      st = Stop(s, budget == Duration::max() ? budget : budget - (t0 - begin));
      if (st.code() == Status::Code::kTimedOut) {
        halted_.push_back(s);  // its stop ran out of time: it was hard-stopped
      }
    }
    if (observer) {
      observer(*s, Since(t0), st);
    }
    if (!st.ok()) {
      LogScope("ServiceManager").Warn("{}", st.message());
      failures.push_back(std::move(st));
    }
  }
  if (state_ == State::kRunning || state_ == State::kRegistering || state_ == State::kInitialized) {
    state_ = State::kStopped;
  }
  return failures;
}

}  // namespace molt::kernel
