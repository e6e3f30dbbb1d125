# SPDX-License-Identifier: MIT
# Object lifetime through the built library (docs/transport.md "Object
# lifetime"): dereg/rereg/destroy under an RDMA flood, and peer inbox
# mappings that go with their last user.
if(TARGET ibverbs AND TARGET softibd)
  sib_unit_test(test_lifetime SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_lifetime.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/verbs_harness.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c
    LIBS ibverbs sib_common sib_hca sib_iba Threads::Threads)
  target_compile_definitions(test_lifetime PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_lifetime softibd)
  set_tests_properties(test_lifetime PROPERTIES TIMEOUT 180)
endif()
