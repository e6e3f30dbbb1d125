# SPDX-License-Identifier: MIT
# ABI tests of the drop-in libibverbs.so.1 (see docs/abi.md).
#
#   abi_layout   compile-time _Static_asserts of the verbs.h layouts the
#                installed clients were compiled against (always built).
#   abi_exports  compares the export table of the ibverbs target with
#                tests/abi/libibverbs.expected (rdma-core 44), plus SONAME,
#                BIND_NOW, NEEDED and symbol-version checks.  Only when the
#                ibverbs target exists.

add_executable(sib_abi_layout ${CMAKE_CURRENT_LIST_DIR}/abi/test_layout.c)
add_test(NAME abi_layout COMMAND sib_abi_layout)
set_tests_properties(abi_layout PROPERTIES TIMEOUT 30 LABELS abi)

if(TARGET ibverbs)
  if(CMAKE_OBJDUMP)
    set(SIB_OBJDUMP ${CMAKE_OBJDUMP})
  else()
    find_program(SIB_OBJDUMP objdump REQUIRED)
  endif()
  if(CMAKE_READELF)
    set(SIB_READELF ${CMAKE_READELF})
  else()
    find_program(SIB_READELF readelf REQUIRED)
  endif()
  add_test(NAME abi_exports
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/abi/check_exports.sh
            $<TARGET_FILE:ibverbs>
            ${CMAKE_CURRENT_LIST_DIR}/abi/libibverbs.expected)
  set_tests_properties(abi_exports PROPERTIES
    TIMEOUT 60
    LABELS abi
    ENVIRONMENT "OBJDUMP=${SIB_OBJDUMP};READELF=${SIB_READELF}")
else()
  message(STATUS "abi_exports test skipped: the ibverbs target is not built yet")
endif()
