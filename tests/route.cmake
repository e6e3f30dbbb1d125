# SPDX-License-Identifier: MIT
# The data path through the switches' forwarding tables (docs/subnet.md):
# the HCA's route cache over the loopback fabric (no softibd).
if(TARGET sib_hca)
  sib_unit_test(test_hca_route SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_route.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hca_loop.c
    LIBS sib_hca sib_link sib_common sib_iba Threads::Threads)
endif()
