# SPDX-License-Identifier: MIT
# The object table protocol (src/common/objtab.c), with a destroy-vs-lookup
# stress test.
if(TARGET sib_common)
  sib_unit_test(test_objtab SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_objtab.c
    LIBS sib_common Threads::Threads)
endif()
