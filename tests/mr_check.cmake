# SPDX-License-Identifier: MIT
# MR access flags and key checks (src/hca/mr_check.c), built from its own
# source so the test does not depend on the rest of sib_hca.
sib_unit_test(test_mr_check
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_mr_check.c
          ${CMAKE_SOURCE_DIR}/src/hca/mr_check.c)
