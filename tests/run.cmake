# SPDX-License-Identifier: MIT
# `softib run` (issue 17, docs/clients.md "softib run"): its system view as
# root (a mount namespace) and as an unprivileged uid with env -i and no
# namespace rights (the interposer), tests/integration/softib_run.sh with
# run_lib.sh.  no_userns: a seccomp filter (libseccomp) that refuses
# namespaces as Docker's default profile does.  Root-only (77 otherwise).
find_package(PkgConfig)
if(PkgConfig_FOUND)
  pkg_check_modules(SECCOMP IMPORTED_TARGET libseccomp)
endif()
if(SECCOMP_FOUND)
  add_executable(no_userns ${CMAKE_CURRENT_SOURCE_DIR}/integration/no_userns.c)
  target_link_libraries(no_userns PRIVATE PkgConfig::SECCOMP)
endif()
if(TARGET softib AND TARGET sib_sysview)
  foreach(mode root user)
    foreach(case check view live fabric)
      sib_itest(softib_run_${case}_${mode} softib_run.sh ${case} ${mode})
      set_tests_properties(softib_run_${case}_${mode} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 90)
    endforeach()
  endforeach()
  sib_itest(softib_run_views_root softib_run.sh views root)
  set_tests_properties(softib_run_views_root PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 90)
  sib_itest(softib_run_net_root softib_run.sh net root)
  set_tests_properties(softib_run_net_root PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 150)
endif()
