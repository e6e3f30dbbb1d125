# SPDX-License-Identifier: MIT
# IPoIB as a verbs ULP (issue 16 items 4-5, docs/ipoib.md).
if(TARGET sib_ipoib_wire)
  # The pure parts: wire formats, SA records, the neighbour table.
  sib_unit_test(test_ipoib_wire SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ipoib_wire.c
    LIBS sib_ipoib_wire)
endif()
if(TARGET sib_ipoib AND TARGET softibd)
  # The endpoint without a TUN (no root): join, ARP, delivery, a request
  # handled while the send ring is full.
  sib_unit_test(test_ipoib_ep SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ipoib_ep.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c LIBS sib_ipoib)
  target_compile_definitions(test_ipoib_ep PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_ipoib_ep softibd)
  # Connected mode without a TUN (no root): RC connections both ways, hostile
  # peers through librdmacm (bad private data, no RTU, too-long messages),
  # a randomized run against a model (SIB_IPOIB_CM_SEED replays one).
  sib_unit_test(test_ipoib_cm SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ipoib_cm.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c LIBS sib_ipoib)
  target_compile_definitions(test_ipoib_cm PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>")
  add_dependencies(test_ipoib_cm softibd)
  set_tests_properties(test_ipoib_cm PROPERTIES TIMEOUT 180)
endif()
if(TARGET sib_ipoib AND TARGET softib AND TARGET softibd)
  # Two network namespaces, `softib ipoib DEV 1 up --tun ib0` in each: ping
  # both ways, 100 MB over TCP checked by SHA-256, tshark decodes the
  # capture as InfiniBand with ARP and IPv4 (root, /dev/net/tun: else 77).
  sib_itest(ipoib_netns ipoib_netns.sh)
  set_tests_properties(ipoib_netns PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 240)
  # The same under OpenSM (softibd --sm external): its SA, its broadcast group.
  sib_itest(ipoib_netns_opensm ipoib_netns.sh external)
  set_tests_properties(ipoib_netns_opensm PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 240)
endif()
if(TARGET sib_ipoib AND TARGET softib AND TARGET softibd)
  # Connected mode (RFC 4755) in two network namespaces: ping, 100 MB over TCP
  # checked by SHA-256, CM REQ/REP/RTU decoded by tshark; then one side in
  # datagram mode: UD between them, ICMP too-big (root, /dev/net/tun: else 77).
  sib_itest(ipoib_cm ipoib_cm.sh)
  # The same under OpenSM (softibd --sm external).
  sib_itest(ipoib_cm_opensm ipoib_cm.sh external)
  set_tests_properties(ipoib_cm ipoib_cm_opensm PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
