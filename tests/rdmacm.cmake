# SPDX-License-Identifier: MIT
# The drop-in librdmacm.so.1 (src/rdmacm/, docs/rdmacm.md):
#   test_rsocket         rsockets end to end in one process (RS_SEED);
#   test_rdmacm          layouts, rdma_event_str, ENODEV without a device,
#                        rdma_getaddrinfo, devices, channels and ids against
#                        a private softibd (no connection partner);
#   abi_rdmacm_exports   its export table against rdma-core v44's (the
#                        checked-in table and the system library's, read
#                        with objdump; never linked or loaded);
#   rdmacm_*             unmodified rdmacm-utils and perftest clients, two
#                        processes each, through LD_LIBRARY_PATH (rdmacm.sh);
#                        mckey under the built-in SM and OpenSM (rdmacm_mcast.sh).
if(NOT TARGET rdmacm)
  return()
endif()
sib_unit_test(test_rdmacm SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_rdmacm.c
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c
  LIBS rdmacm ibverbs Threads::Threads)
target_compile_definitions(test_rdmacm PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
add_dependencies(test_rdmacm softibd)
# rsockets (docs/rdmacm.md "rsockets"): both ends in one process, a raw
# rdma_cm peer that breaks the wire protocol, and a randomized stream test
# (RS_SEED replays it).
sib_unit_test(test_rsocket SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_rsocket.c
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c
  LIBS rdmacm ibverbs Threads::Threads)
target_include_directories(test_rsocket PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(test_rsocket PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
add_dependencies(test_rsocket softibd)
set_tests_properties(test_rsocket PROPERTIES TIMEOUT 120)

find_program(SIB_RDMACM_OBJDUMP objdump REQUIRED)
find_program(SIB_RDMACM_READELF readelf REQUIRED)
find_file(SIB_SYSTEM_LIBRDMACM librdmacm.so.1 PATHS /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib NO_DEFAULT_PATH)
if(NOT SIB_SYSTEM_LIBRDMACM)
  set(SIB_SYSTEM_LIBRDMACM "")
endif()
add_test(NAME abi_rdmacm_exports
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/abi/check_rdmacm_exports.sh
          $<TARGET_FILE:rdmacm> ${CMAKE_CURRENT_LIST_DIR}/abi/librdmacm.expected
          ${SIB_SYSTEM_LIBRDMACM})
set_tests_properties(abi_rdmacm_exports PROPERTIES TIMEOUT 60 LABELS abi
  ENVIRONMENT "OBJDUMP=${SIB_RDMACM_OBJDUMP};READELF=${SIB_RDMACM_READELF}")

# Unmodified clients (Debian rdmacm-utils, perftest), in the order of value
# of issue 16: rping, its reject, rping -q, ucmatose, rdma_server/client,
# udaddy (SIDR), perftest -R, and per-device addresses.
find_program(SIB_RPING rping)
if(SIB_RPING)
  foreach(c rping rping_two rping_reject rping_q ucmatose ucmatose_migrate rdma_server udaddy rping_dev)
    sib_itest(rdmacm_${c} rdmacm.sh ${c})
  endforeach()
  # mckey: multicast through the built-in SM's SA and OpenSM's (77: no umad)
  sib_itest(rdmacm_mckey rdmacm_mcast.sh builtin)
  sib_itest(rdmacm_mckey_opensm rdmacm_mcast.sh external)
  set_tests_properties(rdmacm_mckey rdmacm_mckey_opensm PROPERTIES SKIP_RETURN_CODE 77)
else()
  message(STATUS "rdmacm integration tests skipped: no rping (Debian rdmacm-utils)")
endif()
# rsockets: Debian's rstream and riostream, unmodified (rdmacm-utils)
find_program(SIB_RSTREAM rstream)
if(SIB_RSTREAM)
  foreach(c rstream rstream_b rstream_nb rstream_async riostream riostream_b riostream_async
          riostream_small)
    sib_itest(rdmacm_${c} rdmacm.sh ${c})
  endforeach()
  set_tests_properties(rdmacm_rstream PROPERTIES TIMEOUT 300)
endif()
find_program(SIB_IB_SEND_BW ib_send_bw)
if(SIB_IB_SEND_BW)
  sib_itest(rdmacm_send_bw rdmacm.sh send_bw)
  sib_itest(rdmacm_send_bw_ud rdmacm.sh send_bw_ud)
  sib_itest(rdmacm_write_lat rdmacm.sh write_lat)
endif()
if(EXISTS /usr/lib/python3/dist-packages/pyverbs)
  # pyverbs CMID programs: synchronous ids, an event channel, reject, the
  # UDP port space, an external QP, multicast; on 127.0.0.1 and (_dev)
  # server on softib0's 127.1.0.1, client on softib1's 127.1.1.1
  foreach(c cmid async reject udp extqp mcast)
    sib_itest(rdmacm_pyverbs_${c} rdmacm.sh pyverbs_${c})
    sib_itest(rdmacm_pyverbs_${c}_dev rdmacm.sh pyverbs_${c}_dev)
  endforeach()
  # a peer SIGKILLed mid-handshake (server with a CONNECT_REQUEST, client
  # after its REQ, client after the REP): the survivor ends, ids go to 0
  foreach(c server_dies client_dies_req client_dies_rep)
    sib_itest(rdmacm_fault_${c} rdmacm.sh fault_${c})
    sib_itest(rdmacm_fault_${c}_dev rdmacm.sh fault_${c}_dev)
  endforeach()
endif()
# IP addresses at run time (issue 16 item 4): `softib ipoib DEV PORT
# add|del|addrs`, rping on an added address, a bind after del fails; `up
# --addr` registers its address while the bridge runs (root, else 77)
if(SIB_RPING)
  sib_itest(rdmacm_ipaddr rdmacm_ipaddr.sh tool)
  set_tests_properties(rdmacm_ipaddr PROPERTIES SKIP_RETURN_CODE 77)
endif()
if(TARGET sib_ipoib)
  sib_itest(rdmacm_ipaddr_up rdmacm_ipaddr.sh up_addr)
  set_tests_properties(rdmacm_ipaddr_up PROPERTIES SKIP_RETURN_CODE 77)
endif()
sib_itest(rdmacm_ipaddr_topology rdmacm_ipaddr.sh topology)
