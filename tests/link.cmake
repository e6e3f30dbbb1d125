# SPDX-License-Identifier: MIT
# src/link/: faults under RC through the verbs library, capture files
# checked with libpcap and decoded by tshark (docs/link.md).
if(TARGET ibverbs AND TARGET softibd AND TARGET softib)
  sib_unit_test(test_faults SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_faults.c
    LIBS ibverbs sib_common)
  target_compile_definitions(test_faults PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_faults softibd)
  set_tests_properties(test_faults PROPERTIES TIMEOUT 150)
endif()
