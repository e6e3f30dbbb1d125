# SPDX-License-Identifier: MIT
# MAI pure part (src/mai/, include/softib/mai.h): stream and wire round
# trips, hostile streams, the filter engine.
sib_unit_test(test_mai SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_mai.c LIBS sib_mai)
# MAI channels through a real softibd (docs/mai.md "Channels"): filters,
# precedence, DR SMPs through a switch, OOB, timeouts, hostile input.
if(TARGET softibd)
  sib_unit_test(test_mai_chan SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_mai_chan.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c
    LIBS sib_mai sib_common)
  target_compile_definitions(test_mai_chan PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_mai_chan softibd)
  set_tests_properties(test_mai_chan PROPERTIES TIMEOUT 120)
endif()
