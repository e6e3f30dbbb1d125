# SPDX-License-Identifier: MIT
# UC (issue 6 part 3), the QP surface (part 8) and the perftest sweep.
if(TARGET sib_hca)
  # The UC transport over the loopback fabric of hca_loop.[ch].
  sib_unit_test(test_hca_uc SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_uc.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hca_loop.c
    LIBS sib_hca sib_link sib_common sib_iba Threads::Threads)
endif()
if(TARGET sib_hca)
  # ibv_query_qp, modify masks, SQD and SQE over the same loopback fabric.
  sib_unit_test(test_qp_surface SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_qp_surface.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hca_loop.c
    LIBS sib_hca sib_link sib_common sib_iba Threads::Threads)
endif()
