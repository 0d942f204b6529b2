// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/metrics.h
//
// MetricsWriter: the Prometheus text exposition format (version 0.0.4), written by hand (one
// pass, no registry): each family once, with its HELP and TYPE lines, then its samples.
//
//   MetricsWriter w;
//   w.Family("molt_sessions", "gauge", "Sessions connected now.");
//   w.Add(12);
//   w.Family("molt_net_rejects_total", "counter", "Messages rejected, by channel and reason.");
//   w.Add(3, {{"channel", "chat.Say"}, {"reason", "rate_limited"}});
//   std::string text = w.Take();
//
// Names follow Prometheus' conventions (checked by `promtool check metrics` in the tests): the
// molt_ prefix, base units (seconds, bytes) in the name, counters end in _total. Label values are
// escaped; label sets must stay bounded (channels, reasons, plugins: never sessions or users).
//
// ProcessFigures: this process's resident memory, CPU time, descriptors and allocator figures,
// read from /proc and glibc.
//
// Thread safety: a MetricsWriter belongs to one thread; ReadProcessFigures is safe anywhere.
#ifndef MOLT_KERNEL_ADMIN_METRICS_H_
#define MOLT_KERNEL_ADMIN_METRICS_H_

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace molt::kernel::admin {

using MetricLabel = std::pair<std::string_view, std::string_view>;

class MetricsWriter {
 public:
  // Starts a family: `type` is counter, gauge or histogram.
  void Family(std::string_view name, std::string_view type, std::string_view help);
  // One sample of the current family.
  void Add(double value, std::initializer_list<MetricLabel> labels = {});
  // One histogram sample set of the current family: `counts[i]` observations in
  // (bounds[i-1], bounds[i]], the last one above every bound (so counts has bounds.size() + 1).
  void AddHistogram(std::span<const double> bounds, std::span<const std::uint64_t> counts,
                    double sum, std::initializer_list<MetricLabel> labels = {});
  std::string Take() { return std::move(out_); }

 private:
  void Sample(std::string_view suffix, std::initializer_list<MetricLabel> labels,
              std::string_view extra_name, std::string_view extra_value, double value);
  std::string family_;
  std::string out_;
};

struct ProcessFigures {
  std::uint64_t resident_bytes = 0;
  std::uint64_t virtual_bytes = 0;
  double cpu_seconds = 0;  // user + system
  std::uint64_t open_fds = 0;
  std::uint64_t max_fds = 0;      // the soft limit
  double start_time_seconds = 0;  // since the Unix epoch
  // glibc's allocator (mallinfo2): bytes handed out, free in its arenas, and mmapped.
  std::uint64_t heap_in_use_bytes = 0;
  std::uint64_t heap_free_bytes = 0;
  std::uint64_t heap_mapped_bytes = 0;
};
ProcessFigures ReadProcessFigures();
// Only the memory figures (resident, virtual, the allocator's): no descriptor count, so cheap
// enough for the kernel thread (diagnostics).
ProcessFigures ReadMemoryFigures();
// The molt_process_* and molt_heap_* families of `figures`.
void WriteProcessMetrics(MetricsWriter& w, const ProcessFigures& figures);

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_METRICS_H_
