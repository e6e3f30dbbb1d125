# SPDX-License-Identifier: MIT
# Pushed events, hot-plug and port state through the drop-in libibverbs,
# against a private softibd (docs/events.md).
if(TARGET ibverbs AND TARGET softibd)
  sib_unit_test(test_events SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_events.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/status_text.c
    LIBS ibverbs sib_common sib_hca sib_iba)
  target_compile_definitions(test_events PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_events softibd)
  set_tests_properties(test_events PROPERTIES TIMEOUT 120)
endif()
