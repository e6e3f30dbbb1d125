# SPDX-License-Identifier: MIT
# Integration tests of the drop-in libibverbs: unmodified Debian
# ibverbs-utils binaries run through softib with LD_LIBRARY_PATH.
if(TARGET ibverbs AND TARGET softibd AND TARGET softib)
  find_program(IBV_RC_PINGPONG ibv_rc_pingpong REQUIRED)

  # The library's own behaviour, through its public API, against a private softibd.
  # test_verbs_conform: comp_vector, ibv_rereg_mr, capability flags and counters.
  # test_verbs_mix: issue 14's inline/non-inline SEND mix, RC and UD, both post APIs.
  # test_verbs_conform_api: issue 14's CQ cleaning on RESET/destroy, wr_complete, cmd_fd.
  # test_verbs_nosyscall: issue 15, a first packet to a new peer makes no round trip (seccomp).
  # test_verbs_hostile: issue 15, a same-uid process can neither snoop nor stall a connection.
  # test_verbs_write_poll: issue 16, riostream's pattern (one window both the peer's WRITE
  # target and the local source, the last byte watched by a spinning thread); again on
  # the packet path only (SOFTIB_DIRECT=0).
  foreach(t test_verbs test_verbs_conform test_verbs_mix test_verbs_conform_api test_verbs_nosyscall
          test_verbs_hostile test_verbs_write_poll)
    sib_verbs_test(${t})
  endforeach()
  add_test(NAME test_verbs_write_poll_packets COMMAND test_verbs_write_poll)
  set_tests_properties(test_verbs_write_poll_packets PROPERTIES TIMEOUT 300 LABELS unit
    ENVIRONMENT "SOFTIB_DIRECT=0")

  sib_itest(verbs_ibv_devices ibv_devices.sh)
  sib_itest(verbs_no_daemon no_daemon.sh)
  foreach(size 1 4096 65536 1048576)
    sib_itest(verbs_rc_pingpong_s${size} rc_pingpong.sh -s ${size})
    sib_itest(verbs_rc_pingpong_s${size}_events rc_pingpong.sh -s ${size} -e)
  endforeach()
  sib_itest(verbs_rc_pingpong_gid rc_pingpong.sh -g 0)
  sib_itest(verbs_rc_pingpong_mtu4096 rc_pingpong.sh -s 65536 -m 4096)
  sib_itest(verbs_rc_pingpong_new_send_api rc_pingpong.sh -N)
  sib_itest(verbs_kill_server kill_server.sh)
  sib_itest(verbs_hotplug hotplug.sh)

  # A fabric from an ibnetdiscover file: two switches, dual-port CAs.
  sib_itest(verbs_rc_pingpong_2sw_topology rc_pingpong.sh -s 65536)
  set_tests_properties(verbs_rc_pingpong_2sw_topology PROPERTIES ENVIRONMENT
    "${SIB_ITEST_ENV};SIB_TOPOLOGY=${CMAKE_CURRENT_SOURCE_DIR}/data/ibnetdiscover-2sw.topo")

  # perftest (Debian package perftest), unmodified, over RC.
  foreach(tool ib_write_bw ib_read_bw ib_send_bw ib_send_lat ib_write_lat ib_read_lat)
    sib_itest(perftest_${tool} perftest.sh ${tool})
  endforeach()
endif()
