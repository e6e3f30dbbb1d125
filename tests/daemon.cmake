# SPDX-License-Identifier: MIT
# softibd and the control socket helpers: test_ctl drives a real daemon
# through src/common/ctl.c; daemon_cli runs the softibd and softib commands.
if(TARGET softibd AND TARGET sib_common)
  sib_unit_test(test_ctl
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ctl.c
    LIBS sib_common)
  target_include_directories(test_ctl PRIVATE ${IBVERBS_INCLUDE_DIR})
  target_compile_definitions(test_ctl PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_ctl softibd)
  if(TARGET softib)
    add_test(NAME daemon_cli
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/daemon_cli.sh
              $<TARGET_FILE:softibd> $<TARGET_FILE:softib>)
    set_tests_properties(daemon_cli PROPERTIES TIMEOUT 60 LABELS integration)
  endif()
endif()

# The client's read-only view of the fabric map: validation, bounded seqlock.
if(TARGET sib_common)
  sib_unit_test(test_fabric_view
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_fabric_view.c
    LIBS sib_common Threads::Threads)
endif()

# softibd's ucma (issue 16 item 3): raw SIB_CTL_CM messages from two
# connections to a private softibd: channels, connect/accept/disconnect,
# cleanup when a connection or channel closes, budgets, garbage commands.
if(TARGET softibd AND TARGET sib_common)
  sib_unit_test(test_ucma SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ucma.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/status_text.c
    LIBS sib_common)
  target_include_directories(test_ucma PRIVATE ${IBVERBS_INCLUDE_DIR})
  target_compile_definitions(test_ucma PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_ucma softibd)
  set_tests_properties(test_ucma PROPERTIES TIMEOUT 120)
endif()
