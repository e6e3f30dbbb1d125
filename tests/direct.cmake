# SPDX-License-Identifier: MIT
# Direct placement of RDMA WRITE and READ (src/hca/direct.c, docs/transport.md
# "Direct placement"): over the loopback fabric (hca_loop.c), with inboxes
# owned by this process so that the peers find each other's export tables.
if(TARGET sib_hca)
  sib_unit_test(test_hca_direct SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_direct.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hca_loop.c
    LIBS sib_hca sib_link sib_common sib_iba Threads::Threads)
endif()
