// SPDX-License-Identifier: Apache-2.0
// MetricsWriter (the Prometheus text format) and this process's figures.
#include "kernel/src/admin/metrics.h"

#include <dirent.h>
#include <fmt/format.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>

namespace molt::kernel::admin {
namespace {

void AppendValue(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else if (value == std::floor(value) && std::fabs(value) < 1e15) {
    fmt::format_to(std::back_inserter(out), "{}", static_cast<long long>(value));
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);
  }
}

void AppendEscaped(std::string& out, std::string_view text, bool label) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && label) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

}  // namespace

void MetricsWriter::Family(std::string_view name, std::string_view type, std::string_view help) {
  family_ = name;
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  AppendEscaped(out_, help, false);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void MetricsWriter::Sample(std::string_view suffix, std::initializer_list<MetricLabel> labels,
                           std::string_view extra_name, std::string_view extra_value,
                           double value) {
  out_ += family_;
  out_ += suffix;
  if (labels.size() != 0 || !extra_name.empty()) {
    out_ += '{';
    bool first = true;
    auto label = [&](std::string_view name, std::string_view v) {
      out_ += first ? "" : ",";
      first = false;
      out_ += name;
      out_ += "=\"";
      AppendEscaped(out_, v, true);
      out_ += '"';
    };
    for (const MetricLabel& l : labels) {
      label(l.first, l.second);
    }
    if (!extra_name.empty()) {
      label(extra_name, extra_value);
    }
    out_ += '}';
  }
  out_ += ' ';
  AppendValue(out_, value);
  out_ += '\n';
}

void MetricsWriter::Add(double value, std::initializer_list<MetricLabel> labels) {
  Sample("", labels, {}, {}, value);
}

void MetricsWriter::AddHistogram(std::span<const double> bounds,
                                 std::span<const std::uint64_t> counts, double sum,
                                 std::initializer_list<MetricLabel> labels) {
  std::uint64_t cumulative = 0;
  std::string le;
  for (std::size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += i < counts.size() ? counts[i] : 0;
    le.clear();
    if (i < bounds.size()) {
      AppendValue(le, bounds[i]);
    } else {
      le = "+Inf";
    }
    Sample("_bucket", labels, "le", le, static_cast<double>(cumulative));
  }
  Sample("_sum", labels, {}, {}, sum);
  Sample("_count", labels, {}, {}, static_cast<double>(cumulative));
}

ProcessFigures ReadMemoryFigures() {
  ProcessFigures f;
  const long page = ::sysconf(_SC_PAGESIZE);
  if (std::ifstream statm("/proc/self/statm"); statm) {
    std::uint64_t size = 0, resident = 0;
    statm >> size >> resident;
    f.virtual_bytes = size * static_cast<std::uint64_t>(page);
    f.resident_bytes = resident * static_cast<std::uint64_t>(page);
  }
  const struct mallinfo2 m = ::mallinfo2();
  f.heap_in_use_bytes = m.uordblks + m.hblkhd;
  f.heap_free_bytes = m.fordblks;
  f.heap_mapped_bytes = m.hblkhd;
  return f;
}

ProcessFigures ReadProcessFigures() {
  ProcessFigures f = ReadMemoryFigures();
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) == 0) {
    auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
    f.cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  }
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(dir)) {
      f.open_fds += e->d_name[0] != '.';
    }
    ::closedir(dir);
    f.open_fds -= f.open_fds > 0;  // the directory's own descriptor
  }
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    f.max_fds = static_cast<std::uint64_t>(limit.rlim_cur);
  }
  // Field 22 of /proc/self/stat is the start time in clock ticks after boot.
  if (std::ifstream stat("/proc/self/stat"); stat) {
    std::string line;
    std::getline(stat, line);
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 22 && rest >> field; ++i) {
    }
    std::ifstream uptime("/proc/uptime");
    double up = 0;
    uptime >> up;
    const double started_after_boot =
        std::strtod(field.c_str(), nullptr) / static_cast<double>(::sysconf(_SC_CLK_TCK));
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    f.start_time_seconds = std::floor(now - up + started_after_boot);
  }
  return f;
}

void WriteProcessMetrics(MetricsWriter& w, const ProcessFigures& p) {
  w.Family("molt_process_resident_memory_bytes", "gauge", "Resident memory of moltd.");
  w.Add(static_cast<double>(p.resident_bytes));
  w.Family("molt_process_virtual_memory_bytes", "gauge", "Virtual memory of moltd.");
  w.Add(static_cast<double>(p.virtual_bytes));
  w.Family("molt_process_cpu_seconds_total", "counter", "CPU time of moltd, user and system.");
  w.Add(p.cpu_seconds);
  w.Family("molt_process_open_fds", "gauge", "File descriptors open (connections included).");
  w.Add(static_cast<double>(p.open_fds));
  w.Family("molt_process_max_fds", "gauge", "The descriptor limit (RLIMIT_NOFILE, soft).");
  w.Add(static_cast<double>(p.max_fds));
  w.Family("molt_process_start_time_seconds", "gauge", "When moltd started, since the epoch.");
  w.Add(p.start_time_seconds);
  w.Family("molt_heap_in_use_bytes", "gauge", "Bytes the allocator handed out (mallinfo2).");
  w.Add(static_cast<double>(p.heap_in_use_bytes));
  w.Family("molt_heap_free_bytes", "gauge", "Bytes free in the allocator's arenas (mallinfo2).");
  w.Add(static_cast<double>(p.heap_free_bytes));
  w.Family("molt_heap_mapped_bytes", "gauge", "Bytes the allocator mapped for big blocks.");
  w.Add(static_cast<double>(p.heap_mapped_bytes));
}

}  // namespace molt::kernel::admin
