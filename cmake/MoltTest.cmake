# SPDX-License-Identifier: Apache-2.0
# molt_add_test(<name> SOURCES <files...> [LIBS <targets...>])
# One GoogleTest executable, its cases registered with CTest by gtest_discover_tests. Tests may
# include kernel internals ("kernel/src/...") as well as the public headers.
#
# Test code is built for the edit-build-run loop, not for speed at run time: its sources compile
# as unity batches of up to 16 (UNITY_BUILD: GoogleTest, the STL and the kernel headers are parsed, and the
# templates they instantiate compiled, once per batch instead of once per file), and its C++
# without optimization (-O0, with full debug information) whatever the build type: molt_test_code,
# which the test-only plugins use too. What the tests exercise keeps the build type's flags: the
# kernel libraries, moltd, libmolt_client, the bundled plugins and the benchmarks.
include(GoogleTest)

add_library(molt_test_code INTERFACE)
target_compile_options(molt_test_code INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-O0>)

function(molt_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gmock GTest::gtest_main
                                        molt_warnings molt_test_code)
  # Tests instantiate Asio (its sockets, through kernel headers such as admin/http_connection.h,
  # or their own) in the same program as the kernel: with the kernel's Asio settings, or the
  # linker may keep an instantiation of another layout (an ODR violation: the admin tests
  # crashed in socket::close under ASan).
  target_compile_definitions(${name} PRIVATE BOOST_ASIO_NO_DEPRECATED)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
endfunction()
