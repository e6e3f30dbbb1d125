# SPDX-License-Identifier: MIT
# src/hca/ pieces that stand alone: the inbox ring.
if(TARGET sib_hca)
  sib_unit_test(test_ring SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ring.c
    LIBS sib_hca Threads::Threads)
endif()
