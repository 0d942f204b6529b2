// SPDX-License-Identifier: Apache-2.0
// File: molt/kernel/status.h
//
// molt::kernel::Status and Result<T>: how kernel code reports failure (STYLE.md §5), LevelDB
// style. An OK status holds no text and allocates nothing. Error codes have the same values as the
// C ABI's MOLT_ERR_* codes, so a Status crosses the ABI edge as its code plus its message.
//
// Messages are lower-case, specific and name the object: `plugin "chat": init failed: ...`.
// Layers add context by prefixing (Status::Prefixed).
//
// Propagation, as abseil spells it:
//   MOLT_RETURN_IF_ERROR(config.MergeJsonFile(path));        // returns its Status unless OK
//   MOLT_ASSIGN_OR_RETURN(double tick, Number(config, key));  // declares (or assigns) the value
// Both return from a function that returns a Status or any Result<T>.
//
// Thread safety: a Status is a value; distinct objects may be used from distinct threads.
#ifndef MOLT_KERNEL_STATUS_H_
#define MOLT_KERNEL_STATUS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace molt::kernel {

class Status {
 public:
  // Values are frozen: they are the C ABI's molt_status_t codes.
  enum class Code : std::int32_t {
    kOk = 0,
    kInvalidArgument = -1,     // a caller passed a bad value
    kNotFound = -2,            // the named object does not exist
    kStale = -3,               // a handle that was valid once is no longer
    kFailedPrecondition = -4,  // the object is in the wrong state for the call
    kInternal = -5,            // a bug or an exception caught at a boundary
    kScopeClosed = -6,         // a resource was registered into a closed scope
    kUnsupported = -7,         // the host or plugin does not offer this
    kAlreadyExists = -8,       // the name or object is taken
    kRejected = -9,            // a validation chain or policy refused
    kIoError = -10,            // the operating system refused (files, sockets)
    kCancelled = -11,          // cancelled: a killed process, a released operation
    kTimedOut = -12,           // no answer in time (a request past its timeout)
    kRateLimited = -13,        // a rate limit refused; retry later
  };

  Status() noexcept = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() noexcept { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status Stale(std::string m) { return {Code::kStale, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {Code::kFailedPrecondition, std::move(m)};
  }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
  static Status ScopeClosed(std::string m) { return {Code::kScopeClosed, std::move(m)}; }
  static Status Unsupported(std::string m) { return {Code::kUnsupported, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
  static Status Rejected(std::string m) { return {Code::kRejected, std::move(m)}; }
  static Status IoError(std::string m) { return {Code::kIoError, std::move(m)}; }
  static Status Cancelled(std::string m) { return {Code::kCancelled, std::move(m)}; }
  static Status TimedOut(std::string m) { return {Code::kTimedOut, std::move(m)}; }
  static Status RateLimited(std::string m) { return {Code::kRateLimited, std::move(m)}; }

  bool ok() const noexcept { return code_ == Code::kOk; }
  Code code() const noexcept { return code_; }
  // The detail text; empty for OK.
  const std::string& message() const noexcept { return message_; }

  // A copy whose message is "<context>: <message>"; OK stays OK.
  Status Prefixed(std::string_view context) const {
    if (ok()) {
      return *this;
    }
    std::string m(context);
    m += ": ";
    m += message_;
    return Status(code_, std::move(m));
  }

  // "OK", or "<code name>: <message>".
  std::string ToString() const;
  static std::string_view CodeName(Code code) noexcept;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Either a value or a non-OK Status.
template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: REQUIRES: !status.ok()

  bool ok() const noexcept { return v_.index() == 0; }
  // REQUIRES: ok()
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  T& operator*() & { return value(); }
  // OK when holding a value.
  Status status() const { return ok() ? Status() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace molt::kernel

// Evaluates `expr` (a Status) once; returns it from the enclosing function unless it is OK.
#define MOLT_RETURN_IF_ERROR(expr)                                          \
  do {                                                                      \
    if (::molt::kernel::Status molt_status_ = (expr); !molt_status_.ok()) { \
      return molt_status_;                                                  \
    }                                                                       \
  } while (false)

// Evaluates the expression (a Result<T>) once; returns its Status from the enclosing function
// unless it holds a value, which then initializes (or is assigned to) `lhs`: `T name`, or an
// lvalue. A statement of its own: not inside an unbraced if or loop. Spelled token for token as
// the SDK's (molt/molt.hpp) for molt::Result, so a file may include both.
#ifndef MOLT_ASSIGN_OR_RETURN
#define MOLT_CONCAT_INNER_(a, b) a##b
#define MOLT_CONCAT_(a, b) MOLT_CONCAT_INNER_(a, b)
#define MOLT_ASSIGN_OR_RETURN(lhs, ...) \
  MOLT_ASSIGN_OR_RETURN_IMPL_(MOLT_CONCAT_(molt_result_, __LINE__), lhs, __VA_ARGS__)
#define MOLT_ASSIGN_OR_RETURN_IMPL_(result, lhs, ...) \
  auto result = (__VA_ARGS__);                        \
  if (!result.ok()) {                                 \
    return result.status();                           \
  }                                                   \
  lhs = std::move(result).value()
#endif

#endif  // MOLT_KERNEL_STATUS_H_
