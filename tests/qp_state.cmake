# SPDX-License-Identifier: MIT
# QP transition table (src/hca/qp_state.c), built from its own source so the
# test does not depend on the rest of sib_hca.
sib_unit_test(test_qp_state
  SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_qp_state.c
          ${CMAKE_SOURCE_DIR}/src/hca/qp_state.c)
