# SPDX-License-Identifier: MIT
# Integration tests of issue 6's UC part and the perftest sweep: unmodified
# ibv_uc_pingpong and perftest through softib (server on softib0, client on
# softib1).
if(TARGET ibverbs AND TARGET softibd AND TARGET softib)
  find_program(IBV_UC_PINGPONG ibv_uc_pingpong)
  if(IBV_UC_PINGPONG)
    sib_itest(verbs_uc_pingpong uc_pingpong.sh)
    sib_itest(verbs_uc_pingpong_events uc_pingpong.sh -e)
    sib_itest(verbs_uc_pingpong_chk uc_pingpong.sh -c)
    foreach(size 1 65536 1048576)
      sib_itest(verbs_uc_pingpong_s${size} uc_pingpong.sh -s ${size} -c)
      sib_itest(verbs_uc_pingpong_s${size}_events uc_pingpong.sh -s ${size} -e)
    endforeach()
    sib_itest(verbs_uc_pingpong_mtu4096_gid uc_pingpong.sh -s 65536 -m 4096 -g 0)
  endif()

  # perftest beyond the RC defaults of verbs.cmake (perftest.sh passes the
  # arguments to both sides).  -e exists for SEND and READ only (perftest
  # refuses events on WRITE).
  foreach(tool ib_send_bw ib_write_bw ib_send_lat ib_write_lat)
    sib_itest(perftest_${tool}_uc perftest.sh ${tool} -c UC)
  endforeach()
  foreach(tool ib_send_bw ib_write_bw ib_read_bw)
    sib_itest(perftest_${tool}_q4 perftest.sh ${tool} -q 4)
  endforeach()
  sib_itest(perftest_ib_send_bw_uc_q4 perftest.sh ib_send_bw -c UC -q 4)
  sib_itest(perftest_ib_write_bw_uc_q4 perftest.sh ib_write_bw -c UC -q 4)
  foreach(tool ib_send_bw ib_read_bw ib_send_lat ib_read_lat)
    sib_itest(perftest_${tool}_events perftest.sh ${tool} -e)
  endforeach()
  sib_itest(perftest_ib_send_bw_uc_events perftest.sh ib_send_bw -c UC -e)
  foreach(tool ib_send_bw ib_write_bw ib_read_bw ib_send_lat ib_write_lat ib_read_lat)
    sib_itest(perftest_${tool}_old_post_send perftest.sh ${tool} --use_old_post_send)
  endforeach()
  sib_itest(perftest_ib_write_bw_uc_old_post_send perftest.sh ib_write_bw -c UC --use_old_post_send)
endif()
