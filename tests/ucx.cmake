# SPDX-License-Identifier: MIT
# UCX and Open MPI over softib (issue 14, "UCX end to end"): unmodified
# ucx_perftest (Debian ucx-utils) and an MPI ping-pong that checks every
# byte (tests/integration/mpi_pingpong.c, Open MPI's mpicc) run over
# pml ucx, each with UCX_TLS allowing only softib's verbs transports.  UCX
# uses a device only when /dev/infiniband/<dev_name> is a character device,
# and Open MPI's btl openib wants /sys/class/infiniband: the tests run the
# clients under `softib run` (run_lib.sh), as root (its mount namespace)
# and, the *_user tests, as a fresh uid with env -i and no namespaces (its
# interposer); they need root for either and skip (77) without it, or
# without ucx-utils or Open MPI (.ci/deps installs both).
if(TARGET ibverbs AND TARGET softibd AND TARGET softib)
  # The devices' dev_name as the library reports it (the tests' checks).
  add_executable(ibv_devnames ${CMAKE_CURRENT_SOURCE_DIR}/integration/ibv_devnames.c)
  target_include_directories(ibv_devnames PRIVATE ${IBVERBS_INCLUDE_DIR})
  target_link_libraries(ibv_devnames PRIVATE ibverbs)

  sib_itest(ucx_info_devices ucx_info.sh)
  set_tests_properties(ucx_info_devices PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60)

  foreach(tls rc_verbs,ud_verbs ud_verbs)
    string(REPLACE "," "_" tname ${tls})
    foreach(test tag_bw tag_lat)
      foreach(size 8 4096 65536 1048576)
        sib_itest(ucx_perftest_${tname}_${test}_${size} ucx_perftest.sh ${tls} ${test} ${size})
        set_tests_properties(ucx_perftest_${tname}_${test}_${size} PROPERTIES
          SKIP_RETURN_CODE 77 TIMEOUT 90)
      endforeach()
    endforeach()
    # UCP RMA (issue 17): put and get over rc_verbs' RDMA WRITE and READ,
    # or UCX's emulation over active messages with ud_verbs alone.
    foreach(test ucp_put_bw ucp_get)
      foreach(size 8 4096 1048576)
        set(iters 1000)
        if(size EQUAL 1048576)
          set(iters 100)
        endif()
        sib_itest(ucx_perftest_${tname}_${test}_${size} ucx_perftest.sh ${tls} ${test} ${size} ${iters})
        set_tests_properties(ucx_perftest_${tname}_${test}_${size} PROPERTIES
          SKIP_RETURN_CODE 77 TIMEOUT 90)
      endforeach()
    endforeach()
  endforeach()

  # The MPI ping-pong, built with Open MPI's compiler wrapper flags.
  find_package(MPI COMPONENTS C QUIET)
  if(MPI_C_FOUND)
    add_executable(mpi_pingpong ${CMAKE_CURRENT_SOURCE_DIR}/integration/mpi_pingpong.c)
    target_link_libraries(mpi_pingpong PRIVATE MPI::MPI_C)
    set(sib_mpi_prog $<TARGET_FILE:mpi_pingpong>)
    # Collectives of checked data (issue 17): allreduce, bcast, alltoall.
    add_executable(mpi_allreduce ${CMAKE_CURRENT_SOURCE_DIR}/integration/mpi_allreduce.c)
    target_link_libraries(mpi_allreduce PRIVATE MPI::MPI_C)
    set(sib_mpi_allreduce $<TARGET_FILE:mpi_allreduce>)
  else()
    set(sib_mpi_prog none)
    set(sib_mpi_allreduce none)
  endif()
  foreach(tls rc_verbs,ud_verbs ud_verbs)
    string(REPLACE "," "_" tname ${tls})
    sib_itest(ucx_mpi_pingpong_${tname} ucx_mpi.sh ${tls} ${sib_mpi_prog})
    set_tests_properties(ucx_mpi_pingpong_${tname} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 90)
    # The same through mpi4py (Debian python3-mpi4py).
    sib_itest(ucx_mpi4py_${tname} ucx_mpi.sh ${tls} /usr/bin/python3
      ${CMAKE_CURRENT_SOURCE_DIR}/integration/mpi_pingpong.py)
    set_tests_properties(ucx_mpi4py_${tname} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 90)
    # mpirun -np 4, rank N on softibN:1 (issue 17).
    sib_itest(ucx_mpi_allreduce_${tname} ucx_mpi.sh -n 4 ${tls} ${sib_mpi_allreduce})
    set_tests_properties(ucx_mpi_allreduce_${tname} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  endforeach()
  # Open MPI's btl openib (pml ob1): UDCM over UD QPs, SRQs, eager RDMA,
  # RDMA put/get; rank 0 on softib0:1, rank 1 on softib1:1 (issue 17).
  sib_itest(openib_mpi_pingpong openib_mpi.sh ${sib_mpi_prog})
  set_tests_properties(openib_mpi_pingpong PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  # The same with per-peer QPs only (no SRQ).
  sib_itest(openib_mpi_pingpong_ppqp openib_mpi.sh -q P,128,256,192,128:P,65536,256,192,128
    ${sib_mpi_prog})
  set_tests_properties(openib_mpi_pingpong_ppqp PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  # The RDMA pipeline protocol: each fragment registered while the previous
  # one lands (what test_verbs_regmove reproduces).
  sib_itest(openib_mpi_pingpong_pipeline openib_mpi.sh -m mpi_leave_pinned=0 ${sib_mpi_prog})
  set_tests_properties(openib_mpi_pingpong_pipeline PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  sib_itest(openib_mpi_allreduce openib_mpi.sh -n 4 ${sib_mpi_allreduce})
  set_tests_properties(openib_mpi_allreduce PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)

  # The same clients as a fresh unprivileged uid with env -i, no
  # capabilities and no namespaces (SIB_RUN_MODE=user, run_lib.sh):
  # softib run's interposer path, as in a default Docker container.
  macro(sib_user_itest name)
    sib_itest(${name} ${ARGN})
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
      ENVIRONMENT "${SIB_ITEST_ENV};SIB_RUN_MODE=user")
  endmacro()
  sib_user_itest(ucx_info_devices_user ucx_info.sh)
  sib_user_itest(ucx_perftest_rc_verbs_ud_verbs_tag_bw_65536_user ucx_perftest.sh
    rc_verbs,ud_verbs tag_bw 65536)
  sib_user_itest(ucx_perftest_ud_verbs_tag_lat_8_user ucx_perftest.sh ud_verbs tag_lat 8)
  sib_user_itest(ucx_perftest_rc_verbs_ud_verbs_ucp_put_bw_4096_user ucx_perftest.sh
    rc_verbs,ud_verbs ucp_put_bw 4096)
  sib_user_itest(ucx_perftest_rc_verbs_ud_verbs_ucp_get_8_user ucx_perftest.sh
    rc_verbs,ud_verbs ucp_get 8)
  sib_user_itest(ucx_mpi_pingpong_rc_verbs_ud_verbs_user ucx_mpi.sh rc_verbs,ud_verbs
    ${sib_mpi_prog})
  sib_user_itest(ucx_mpi_allreduce_rc_verbs_ud_verbs_user ucx_mpi.sh -n 4 rc_verbs,ud_verbs
    ${sib_mpi_allreduce})
  sib_user_itest(openib_mpi_pingpong_user openib_mpi.sh ${sib_mpi_prog})
  sib_user_itest(openib_mpi_allreduce_user openib_mpi.sh -n 4 ${sib_mpi_allreduce})
endif()

# What UCX found, reproduced through the verbs API alone.
# test_verbs_inline0: inline SENDs with zero-length pieces at address NULL.
# test_verbs_qpstate: ibv_qp.state follows modify/query only, as in rdma-core.
# test_verbs_regmove: receives placed while reg_mr moves their pages onto a
#   memfd (Open MPI btl openib's pipeline fragments; SOFTIB_REGMOVE_SEED).
if(TARGET ibverbs AND TARGET softibd)
  foreach(t test_verbs_inline0 test_verbs_qpstate test_verbs_regmove)
    sib_verbs_test(${t})
  endforeach()
endif()

# test_verbs_dlclose: libibverbs.so.1 dlclose'd with a context open (Open
# MPI's btl openib at MPI_Finalize): the library stays mapped (-z nodelete),
# its engine threads keep running.  dlopen()s the built library itself.
if(TARGET ibverbs AND TARGET softibd)
  sib_unit_test(test_verbs_dlclose SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_verbs_dlclose.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon_fixture.c LIBS ${CMAKE_DL_LIBS})
  target_include_directories(test_verbs_dlclose PRIVATE ${IBVERBS_INCLUDE_DIR})
  target_compile_definitions(test_verbs_dlclose PRIVATE SOFTIBD_PATH="$<TARGET_FILE:softibd>"
    LIBIBVERBS_PATH="$<TARGET_FILE:ibverbs>")
  add_dependencies(test_verbs_dlclose softibd ibverbs)
  # it leaves its context and device list behind on purpose
  set_tests_properties(test_verbs_dlclose PROPERTIES ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()
