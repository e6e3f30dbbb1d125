# SPDX-License-Identifier: MIT
# src/iba/ unit tests: wire formats against the research vectors, tables, CRCs.
sib_unit_test(test_iba SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_iba.c LIBS sib_iba ZLIB::ZLIB)
sib_unit_test(test_iba_tables SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_iba_tables.c LIBS sib_iba)
