# SPDX-License-Identifier: MIT
# UD, address handles, GRH and multicast (issue 6 parts 1-2).
if(TARGET sib_hca)
  # UD over the loopback fabric, through the provider API.
  sib_unit_test(test_hca_ud SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_ud.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hca_loop.c
    LIBS sib_hca sib_link sib_common sib_iba Threads::Threads)
endif()
if(TARGET ibverbs AND TARGET softibd AND TARGET softib)
  # Unmodified ibv_ud_pingpong: default size (2048), the MTU (4096), 1 byte,
  # with a GRH (-g 0), with completion events (-e).
  foreach(args "-s 2048" "-s 4096" "-s 1" "-g 0" "-s 4096 -g 0 -e" "-e")
    string(REPLACE " " "" tag "${args}")
    separate_arguments(arglist UNIX_COMMAND "${args}")
    sib_itest(verbs_ud_pingpong${tag} ud_pingpong.sh ${arglist})
  endforeach()
endif()
if(TARGET ibverbs AND TARGET softibd AND TARGET softib)
  # perftest over UD (send only: UD has no RDMA), default and new/old post
  # send APIs, events; -q 4 runs 4 QPs, so -n 125 gives perftest.sh's 500
  # iterations in the result line.  perftest's multicast mode (-g/-M) joins
  # the group through the SA with libibumad (MCMemberRecord), which softib
  # does not serve yet: not run here (the multicast verbs are tested in
  # test_verbs_ud through a private softibd).
  sib_itest(perftest_ud_send_bw perftest.sh ib_send_bw -c UD)
  sib_itest(perftest_ud_send_lat perftest.sh ib_send_lat -c UD)
  sib_itest(perftest_ud_send_bw_q4 perftest.sh ib_send_bw -c UD -q 4)
  sib_itest(perftest_ud_send_bw_events perftest.sh ib_send_bw -c UD -e)
  sib_itest(perftest_ud_send_lat_old_post_send perftest.sh ib_send_lat -c UD --use_old_post_send)
  sib_itest(perftest_ud_send_bw_old_post_send perftest.sh ib_send_bw -c UD --use_old_post_send)
endif()
if(TARGET ibverbs AND TARGET softibd)
  # Through the library against a private softibd: AH errors, replies from
  # a work completion, multicast across two contexts.
  sib_unit_test(test_verbs_ud SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_verbs_ud.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/verbs_harness.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c
    LIBS ibverbs sib_common sib_hca sib_iba)
  target_compile_definitions(test_verbs_ud PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_verbs_ud softibd)
  set_tests_properties(test_verbs_ud PROPERTIES TIMEOUT 120)
endif()
