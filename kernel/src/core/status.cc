// SPDX-License-Identifier: Apache-2.0
// Status formatting.
#include <molt/kernel/status.h>

namespace molt::kernel {

std::string_view Status::CodeName(Code code) noexcept {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "invalid argument";
    case Code::kNotFound:
      return "not found";
    case Code::kStale:
      return "stale handle";
    case Code::kFailedPrecondition:
      return "failed precondition";
    case Code::kInternal:
      return "internal error";
    case Code::kScopeClosed:
      return "scope closed";
    case Code::kUnsupported:
      return "unsupported";
    case Code::kAlreadyExists:
      return "already exists";
    case Code::kRejected:
      return "rejected";
    case Code::kIoError:
      return "i/o error";
    case Code::kCancelled:
      return "cancelled";
    case Code::kTimedOut:
      return "timed out";
    case Code::kRateLimited:
      return "rate limited";
  }
  return "unknown status";
}

std::string Status::ToString() const {
  if (ok()) {
    return "OK";
  }
  std::string s(CodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

}  // namespace molt::kernel
