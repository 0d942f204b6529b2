// SPDX-License-Identifier: Apache-2.0
// Reporting of exceptions that escape handlers (Signal, Bus): logged, never propagated.
#include "kernel/src/core/signal.h"

#include <exception>

#include "kernel/src/core/logger.h"

namespace molt::kernel::internal {

void ReportHandlerError(std::string_view what, std::exception_ptr error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    LogScope("molt").Warn("{} threw: {}", what, e.what());
  } catch (...) {
    LogScope("molt").Warn("{} threw: unknown exception", what);
  }
}

}  // namespace molt::kernel::internal
