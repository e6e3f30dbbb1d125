# SPDX-License-Identifier: MIT
# The managed fabric (issue 7) end to end: unmodified OpenSM and
# infiniband-diags on our libibumad.so.3 against a private softibd
# (tests/integration/mgmt_lib.sh).  A test exits 77 (skipped) only while a
# piece it needs is not built yet: libibumad.so.3 or softibd --sm external.
if(TARGET softibd AND TARGET softib)
  set(sib_mgmt_tests)
  foreach(topo default two_switch)
    set(f ${topo})
    if(topo STREQUAL two_switch)
      set(f two_switch.topo)
    endif()
    sib_itest(opensm_once_${topo} opensm_once.sh ${f})
    sib_itest(opensm_daemon_${topo} opensm_daemon.sh ${f})
    sib_itest(diags_discover_${topo}_builtin diags_discover.sh ${f} default)
    sib_itest(diags_discover_${topo}_opensm diags_discover.sh ${f} external)
    list(APPEND sib_mgmt_tests opensm_once_${topo} opensm_daemon_${topo}
      diags_discover_${topo}_builtin diags_discover_${topo}_opensm)
  endforeach()
  sib_itest(opensm_portdown opensm_portdown.sh)
  sib_itest(opensm_reroute opensm_reroute.sh)
  sib_itest(diags_smp diags_smp.sh)
  sib_itest(diags_perf diags_perf.sh)
  if(TARGET ibumad)
    # a umad client that registers ServiceRecords and InformInfo (no Debian
    # tool sets them): diags_sa*.sh run it beside saquery
    add_executable(sa_client ${CMAKE_CURRENT_SOURCE_DIR}/integration/sa_client.c)
    target_link_libraries(sa_client PRIVATE ibumad)
  endif()
  sib_itest(diags_sa diags_sa.sh)
  sib_itest(diags_sa_builtin diags_sa_builtin.sh)
  sib_itest(diags_sa_builtin_2sw diags_sa_builtin.sh two_switch.topo)
  sib_itest(diags_ibping diags_ibping.sh)
  sib_itest(perftest_mcast_builtin perftest_mcast.sh builtin)
  sib_itest(perftest_mcast_opensm perftest_mcast.sh external)
  sib_itest(diags_ibportstate_ca diags_ibportstate.sh ca)
  sib_itest(diags_ibportstate_switch diags_ibportstate.sh switch)
  list(APPEND sib_mgmt_tests opensm_portdown opensm_reroute diags_smp diags_perf diags_sa diags_sa_builtin
    diags_sa_builtin_2sw diags_ibping perftest_mcast_builtin perftest_mcast_opensm
    diags_ibportstate_ca diags_ibportstate_switch)
  set_tests_properties(${sib_mgmt_tests} PROPERTIES SKIP_RETURN_CODE 77)
endif()
