# SPDX-License-Identifier: Apache-2.0
# molt_checkheaders: compiles every public header alone, in a translation unit of its own (Seastar's
# checkheaders), so a header that leans on an include it does not make fails the build. molt.h is
# also compiled as C99.
function(molt_add_checkheaders)
  set(dir ${CMAKE_BINARY_DIR}/checkheaders)
  set(sources "")
  file(GLOB_RECURSE headers RELATIVE ${PROJECT_SOURCE_DIR}
       ${PROJECT_SOURCE_DIR}/sdk/include/molt/*.h ${PROJECT_SOURCE_DIR}/sdk/include/molt/*.hpp
       ${PROJECT_SOURCE_DIR}/kernel/include/molt/*.h)
  foreach(header IN LISTS headers)
    string(MAKE_C_IDENTIFIER ${header} stem)
    string(REGEX REPLACE "^(sdk|kernel)/include/" "" include ${header})
    file(CONFIGURE OUTPUT ${dir}/${stem}.cc CONTENT "#include <${include}>\n")
    list(APPEND sources ${dir}/${stem}.cc)
  endforeach()
  file(CONFIGURE OUTPUT ${dir}/molt_h_as_c99.c CONTENT "#include <molt/molt.h>\n")
  add_library(molt_checkheaders OBJECT ${sources} ${dir}/molt_h_as_c99.c)
  target_link_libraries(molt_checkheaders PRIVATE molt_kernel molt_warnings)
  set_target_properties(molt_checkheaders PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON
                                                     C_EXTENSIONS OFF)
  target_compile_options(molt_checkheaders PRIVATE $<$<COMPILE_LANGUAGE:C>:-pedantic>)
endfunction()
