// SPDX-License-Identifier: Apache-2.0
// Kernel: lifecycle, the process-wide singleton, and stats.
#include "kernel/src/core/kernel.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <cmath>

#include "kernel/src/core/logger.h"
#include "kernel/src/core/process.h"

#ifndef MOLT_VERSION
#error "MOLT_VERSION must be defined by the build"
#endif

namespace molt::kernel {
namespace {

Kernel* g_current = nullptr;

}  // namespace

BudgetPolicy ResolveBudget(const SchedulerConfig& config, Role role) {
  BudgetPolicy policy;
  policy.floor = config.budget.value_or(kDefaultBudget);
  if (config.target_frame) {
    policy.target = *config.target_frame;
  } else if (!config.budget && role == Role::kServer) {
    policy.target = kDefaultTargetFrame;
  }
  return policy;
}

std::string_view Kernel::Version() { return MOLT_VERSION; }

std::string_view Kernel::RoleName(Role role) { return role == Role::kServer ? "Server" : "Client"; }

Result<std::unique_ptr<Kernel>> Kernel::Boot(KernelOptions options) {
  if (g_current != nullptr) {
    return Status::FailedPrecondition(
        "a molt kernel is already booted in this process; use Kernel::Current()");
  }
  if (!(options.tick_rate > 0) || !std::isfinite(options.tick_rate)) {
    return Status::InvalidArgument("tick rate must be a finite number of hertz above 0");
  }
  std::unique_ptr<Kernel> kernel(new Kernel(std::move(options)));
  g_current = kernel.get();
  return kernel;
}

Kernel* Kernel::Current() { return g_current; }

Kernel::Kernel(KernelOptions options) : role_(options.role), config_(std::move(options.config)) {
  SchedulerOptions so;
  so.budget = ResolveBudget(options.scheduler, role_);
  so.profile_tasks = options.scheduler.profile_tasks;
  so.stagger_recurring = options.scheduler.stagger_recurring;
  so.tick_period = Duration(static_cast<std::int64_t>(1e9 / options.tick_rate));
  so.clock = options.clock;
  scheduler_ = std::make_unique<Scheduler>(so);
  loop_ = std::make_unique<Loop>(*scheduler_);
  bus_ = std::make_unique<Bus>();
  hooks_ = std::make_unique<Hooks>();
  root_scope_ = std::make_unique<Scope>();
  service_registered_ = bus_->Resolve("Kernel.ServiceRegistered");
  // A crashing task is never silent.
  scheduler_->OnError().Connect([](const TaskError& e) {
    LogScope("molt").Warn("{} task errored: {}: {}",
                          e.phase == Phase::kTick ? "scheduled" : PhaseName(e.phase), e.origin,
                          e.message);
  });
  config_.Set("kernel.version", std::string(Version()));
  config_.Set("kernel.role", std::string(RoleName(role_)));
}

Kernel::~Kernel() {
  Status s = Shutdown();
  if (!s.ok()) {
    LogScope("molt").Error("{}", s.message());
  }
  if (g_current == this) {
    g_current = nullptr;
  }
}

Status Kernel::RegisterService(std::shared_ptr<Service> service) {
  if (shutting_down_) {
    return Status::FailedPrecondition("kernel is shut down");
  }
  if (started_) {
    return Status::FailedPrecondition("cannot register service \"" + service->name() +
                                      "\": kernel already started");
  }
  const std::string name = service->name();
  Status s = serving_->Register(std::move(service));
  if (s.ok()) {
    const Value args[] = {Value::String(name)};
    bus_->Publish(service_registered_, args);
  }
  return s;
}

Status Kernel::Start() {
  if (shutting_down_) {
    return Status::FailedPrecondition("kernel is shut down");
  }
  if (started_) {
    return Status::FailedPrecondition("kernel already started");
  }
  started_ = true;
  const TimePoint t0 = RealNow();
  Status s = serving_->Boot();
  if (!s.ok()) {
    return s;
  }
  const double ms = MillisSince(t0);
  LogScope(fmt::format("molt {}", Version()))
      .Info("{} booted {} {} in {:.1f}ms", RoleName(role_), serving_->size(),
            role_ == Role::kClient ? "controllers" : "services", ms);
  return Status::Ok();
}

Result<Service*> Kernel::GetService(std::string_view name) const {
  Service* s = serving_->Get(name);
  if (s == nullptr) {
    return Status::NotFound("service \"" + std::string(name) + "\" is not registered");
  }
  return s;
}

Result<std::shared_ptr<Scope>> Kernel::CreateScope() {
  if (shutting_down_) {
    return Status::FailedPrecondition("kernel is shut down");
  }
  return root_scope_->Child();
}

Result<std::shared_ptr<Process>> Kernel::SpawnProcess(Callback<std::string()> body,
                                                      const ProcessOptions& options) {
  if (shutting_down_) {
    return Status::FailedPrecondition("kernel is shut down");
  }
  std::shared_ptr<Process> p = Process::Create(*scheduler_, std::move(body), options);
  if (processes_.size() >= 64 && processes_.size() == processes_.capacity()) {
    std::erase_if(processes_, [](const std::weak_ptr<Process>& w) {
      auto p = w.lock();
      return !p || p->terminal();
    });
  }
  processes_.push_back(p);
  return p;
}

std::size_t Kernel::process_count() const {
  std::size_t n = 0;
  for (const auto& w : processes_) {
    auto p = w.lock();
    n += p && !p->terminal();
  }
  return n;
}

void Kernel::RemoveShutdownStep(std::string_view name) {
  std::erase_if(shutdown_steps_, [&](const ShutdownStep& s) { return s.name == name; });
}

void Kernel::AddStatsSection(std::string name, Callback<void(boost::json::object&)> fill) {
  stats_sections_.emplace_back(std::move(name), std::move(fill));
}

void Kernel::RemoveStatsSection(std::string_view name) {
  std::erase_if(stats_sections_, [&](const auto& s) { return s.first == name; });
}

void Kernel::OnShutdown(ShutdownStage stage, std::string name, Callback<Status()> step) {
  shutdown_steps_.push_back({stage, std::move(name), std::move(step)});
}

void Kernel::RunShutdownSteps(ShutdownStage stage, std::vector<std::string>& errors) {
  for (auto& step : shutdown_steps_) {
    if (step.stage != stage) {
      continue;
    }
    try {
      Status s = step.run();
      if (!s.ok()) {
        errors.push_back(step.name + ": " + s.message());
      }
    } catch (const std::exception& e) {
      errors.push_back(step.name + ": " + e.what());
    }
  }
}

Status Kernel::Shutdown() {
  if (shut_down_) {
    return Status::Ok();
  }
  if (serving_->booting()) {
    return Status::FailedPrecondition("cannot shut down while services are booting");
  }
  if (shutting_down_) {
    return Status::Ok();  // a teardown step called back into Shutdown
  }
  shutting_down_ = true;
  std::vector<std::string> errors;
  RunShutdownSteps(ShutdownStage::kFirst, errors);
  for (const Status& s : serving_->StopAll()) {
    errors.push_back(s.message());
  }
  root_scope_->Close();
  std::vector<std::weak_ptr<Process>> processes;
  processes.swap(processes_);
  for (const auto& w : processes) {
    if (std::shared_ptr<Process> p = w.lock()) {
      p->Kill("kernel shutdown");
    }
  }
  RunShutdownSteps(ShutdownStage::kAfterScopes, errors);
  shutdown_steps_.clear();
  // The scheduler first: pending tasks may hold subscriptions or hook handlers. The objects
  // themselves live until the destructor, so a shutdown from inside a task or a handler is safe.
  scheduler_->CancelAll();
  bus_->Clear();
  hooks_->Clear();
  shut_down_ = true;
  if (g_current == this) {
    g_current = nullptr;
  }
  if (errors.empty()) {
    return Status::Ok();
  }
  std::string text = "kernel shutdown failed:";
  for (const std::string& e : errors) {
    text += "\n  " + e;
  }
  return Status::Internal(std::move(text));
}

KernelStats Kernel::Stats() const {
  KernelStats s;
  s.version = std::string(Version());
  s.role = role_;
  if (scheduler_) {
    s.scheduler = scheduler_->stats();
    for (Phase phase : {Phase::kPreTick, Phase::kPostTick}) {
      if (const Scheduler* p = scheduler_->FindPhase(phase)) {
        s.phases.push_back({phase, p->stats()});
      }
    }
  }
  s.service_timings = serving_->timings();
  return s;
}

boost::json::object Kernel::StatsObject() const {
  const KernelStats s = Stats();
  auto ms = [](Duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  boost::json::object root;
  root["version"] = s.version;
  root["role"] = std::string(RoleName(s.role));
  boost::json::object sched;
  sched["last_step_ms"] = ms(s.scheduler.last_step);
  sched["last_budget_ms"] = ms(s.scheduler.last_budget);
  sched["tasks_run"] = s.scheduler.tasks_run;
  sched["tasks_deferred"] = s.scheduler.tasks_deferred;
  sched["steps"] = s.scheduler.steps;
  sched["errors"] = s.scheduler.errors;
  if (!s.phases.empty()) {  // the phases plugins used (task_start), each with its own step
    boost::json::object& phases = sched["phases"].emplace_object();
    for (const auto& [phase, st] : s.phases) {
      boost::json::object o;
      o["last_step_ms"] = ms(st.last_step);
      o["budget_ms"] = ms(st.last_budget);
      o["tasks_run"] = st.tasks_run;
      o["tasks_deferred"] = st.tasks_deferred;
      o["steps"] = st.steps;
      o["errors"] = st.errors;
      phases[PhaseName(phase)] = std::move(o);
    }
  }
  root["scheduler"] = std::move(sched);
  root["processes"] = process_count();
  boost::json::array timings;
  for (const ServiceTiming& t : s.service_timings) {
    boost::json::object o;
    o["name"] = t.name;
    o["init_ms"] = ms(t.init);
    o["start_ms"] = ms(t.start);
    timings.push_back(std::move(o));
  }
  root["service_timings"] = std::move(timings);
  for (const auto& [name, fill] : stats_sections_) {
    fill(root[name].emplace_object());
  }
  return root;
}

std::string Kernel::StatsJson() const { return boost::json::serialize(StatsObject()); }

}  // namespace molt::kernel
