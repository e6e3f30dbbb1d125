# SPDX-License-Identifier: MIT
# UD, address handles, GRH and multicast (issue 6 parts 1-2).
if(TARGET sib_hca)
  # UD over the loopback fabric, through the provider API.
  sib_unit_test(test_hca_ud SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hca_ud.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hca_loop.c
    LIBS sib_hca sib_link sib_common sib_iba Threads::Threads)
endif()
if(TARGET ibverbs AND TARGET softibd AND TARGET softib)
  if(SOFTIB_SANITIZE)
    set(sib_ud_san ON)
  else()
    set(sib_ud_san OFF)
  endif()
  function(sib_ud_itest name script)
    add_test(NAME ${name} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/${script} ${ARGN})
    set_tests_properties(${name} PROPERTIES TIMEOUT 180 LABELS integration ENVIRONMENT
      "SIB_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY};SIB_LIB=${CMAKE_LIBRARY_OUTPUT_DIRECTORY};SIB_SANITIZE=${sib_ud_san}")
  endfunction()
  # Unmodified ibv_ud_pingpong: default size (2048), the MTU (4096), 1 byte,
  # with a GRH (-g 0), with completion events (-e).
  foreach(args "-s 2048" "-s 4096" "-s 1" "-g 0" "-s 4096 -g 0 -e" "-e")
    string(REPLACE " " "" tag "${args}")
    separate_arguments(arglist UNIX_COMMAND "${args}")
    sib_ud_itest(verbs_ud_pingpong${tag} ud_pingpong.sh ${arglist})
  endforeach()
endif()
