# SPDX-License-Identifier: MIT
# Fuzz harnesses (tests/fuzz/, docs/fuzzing.md): libFuzzer-style entry points
# linked with a deterministic standalone driver, so that plain gcc builds and
# runs them; no cmocka, no clang. The counts keep each test to a few seconds
# (under ~30 s with -DSOFTIB_SANITIZE=ON); longer campaigns run the binaries
# by hand, e.g. build/bin/fuzz_iba_decode 10000000.
set(SIB_FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)

# sib_fuzz_test(NAME TARGET_DEFINE RUNS LIBS...)
function(sib_fuzz_test name define runs)
  add_executable(${name} ${SIB_FUZZ_DIR}/${name}.c ${SIB_FUZZ_DIR}/driver.c)
  target_compile_definitions(${name} PRIVATE ${define})
  target_link_libraries(${name} PRIVATE ${ARGN})
  add_test(NAME ${name} COMMAND ${name} ${runs})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS fuzz)
endfunction()

if(TARGET sib_iba)
  sib_fuzz_test(fuzz_iba_decode FUZZ_TARGET_IBA 500000 sib_iba)
endif()

if(TARGET sib_subnet)
  sib_fuzz_test(fuzz_topology FUZZ_TARGET_TOPOLOGY 60000 sib_subnet)
  target_compile_definitions(fuzz_topology PRIVATE
    SIB_FUZZ_DATA_DIR="${CMAKE_CURRENT_SOURCE_DIR}/data")
endif()
