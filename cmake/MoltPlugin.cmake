# SPDX-License-Identifier: Apache-2.0
# molt_add_plugin(<name> SOURCES <files...> [OUTPUT_DIRECTORY <dir>])
#
# Builds a Molt plugin: a MODULE library named <name>.so (no "lib" prefix) that links Molt::sdk
# only, with hidden visibility and an export map that leaves exactly one exported symbol,
# molt_plugin_entry. On GCC it adds -fno-gnu-unique: otherwise inline statics become
# STB_GNU_UNIQUE and dlclose silently never unloads the library (DESIGN.md §5). Works in the Molt
# source tree and, through find_package(Molt), out of tree.
set(_MOLT_PLUGIN_MAP "${CMAKE_CURRENT_LIST_DIR}/molt_plugin.map")

function(molt_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "molt_add_plugin(${name}): SOURCES is required")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE Molt::sdk)
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS "${_MOLT_PLUGIN_MAP}")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-gnu-unique>)
  endif()
  target_link_options(${name} PRIVATE "LINKER:--version-script=${_MOLT_PLUGIN_MAP}")
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  endif()
endfunction()

# molt_plugin_schemas(<target> <file.fbs>...)
#
# Compiles FlatBuffers schemas (channel payloads) with flatc into <name>_generated.h headers in
# the target's build directory and adds that directory to the target's include path. Needs flatc
# (Debian: flatbuffers-compiler) and the FlatBuffers headers (libflatbuffers-dev).
function(molt_plugin_schemas target)
  if(NOT MOLT_FLATC)
    if(TARGET flatbuffers::flatc)
      set(MOLT_FLATC flatbuffers::flatc)
    else()
      find_program(MOLT_FLATC_PROGRAM flatc REQUIRED)
      set(MOLT_FLATC ${MOLT_FLATC_PROGRAM})
    endif()
  endif()
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${target}_schemas)
  set(headers "")
  foreach(fbs IN LISTS ARGN)
    get_filename_component(abs ${fbs} ABSOLUTE)
    get_filename_component(stem ${fbs} NAME_WE)
    set(header ${out_dir}/${stem}_generated.h)
    add_custom_command(
      OUTPUT ${header}
      COMMAND ${MOLT_FLATC} --cpp --scoped-enums -o ${out_dir} ${abs}
      DEPENDS ${abs}
      COMMENT "flatc: ${fbs} (${target})"
      VERBATIM)
    list(APPEND headers ${header})
  endforeach()
  add_custom_target(${target}_schemas DEPENDS ${headers})
  add_dependencies(${target} ${target}_schemas)
  target_include_directories(${target} PRIVATE ${out_dir})
endfunction()

# molt_add_plugin_test(<name> SOURCES <files...> PLUGINS <plugins...> [LIBRARIES <libs...>])
#
# A test program for plugins, run by CTest: an executable <name> linking Molt::testkit
# (molt/testkit.h for C, molt/testkit.hpp for C++) and LIBRARIES (GTest::gtest_main for a
# GoogleTest program). Each of PLUGINS is a molt_add_plugin() target, built before the test, or a
# library file; the program is told where each is as MOLT_PLUGIN_<NAME>, a string literal
# (<NAME>: the target's name or the file's stem, upper-cased, with every character outside
# [A-Z0-9] an underscore), so the test loads exactly what was just built:
#
#   molt_add_plugin(counter SOURCES counter.cc)
#   molt_add_plugin_test(counter_test SOURCES counter_test.cc PLUGINS counter
#                        LIBRARIES GTest::gtest_main)
#   // counter_test.cc: molt::testkit::Kit kit({MOLT_PLUGIN_COUNTER});
function(molt_add_plugin_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PLUGINS;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "molt_add_plugin_test(${name}): SOURCES is required")
  endif()
  if(NOT ARG_PLUGINS)
    message(FATAL_ERROR "molt_add_plugin_test(${name}): PLUGINS is required (the plugins it tests)")
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE Molt::testkit ${ARG_LIBRARIES})
  foreach(plugin IN LISTS ARG_PLUGINS)
    if(TARGET ${plugin})
      set(path "$<TARGET_FILE:${plugin}>")
      set(stem ${plugin})
      add_dependencies(${name} ${plugin})
    else()
      get_filename_component(path ${plugin} ABSOLUTE)
      get_filename_component(stem ${plugin} NAME_WE)
    endif()
    string(TOUPPER "${stem}" stem)
    string(REGEX REPLACE "[^A-Z0-9]" "_" stem "${stem}")
    target_compile_definitions(${name} PRIVATE "MOLT_PLUGIN_${stem}=\"${path}\"")
  endforeach()
  add_test(NAME ${name} COMMAND ${name})
endfunction()
