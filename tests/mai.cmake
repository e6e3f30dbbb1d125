# SPDX-License-Identifier: MIT
# MAI pure part (src/mai/, include/softib/mai.h): stream and wire round
# trips, hostile streams, the filter engine.
sib_unit_test(test_mai SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_mai.c LIBS sib_mai)
# MAI channels through a real softibd (docs/mai.md "Channels"): filters,
# precedence, DR SMPs through a switch, OOB, timeouts, hostile input.
if(TARGET softibd)
  sib_unit_test(test_mai_chan SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_mai_chan.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c
    LIBS sib_mai sib_common Threads::Threads)
  target_compile_definitions(test_mai_chan PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_mai_chan softibd)
  set_tests_properties(test_mai_chan PROPERTIES TIMEOUT 120)
endif()
# The client written against mai.h alone, privileged and not (mai_priv.sh).
if(TARGET softibd AND TARGET softib)
  add_executable(mai_client ${CMAKE_CURRENT_SOURCE_DIR}/integration/mai_client.c)
  target_link_libraries(mai_client PRIVATE sib_mai)
  add_test(NAME mai_priv
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/mai_priv.sh $<TARGET_FILE:mai_client>)
  set_tests_properties(mai_priv PROPERTIES TIMEOUT 120 LABELS integration SKIP_RETURN_CODE 77
    ENVIRONMENT "${SIB_ITEST_ENV}")
endif()
# The MAD router and channels linked alone on the two-switch topology, the
# SMA/PMA as recording doubles (test_mad_router.c).
if(TARGET sib_subnet)
  sib_unit_test(test_mad_router SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_mad_router.c
    ${CMAKE_SOURCE_DIR}/src/daemon/mai_chan.c ${CMAKE_SOURCE_DIR}/src/daemon/subnet_host.c
    ${CMAKE_SOURCE_DIR}/src/daemon/peer.c
    LIBS sib_subnet sib_mai sib_iba sib_common)
  target_compile_definitions(test_mad_router PRIVATE SIB_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data")
endif()
