# SPDX-License-Identifier: MIT
# src/iba/sa.c unit tests: SA record layouts against the verified NodeRecord
# vectors, ComponentMask bits, RMPP segmentation and reassembly (IBA 13.6).
sib_unit_test(test_sa SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_sa.c LIBS sib_iba)
