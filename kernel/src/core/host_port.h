// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/host_port.h
//
// "ADDRESS:PORT" as the configuration writes an endpoint (127.0.0.1:7778, [::1]:7780, 0.0.0.0:0):
// split at the last colon, brackets around an IPv6 address dropped. Callers word their own error.
#ifndef MOLT_KERNEL_CORE_HOST_PORT_H_
#define MOLT_KERNEL_CORE_HOST_PORT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace molt::kernel {

// False when `text` is not ADDRESS:PORT with a non-empty address and a port 0..65535.
inline bool SplitHostPort(std::string_view text, std::string* host, std::uint16_t* port) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return false;
  }
  std::string_view h = text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') {
    h = h.substr(1, h.size() - 2);
  }
  const std::string_view digits = text.substr(colon + 1);
  if (h.empty() || digits.empty() || digits.size() > 5 ||
      digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return false;
  }
  const unsigned long p = std::stoul(std::string(digits));
  if (p > 65535) {
    return false;
  }
  *host = std::string(h);
  *port = static_cast<std::uint16_t>(p);
  return true;
}

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_HOST_PORT_H_
