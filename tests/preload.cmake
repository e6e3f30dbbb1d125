# SPDX-License-Identifier: MIT
# libsoftib_view.so, the interposer of `softib run` (issue 17 item 2,
# docs/clients.md "The interposer").  The library is never sanitized; the
# test program is (in the ASan build), and puts the ASan runtime first in
# LD_PRELOAD for itself.
if(TARGET softib_view)
  # Every wrapped call from C, plain and fortified (__open_2, __readlink_chk,
  # __getcwd_chk, __realpath_chk); a randomized run of path spellings
  # against a model (SIB_PRELOAD_SEED=N replays one).
  foreach(v test_preload test_preload_fortify)
    add_executable(${v} ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_preload.c)
    target_link_libraries(${v} PRIVATE Threads::Threads)
    add_dependencies(${v} softib_view)
    add_test(NAME ${v} COMMAND ${v} $<TARGET_FILE:softib_view>)
    set_tests_properties(${v} PROPERTIES TIMEOUT 60 LABELS unit)
  endforeach()
  target_compile_options(test_preload PRIVATE -U_FORTIFY_SOURCE -O0)
  target_compile_options(test_preload_fortify PRIVATE -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2 -O2)
  # The fortified build really calls the _FORTIFY_SOURCE entry points.
  add_test(NAME test_preload_fortify_calls COMMAND sh -c
    "nm -u \"$1\" | grep -q __open_2 && nm -u \"$1\" | grep -q __readlink_chk && nm -u \"$1\" | grep -q __getcwd_chk && nm -u \"$1\" | grep -q __realpath_chk"
    sh $<TARGET_FILE:test_preload_fortify>)
  set_tests_properties(test_preload_fortify_calls PROPERTIES TIMEOUT 30 LABELS unit)
  # The statx way of the other ports (no __xstat family there).
  add_dependencies(test_preload softib_view_statx)
  add_test(NAME test_preload_statx COMMAND test_preload $<TARGET_FILE:softib_view_statx>)
  set_tests_properties(test_preload_statx PROPERTIES TIMEOUT 60 LABELS unit
    ENVIRONMENT SIB_PRELOAD_NO_XSTAT=1)
  # Never sanitized, in the ASan build too: it loads into unsanitized programs.
  add_test(NAME preload_unsanitized COMMAND sh -c
    "! nm -D \"$1\" | grep -q -E '__(a|ub)san_' && ! ldd \"$1\" | grep -q -E 'lib(a|ub)san'"
    sh $<TARGET_FILE:softib_view>)
  set_tests_properties(preload_unsanitized PROPERTIES TIMEOUT 30 LABELS unit)
  # Unmodified dash, bash, coreutils, find, python3 and ibstatus in the view.
  sib_itest(preload_shell preload.sh)
  set_tests_properties(preload_shell PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  if(TARGET ibverbs AND TARGET softibd)
    # ucx_info -d lists softib's devices through the interposer, no root.
    sib_itest(preload_ucx_info preload_ucx.sh)
    set_tests_properties(preload_ucx_info PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  endif()
  if(TARGET sib_sysview AND TARGET softibd AND TARGET softib)  # sysview_tree: tests/sysview.cmake
    # Over the live system view: unmodified ibstatus, the system's ibstat,
    # python3, ucx_info, a port down and up (what softib run does, no root).
    sib_itest(preload_sysview preload_sysview.sh)
    set_tests_properties(preload_sysview PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180)
  endif()
endif()
