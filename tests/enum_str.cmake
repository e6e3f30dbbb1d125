# SPDX-License-Identifier: MIT
# Exported enum-to-string and rate helpers of the drop-in libibverbs
# (src/verbs/enum_str.c), compiled straight into the test, not via the library.
sib_unit_test(test_enum_str
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_enum_str.c
          ${CMAKE_SOURCE_DIR}/src/verbs/enum_str.c)
