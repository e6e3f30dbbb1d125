# SPDX-License-Identifier: MIT
# Budgets: registered memory against RLIMIT_MEMLOCK (hca/memlock.h), and
# softibd's per-client quotas of connections, MAI channels, XRC domains
# and fds (docs/daemon.md "Budgets"), each through a private softibd.
if(TARGET ibverbs AND TARGET softibd)
  sib_unit_test(test_memlock SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_memlock.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c
    LIBS ibverbs)
  target_compile_definitions(test_memlock PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_memlock softibd)
endif()

if(TARGET ibverbs AND TARGET ibumad AND TARGET softibd AND TARGET sib_common)
  sib_unit_test(test_budget SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_budget.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/status_text.c
    LIBS ibverbs ibumad sib_common)
  target_compile_definitions(test_budget PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_budget softibd)
  set_tests_properties(test_budget PROPERTIES TIMEOUT 120)
endif()
