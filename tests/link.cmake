# SPDX-License-Identifier: MIT
# src/link/: faults under RC through the verbs library, capture files
# checked with libpcap and decoded by tshark (docs/link.md).
if(TARGET ibverbs AND TARGET softibd AND TARGET softib)
  sib_unit_test(test_faults SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_faults.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/verbs_harness.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c
    LIBS ibverbs sib_common sib_hca sib_iba)
  target_compile_definitions(test_faults PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_faults softibd)
  set_tests_properties(test_faults PROPERTIES TIMEOUT 150)
endif()
if(TARGET sib_link)
  sib_unit_test(test_capture SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_capture.c
    LIBS sib_link sib_iba Threads::Threads)
endif()
# Capture of unmodified ibv_rc_pingpong and ib_write_bw, decoded by tshark.
if(TARGET ibverbs AND TARGET softibd AND TARGET softib AND TARGET test_capture)
  if(SOFTIB_SANITIZE)
    set(sib_link_san ON)
  else()
    set(sib_link_san OFF)
  endif()
  add_test(NAME link_capture_tshark COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/capture.sh)
  set_tests_properties(link_capture_tshark PROPERTIES TIMEOUT 180 LABELS integration SKIP_RETURN_CODE 77
    ENVIRONMENT "SIB_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY};SIB_LIB=${CMAKE_LIBRARY_OUTPUT_DIRECTORY};SIB_SANITIZE=${sib_link_san}")
  add_test(NAME link_capture_mad COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/capture_mad.sh)
  set_tests_properties(link_capture_mad PROPERTIES TIMEOUT 120 LABELS integration SKIP_RETURN_CODE 77
    ENVIRONMENT "SIB_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY};SIB_LIB=${CMAKE_LIBRARY_OUTPUT_DIRECTORY};SIB_SANITIZE=${sib_link_san}")
endif()
if(TARGET ibverbs AND TARGET softibd AND TARGET softib)
  add_test(NAME link_fault_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/fault_cli.sh)
  set_tests_properties(link_fault_cli PROPERTIES TIMEOUT 180 LABELS integration
    ENVIRONMENT "SIB_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY};SIB_LIB=${CMAKE_LIBRARY_OUTPUT_DIRECTORY};SIB_SANITIZE=${sib_link_san}")
endif()
