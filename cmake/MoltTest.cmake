# SPDX-License-Identifier: Apache-2.0
# molt_add_test(<name> SOURCES <files...> [LIBS <targets...>])
# One GoogleTest executable, its cases registered with CTest by gtest_discover_tests. Tests may
# include kernel internals ("kernel/src/...") as well as the public headers.
include(GoogleTest)

function(molt_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gmock GTest::gtest_main
                                        molt_warnings)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
endfunction()
