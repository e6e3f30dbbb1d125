# SPDX-License-Identifier: MIT
# A new user's first commands (issue 5 item 6): no SOFTIB_* or
# XDG_RUNTIME_DIR, no socket directory yet, as another uid via setpriv.
# Skipped (77) when not root or without setpriv.
if(TARGET ibverbs AND TARGET softibd AND TARGET softib)
  if(SOFTIB_SANITIZE)
    set(sib_user_san ON)
  else()
    set(sib_user_san OFF)
  endif()
  add_test(NAME daemon_new_user
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/new_user.sh)
  set_tests_properties(daemon_new_user PROPERTIES TIMEOUT 180 LABELS integration
    SKIP_RETURN_CODE 77
    ENVIRONMENT "SIB_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY};SIB_LIB=${CMAKE_LIBRARY_OUTPUT_DIRECTORY};SIB_SANITIZE=${sib_user_san}")
endif()
