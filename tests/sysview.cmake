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
if(TARGET sib_sysview AND TARGET softibd AND TARGET softib)
  # The tree kept live by a small driver (tests/integration/sysview_tree.c),
  # read by Debian's ibstatus (a copy with its base path pointed at the
  # tree: no interposer, no namespace) and compared with ibv_devinfo -v;
  # a port taken down and up through `softib port` shows in it.
  add_executable(sysview_tree ${CMAKE_CURRENT_SOURCE_DIR}/integration/sysview_tree.c)
  target_link_libraries(sysview_tree PRIVATE sib_sysview)
  sib_itest(sysview_ibstatus sysview.sh)
  add_dependencies(sysview_tree softibd softib)
  set_tests_properties(sysview_ibstatus PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
if(TARGET sib_sysview)
  # The node store alone against a model in randomized passes (writes,
  # kind swaps, keeps, sweeps; SIB_SYSVIEW_SEED=N replays one run).
  sib_unit_test(test_sysview_tree SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_sysview_tree.c
    LIBS sib_sysview)
endif()
