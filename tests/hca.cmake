# SPDX-License-Identifier: MIT
# src/link/ on its own: the inbox ring.
if(TARGET sib_link)
  sib_unit_test(test_ring SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ring.c
    LIBS sib_link Threads::Threads)
endif()
