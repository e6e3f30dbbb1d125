# SPDX-License-Identifier: MIT
# The system view (src/sysview, docs/clients.md "The system view").
if(TARGET sib_sysview AND TARGET softibd)
  # Every file against the verbs API, live changes through the daemon
  # (LID, SM LID, port down/up, device add/remove), the IPoIB interface's
  # directory, counters from the PMA, destroy; a private softibd.
  sib_unit_test(test_sysview SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_sysview.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c
    LIBS sib_sysview sib_common)
  target_compile_definitions(test_sysview PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_sysview softibd)
  set_tests_properties(test_sysview PROPERTIES TIMEOUT 120)
endif()
