# SPDX-License-Identifier: MIT
# SRQ and XRC (src/hca/srq.c): transport tests on the loopback fabric,
# verbs-level tests against a private softibd, and the unmodified
# ibv_srq_pingpong, ibv_xsrq_pingpong and perftest --use-srq.
if(TARGET sib_hca)
  sib_unit_test(test_hca_srq SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_srq.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hca_loop.c
    LIBS sib_hca sib_link sib_common sib_iba Threads::Threads)
  # XRC forwarding to another context of the device (src/hca/xrc_fwd.c)
  sib_unit_test(test_hca_xrc_fwd SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_xrc_fwd.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hca_loop.c
    LIBS sib_hca sib_link sib_common sib_iba Threads::Threads)
endif()
if(TARGET ibverbs AND TARGET softibd AND TARGET softib)
  sib_unit_test(test_verbs_srq SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_verbs_srq.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/verbs_harness.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c
    LIBS ibverbs sib_common sib_hca sib_iba)
  target_compile_definitions(test_verbs_srq PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_verbs_srq softibd)
  set_tests_properties(test_verbs_srq PROPERTIES TIMEOUT 120)

  sib_itest(srq_pingpong srq_pingpong.sh ibv_srq_pingpong)
  sib_itest(srq_pingpong_q4 srq_pingpong.sh ibv_srq_pingpong -q 4)
  sib_itest(srq_pingpong_events srq_pingpong.sh ibv_srq_pingpong -e)
  sib_itest(srq_pingpong_s65536_q4_events srq_pingpong.sh ibv_srq_pingpong -s 65536 -q 4 -e)
  sib_itest(xsrq_pingpong srq_pingpong.sh ibv_xsrq_pingpong)
  sib_itest(xsrq_pingpong_events srq_pingpong.sh ibv_xsrq_pingpong -e)
  sib_itest(xsrq_pingpong_3_clients srq_pingpong.sh ibv_xsrq_pingpong -c 3)
  sib_itest(xsrq_pingpong_s65536_mtu1024 srq_pingpong.sh ibv_xsrq_pingpong -s 65536 -m 1024)
  sib_itest(perftest_srq_ib_send_bw perftest_srq.sh ib_send_bw)
  sib_itest(perftest_srq_ib_send_bw_q4 perftest_srq.sh ib_send_bw -q 4)
  sib_itest(perftest_srq_ib_send_lat perftest_srq.sh ib_send_lat)
  sib_itest(perftest_srq_ib_send_bw_events perftest_srq.sh ib_send_bw -e)
  sib_itest(perftest_srq_ib_send_lat_events perftest_srq.sh ib_send_lat -e)
  # perftest -c XRC: XRC_SEND / XRC_RECV QPs on XRC SRQs, every verb
  foreach(tool ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw ib_send_lat ib_read_lat)
    sib_itest(perftest_xrc_${tool} perftest.sh ${tool} -c XRC)
  endforeach()
endif()
