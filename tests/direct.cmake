# SPDX-License-Identifier: MIT
# Direct placement of RDMA WRITE and READ (src/hca/direct.c, docs/transport.md
# "Direct placement"): over the loopback fabric (hca_loop.c), with inboxes
# owned by this process so that the peers find each other's export tables.
if(TARGET sib_hca)
  sib_unit_test(test_hca_direct SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_direct.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hca_loop.c
    LIBS sib_hca sib_link sib_common sib_iba Threads::Threads)
  # test_sparse registers 64 MiB of sparse memory: past a container's 8 MiB
  # RLIMIT_MEMLOCK without CAP_IPC_LOCK, as on hardware; it tests placement,
  # not the limit (test_memlock), so no accounting.
  set_tests_properties(test_hca_direct PROPERTIES ENVIRONMENT SOFTIB_MEMLOCK=0)
endif()
