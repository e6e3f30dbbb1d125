# SPDX-License-Identifier: MIT
# Kill storm (issue 5, DESIGN principle 6): SIGKILLed verbs clients leave
# softibd with nothing leaked.  storm_client is the victim, linked against
# the drop-in libibverbs; kill_storm.sh drives it against a private softibd.
if(TARGET ibverbs AND TARGET softibd AND TARGET softib)
  add_executable(storm_client ${CMAKE_CURRENT_SOURCE_DIR}/integration/storm_client.c)
  target_include_directories(storm_client PRIVATE ${IBVERBS_INCLUDE_DIR})
  target_link_libraries(storm_client PRIVATE ibverbs)
  if(SOFTIB_SANITIZE)
    set(sib_storm_env "SIB_SANITIZE=ON;SIB_STORM_KILLS=300;SIB_STORM_RSS_KB=8192") # ASan quarantines freed memory
  else()
    set(sib_storm_env "SIB_SANITIZE=OFF;SIB_STORM_KILLS=600")
  endif()
  add_test(NAME daemon_kill_storm
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/kill_storm.sh $<TARGET_FILE:storm_client>)
  set_tests_properties(daemon_kill_storm PROPERTIES TIMEOUT 180 LABELS integration
    ENVIRONMENT "SIB_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY};SIB_LIB=${CMAKE_LIBRARY_OUTPUT_DIRECTORY};${sib_storm_env}")
endif()
