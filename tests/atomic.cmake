# SPDX-License-Identifier: MIT
# Atomics and memory windows (issue 6 parts 6 and 7): the transport over the
# loopback fabric (hca_loop.c), and unmodified perftest atomics end to end.
if(TARGET sib_hca)
  sib_unit_test(test_hca_atomic SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_atomic.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hca_loop.c
    LIBS sib_hca sib_link sib_common sib_iba Threads::Threads)
  sib_unit_test(test_hca_mw SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_mw.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hca_loop.c
    LIBS sib_hca sib_link sib_common sib_iba Threads::Threads)
endif()

# ib_atomic_{bw,lat}: FETCH_AND_ADD (the default) and CMP_AND_SWAP.
if(TARGET ibverbs AND TARGET softibd AND TARGET softib)
  foreach(tool ib_atomic_bw ib_atomic_lat)
    sib_itest(perftest_${tool} perftest_atomic.sh ${tool})
    sib_itest(perftest_${tool}_cmp_swap perftest_atomic.sh ${tool} -A CMP_AND_SWAP)
  endforeach()
endif()
