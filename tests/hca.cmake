# SPDX-License-Identifier: MIT
# src/link/ on its own: the inbox ring.
if(TARGET sib_link)
  sib_unit_test(test_ring SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ring.c
    LIBS sib_link Threads::Threads)
endif()

# The transport stages over a loopback link (two in-memory inboxes, a fabric
# map in memory, no softibd), through the provider API: no verbs library.
if(TARGET sib_hca)
  sib_unit_test(test_hca_loopback SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_loopback.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hca_loop.c
    LIBS sib_hca sib_link sib_common sib_iba Threads::Threads)
endif()
if(TARGET sib_hca)
  # The transport tables and key generator, without the verbs library.
  sib_unit_test(test_hca_tables SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_tables.c
    LIBS sib_hca sib_common sib_iba)
endif()
if(TARGET sib_hca)
  # Receive WQEs checked for the bytes written (issue 14 item 3): RC, UC, UD.
  sib_unit_test(test_hca_recv_sge SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_recv_sge.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hca_loop.c
    LIBS sib_hca sib_link sib_common sib_iba Threads::Threads)
endif()
