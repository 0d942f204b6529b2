// SPDX-License-Identifier: Apache-2.0
// File: tests/support/test_paths.h
//
// The build tree's paths a test runs against, from the definitions tests/CMakeLists.txt gives
// its targets (MOLT_TEST_PATHS). One definition each: test sources compile in unity batches, where
// a constant defined again in a second file of the batch would collide.
#ifndef MOLT_TESTS_SUPPORT_TEST_PATHS_H_
#define MOLT_TESTS_SUPPORT_TEST_PATHS_H_

#include <string>

namespace molt::test {

#ifdef MOLT_FIXTURE_DIR
inline const std::string kFixtures = MOLT_FIXTURE_DIR;  // the test-only plugins
#endif
#ifdef MOLT_PLUGIN_DIR
inline const std::string kPlugins = MOLT_PLUGIN_DIR;  // the bundled plugins
// How many there are (counter, rounds, scores, shop, uptime, walk), and what moltd logs once it
// serves them all.
inline constexpr int kBundledPlugins = 6;
inline const std::string kServingBundled =
    "serving " + std::to_string(kBundledPlugins) + " plugins";
#endif
#ifdef MOLT_CLI_PATH
inline const std::string kMoltCli = MOLT_CLI_PATH;  // the molt CLI
#endif
#ifdef MOLTD_PATH
inline const std::string kMoltd = MOLTD_PATH;
#endif
#ifdef MOLT_RELAY_PATH
inline const std::string kMoltRelay = MOLT_RELAY_PATH;  // the lossy UDP relay
#endif

}  // namespace molt::test

#endif  // MOLT_TESTS_SUPPORT_TEST_PATHS_H_
