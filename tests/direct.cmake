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

# No softib memory through /proc (docs/threat-model.md): a same-uid
# process walks a verbs process's /proc/<pid>/fd and tries to write and
# hole-punch its registered pages; softibd's DX_GET refuses a connection
# without a QP towards the owner (EPERM).
if(TARGET ibverbs AND TARGET softibd)
  sib_unit_test(test_dx_probe SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_dx_probe.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/verbs_harness.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/status_text.c
    LIBS ibverbs sib_common sib_hca sib_iba Threads::Threads)
  target_compile_definitions(test_dx_probe PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_dx_probe softibd)
  set_tests_properties(test_dx_probe PROPERTIES TIMEOUT 120)
endif()
