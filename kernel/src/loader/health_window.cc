// SPDX-License-Identifier: Apache-2.0
// HealthWindow: a new generation's probation: its errors counted, the rollback verdict at the
// threshold, the pass at the end of the window.
#include "kernel/src/loader/health_window.h"

#include <utility>

#include "kernel/src/core/logger.h"

namespace molt::kernel::loader {

HealthWindow::HealthWindow(Scheduler& scheduler, Verdicts verdicts)
    : scheduler_(scheduler), verdicts_(std::move(verdicts)) {}

void HealthWindow::Start(Generation& g, Generation* previous, States previous_states) {
  Probation p;
  p.gen = &g;
  p.previous = previous;
  p.previous_states = std::move(previous_states);
  p.threshold = g.health_errors != 0 ? g.health_errors : default_errors_;
  p.window = g.health_window_seconds != 0 ? Seconds(g.health_window_seconds) : default_window_;
  p.timer = scheduler_.After(
      p.window, [this] { Pass(); }, Priority::kKernel, TaskOrigin::Named("health window"));
  probation_ = std::move(p);
  ListenForErrors(g);
}

void HealthWindow::ListenForErrors(Generation& g) {
  for (const Plugin& plugin : g.plugins) {
    plugin.instance->set_error_listener([this, gen = &g] { OnError(gen); });
  }
}

void HealthWindow::StopListening(const Generation& g) {
  for (const Plugin& plugin : g.plugins) {
    plugin.instance->set_error_listener(nullptr);
  }
}

void HealthWindow::Silence() {
  if (probation_) {
    StopListening(*probation_->gen);
  }
}

void HealthWindow::Resume(const Generation& from, Generation& to) {
  if (!probation_ || probation_->gen != &from) {
    return;
  }
  probation_->gen = &to;
  ListenForErrors(to);
  LogScope("Generations")
      .Info("generation {} serves out the health window of {} ({} errors so far, threshold {})",
            to.name, from.name, probation_->errors, probation_->threshold);
}

Generation* HealthWindow::Drop() {
  if (!probation_) {
    return nullptr;
  }
  Probation p = std::move(*probation_);
  probation_.reset();
  p.timer.Cancel();
  StopListening(*p.gen);
  return p.previous;
}

void HealthWindow::OnError(const Generation* g) {
  if (!probation_ || probation_->gen != g || probation_->rolling_back) {
    return;  // errors of other generations never count
  }
  if (++probation_->errors < probation_->threshold) {
    return;
  }
  probation_->rolling_back = true;
  if (probation_->previous == nullptr) {
    LogScope("Generations")
        .Error(
            "generation {} reached {} errors in its health window: it is not recorded as "
            "last known good (there is no earlier build to roll back to)",
            g->name, probation_->errors);
    return;
  }
  // Never inside the plugin callback that failed: the rollback is a kernel task of its own.
  scheduler_.Schedule([this] { verdicts_.rollback(); }, Priority::kKernel,
                      TaskOrigin::Named("rollback"));
}

void HealthWindow::Pass() {
  if (!probation_) {
    return;
  }
  Probation p = std::move(*probation_);
  probation_.reset();
  StopListening(*p.gen);
  if (p.previous != nullptr) {
    verdicts_.let_go(p.previous);
  }
  LogScope("Generations")
      .Info("generation {} passed its health window ({} errors, threshold {})", p.gen->name,
            p.errors, p.threshold);
  if (!p.rolling_back) {
    verdicts_.passed(*p.gen);
  }
}

void HealthWindow::StopTimer() {
  if (probation_) {
    probation_->timer.Cancel();
  }
}

HealthWindow::Failed HealthWindow::TakeRollback() {
  Probation p = std::move(*probation_);
  probation_.reset();
  return Failed{p.gen, p.previous, std::move(p.previous_states), p.errors, p.window};
}

void HealthWindow::Clear() {
  if (probation_) {
    probation_->timer.Cancel();
    probation_.reset();
  }
}

}  // namespace molt::kernel::loader
