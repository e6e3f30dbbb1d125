# SPDX-License-Identifier: MIT
# The randomized, model-checked traffic test (tests/traffic/, docs/testing.md):
# random WR streams on every transport through the built library, checked
# byte by byte and completion by completion against a model.  CI runs a
# fixed seed set per transport and one clock-seeded run of all of them
# (its seed is printed; a failure prints the replay command).
# bench/traffic_soak.sh runs it for minutes, with and without faults.
if(TARGET ibverbs AND TARGET softibd)
  add_executable(test_traffic
    ${CMAKE_CURRENT_SOURCE_DIR}/traffic/traffic.c
    ${CMAKE_CURRENT_SOURCE_DIR}/traffic/world.c
    ${CMAKE_CURRENT_SOURCE_DIR}/traffic/gen.c
    ${CMAKE_CURRENT_SOURCE_DIR}/traffic/check.c
    ${CMAKE_CURRENT_SOURCE_DIR}/traffic/episode.c
    ${CMAKE_CURRENT_SOURCE_DIR}/traffic/echo.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c)
  find_package(Threads REQUIRED)
  target_link_libraries(test_traffic PRIVATE ibverbs Threads::Threads)
  target_compile_definitions(test_traffic PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_traffic softibd)
  foreach(t rc uc ud xrc srq)
    foreach(seed 1 2 3)
      add_test(NAME traffic_${t}_seed${seed} COMMAND test_traffic --seed ${seed} --transport ${t} --ops 1500)
      set_tests_properties(traffic_${t}_seed${seed} PROPERTIES TIMEOUT 120 LABELS traffic)
    endforeach()
  endforeach()
  # Under 1% loss, duplication, reordering and corruption: RC and XRC
  # deliver every byte once and in order, UC and UD lose whole messages
  # only (and UD may duplicate them).
  foreach(seed 1 2)
    add_test(NAME traffic_all_faults_seed${seed} COMMAND test_traffic --seed ${seed} --transport all --ops 500)
    set_tests_properties(traffic_all_faults_seed${seed} PROPERTIES TIMEOUT 180 LABELS traffic
      ENVIRONMENT "SOFTIB_FAULTS=seed=${seed},loss=0.01,dup=0.01,reorder=0.01,corrupt=0.01")
  endforeach()
  add_test(NAME traffic_all_clock_seed COMMAND test_traffic --transport all --ops 1500)
  set_tests_properties(traffic_all_clock_seed PROPERTIES TIMEOUT 180 LABELS traffic)
endif()
