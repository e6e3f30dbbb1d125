# SPDX-License-Identifier: MIT
# src/iba/ MAD layer unit tests: the verified vectors of
# ../shared/research/mad-vectors (tests/data/mad_vectors.h), field tables,
# directed-route SMI rules (IBA 14.2.2).
sib_unit_test(test_mad SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_mad.c LIBS sib_iba)
