// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/admin/dashboard.h
//
// The dashboard page the admin endpoint serves at `/` (docs/operations.md, "The dashboard"):
// kernel/src/admin/dashboard.html, compiled in by CMake (dashboard.cc.in), so moltd needs no file
// beside it and the page nothing from the internet: its script and styles are inline, and it
// reads only the admin API of the server that served it.
#ifndef MOLT_KERNEL_ADMIN_DASHBOARD_H_
#define MOLT_KERNEL_ADMIN_DASHBOARD_H_

namespace molt::kernel::admin {

extern const char kDashboardHtml[];

}  // namespace molt::kernel::admin

#endif  // MOLT_KERNEL_ADMIN_DASHBOARD_H_
