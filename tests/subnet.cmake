# SPDX-License-Identifier: MIT
# The managed subnet (src/subnet/subnet.c): defaults of a powered fabric and
# LID routing through the LFTs, every verdict.
if(TARGET sib_subnet)
  sib_unit_test(test_subnet
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_subnet.c
    LIBS sib_subnet sib_iba)
  target_compile_definitions(test_subnet PRIVATE
    SIB_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data")
endif()

# The SMA, PMA and built-in SM of the sib_subnet archive without a daemon
# (a host table of the test's; softibd's publishing with the map writers and
# events stubbed): the mad-vectors that apply, every status, the port
# state machine, M_Key, the PMA's clearing, the sweep.
if(TARGET sib_subnet)
  sib_unit_test(test_sma
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_sma.c ${CMAKE_SOURCE_DIR}/src/daemon/sma_publish.c
    LIBS sib_subnet sib_mai sib_iba)
  target_include_directories(test_sma PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/data)
  target_compile_definitions(test_sma PRIVATE
    SIB_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data")
endif()

# softibd --sm external with the unmodified ibv_devinfo.
if(TARGET softibd AND TARGET softib AND TARGET ibverbs)
  sib_itest(sm_external sm_external.sh)
endif()

# The subnet layer's interface to its host (subnet_api.c) without softibd:
# load and sweep, nodes, a CA added and removed, route lookups, counters.
if(TARGET sib_subnet)
  sib_unit_test(test_subnet_api
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_subnet_api.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/fake_subnet_host.c
    LIBS sib_subnet sib_mai sib_iba)
endif()

# The built-in SM's SA (src/subnet/sa_agent.c) through the MAD router without
# softibd: ClassPortInfo, NodeRecord, PortInfoRecord and PathRecord by Get and
# GetTable, ComponentMask filters, RMPP segments reassembled, statuses, and
# malformed SA MADs dropped and counted.
if(TARGET sib_subnet)
  sib_unit_test(test_sa_agent
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_sa_agent.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/fake_subnet_host.c
    LIBS sib_subnet sib_mai sib_iba)
  target_compile_definitions(test_sa_agent PRIVATE
    SIB_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data")
endif()

# The built-in SA's ServiceRecords (leases on the test's clock), InformInfo
# and the Reports of traps 64-67 and of the SMAs' traps forwarded (128, 144;
# repeats suppressed as OpenSM does) (retries, ReportResp), members of ports
# gone leaving their groups, and a randomized model check (SIB_SEED=N).
if(TARGET sib_subnet)
  sib_unit_test(test_sa_notice
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_sa_notice.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/fake_subnet_host.c
    LIBS sib_subnet sib_mai sib_iba)
endif()

# The IB CM (issue 16 item 2): the CM MAD layouts (src/iba/cm.c) from
# hand-built bytes, and the CM agent (src/subnet/cm.c) between CA ports of
# the default fabric through the MAD router: REQ/REP/RTU, REJ, DREQ/DREP,
# TimeWait, retries, MRA, SIDR, destroy, hostile MADs, and a randomized
# model check, test_cm_random (seed printed; `test_cm_random --seed N` or
# CM_SEED=N replays it, CM_RUNS=N runs N seeds).
if(TARGET sib_subnet)
  sib_unit_test(test_cm
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_cm.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/cm_fixture.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/fake_subnet_host.c
    LIBS sib_subnet sib_mai sib_iba)
  sib_unit_test(test_cm_random
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_cm_random.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/cm_fixture.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/fake_subnet_host.c
    LIBS sib_subnet sib_mai sib_iba)
endif()

# The rdma_cm (issue 16 items 3 and 4): src/subnet/cma.c and cma_conn.c over
# the IB CM and the MAD router of the default fabric, with a fake host:
# addresses and bind rules, resolution (the PathRecord query through the
# SA), connect/accept/RTU, reject, no listener, disconnect, TimeWait, SIDR,
# rdma_init_qp_attr, destroy in a handshake, owner cleanup, UNREACHABLE.
if(TARGET sib_subnet)
  sib_unit_test(test_cma
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_cma.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/fake_subnet_host.c
    LIBS sib_subnet sib_mai sib_iba)
endif()

# The rdma_cm's address table at run time (issue 16 item 4): add, delete,
# list, flush, errors as `ip addr`, bind after delete, connections and
# listeners surviving a delete, randomized against a model (CMA_ADDR_SEED).
if(TARGET sib_subnet)
  sib_unit_test(test_cma_addr
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_cma_addr.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/fake_subnet_host.c
    LIBS sib_subnet sib_mai sib_iba)
endif()
