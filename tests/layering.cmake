# SPDX-License-Identifier: MIT
# The layering check (tests/layering.py): every folder of the allowed matrix
# in docs/architecture.md, its objects (undefined symbols) and its sources
# (#includes), against the folders it may use.  The object list comes from
# every target of every directory but tests/ (a new folder's targets join by
# themselves); the binaries' shared libraries are "the system".
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "layering check skipped: no python3")
  return()
endif()

# sib_layering_targets(DIR OUT): the targets of DIR and below, tests/ excluded.
function(sib_layering_targets dir out)
  set(all "")
  if(NOT dir STREQUAL CMAKE_CURRENT_SOURCE_DIR)
    get_property(all DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  endif()
  get_property(subs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(s ${subs})
    sib_layering_targets(${s} more)
    list(APPEND all ${more})
  endforeach()
  set(${out} ${all} PARENT_SCOPE)
endfunction()

sib_layering_targets(${CMAKE_SOURCE_DIR} sib_layer_all)
set(sib_layer_objs "")
set(sib_layer_bins "")
set(sib_layer_deps "")
foreach(t ${sib_layer_all})
  get_target_property(type ${t} TYPE)
  if(type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|EXECUTABLE|OBJECT_LIBRARY)$")
    string(APPEND sib_layer_objs "$<JOIN:$<TARGET_OBJECTS:${t}>,\n>\n")
    list(APPEND sib_layer_deps ${t})
  endif()
  if(type MATCHES "^(SHARED_LIBRARY|MODULE_LIBRARY|EXECUTABLE)$")
    list(APPEND sib_layer_bins --ldd $<TARGET_FILE:${t}>)
  endif()
endforeach()
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/layering_objects.txt CONTENT "${sib_layer_objs}")

set(sib_layer_args
  --doc ${CMAKE_SOURCE_DIR}/docs/architecture.md
  --source-dir ${CMAKE_SOURCE_DIR} --build-dir ${CMAKE_BINARY_DIR}
  --objects ${CMAKE_CURRENT_BINARY_DIR}/layering_objects.txt ${sib_layer_bins})
add_test(NAME layering COMMAND ${Python3_EXECUTABLE}
  ${CMAKE_CURRENT_SOURCE_DIR}/layering.py ${sib_layer_args})
set_tests_properties(layering PROPERTIES TIMEOUT 120 LABELS unit)

# The check fails on a deliberate violation in every folder: one probe include,
# cast and call per folder, over the built objects (tests/layering_selftest.py).
add_test(NAME layering_selftest COMMAND ${Python3_EXECUTABLE}
  ${CMAKE_CURRENT_SOURCE_DIR}/layering_selftest.py
  --cc ${CMAKE_C_COMPILER} --scratch ${CMAKE_CURRENT_BINARY_DIR}/layering_selftest.tmp
  ${sib_layer_args})
set_tests_properties(layering_selftest PROPERTIES TIMEOUT 120 LABELS unit)
