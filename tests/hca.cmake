# SPDX-License-Identifier: MIT
# src/hca/ pieces that stand alone: the inbox ring.
if(TARGET sib_hca)
  sib_unit_test(test_ring SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ring.c
    LIBS sib_hca Threads::Threads)
endif()

# The transport stages over a loopback link (two in-memory inboxes, a fabric
# map in memory, no softibd), through the provider API: no verbs library.
if(TARGET sib_hca)
  sib_unit_test(test_hca_loopback SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_loopback.c
    LIBS sib_hca sib_common sib_iba Threads::Threads)
endif()
