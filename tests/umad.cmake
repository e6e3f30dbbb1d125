# SPDX-License-Identifier: MIT
# The drop-in libibumad.so.3 (src/umad/, docs/umad.md):
#   test_umad          local functions, and CA/port queries against a
#                      private softibd (MGMT_QUERY, hostile requests too);
#   abi_umad_exports   its export table against rdma-core v44's (the checked
#                      in table and the system library's, when installed);
#   umad_ibstat        unmodified ibstat through LD_LIBRARY_PATH.
if(NOT TARGET ibumad)
  return()
endif()
sib_unit_test(test_umad SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_umad.c LIBS ibumad sib_common)
target_compile_definitions(test_umad PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
add_dependencies(test_umad softibd)

find_program(SIB_UMAD_OBJDUMP objdump REQUIRED)
find_program(SIB_UMAD_READELF readelf REQUIRED)
find_file(SIB_SYSTEM_LIBIBUMAD libibumad.so.3 PATHS /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib NO_DEFAULT_PATH)
if(NOT SIB_SYSTEM_LIBIBUMAD)
  set(SIB_SYSTEM_LIBIBUMAD "")
endif()
add_test(NAME abi_umad_exports
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/abi/check_umad_exports.sh
          $<TARGET_FILE:ibumad> ${CMAKE_CURRENT_LIST_DIR}/abi/libibumad.expected
          ${SIB_SYSTEM_LIBIBUMAD})
set_tests_properties(abi_umad_exports PROPERTIES TIMEOUT 60 LABELS abi
  ENVIRONMENT "OBJDUMP=${SIB_UMAD_OBJDUMP};READELF=${SIB_UMAD_READELF}")

find_program(SIB_IBSTAT ibstat)
if(SIB_IBSTAT)
  sib_itest(umad_ibstat ibstat.sh)
endif()
find_program(SIB_SMPQUERY smpquery)
if(SIB_SMPQUERY)
  sib_itest(umad_diags umad_diags.sh)
endif()
find_program(SIB_OPENSM opensm PATHS /usr/sbin)
if(SIB_OPENSM AND SIB_SMPQUERY)
  sib_itest(umad_opensm umad_opensm.sh)
endif()
