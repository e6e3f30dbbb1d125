# SPDX-License-Identifier: MIT
# The data path through the switches' forwarding tables (docs/subnet.md):
# the HCA's route cache over the loopback fabric (no softibd).
if(TARGET sib_hca)
  sib_unit_test(test_hca_route SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_route.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hca_loop.c
    LIBS sib_hca sib_link sib_common sib_iba Threads::Threads)
endif()

# softibd's route answers (src/daemon/route.c) over a two-switch topology,
# without a daemon.
if(TARGET sib_subnet)
  sib_unit_test(test_route
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_route.c ${CMAKE_SOURCE_DIR}/src/daemon/route.c
    LIBS sib_subnet sib_iba)
  target_compile_definitions(test_route PRIVATE
    SIB_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data")
endif()

# Unmodified ibv_rc_pingpong and ib_send_bw across two switches in the
# default mode, a path broken in the middle (retry exceeded) and healed.
if(TARGET softibd AND TARGET softib AND TARGET ibverbs)
  sib_itest(route_2sw route_2sw.sh)
endif()
