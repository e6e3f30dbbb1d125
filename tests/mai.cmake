# SPDX-License-Identifier: MIT
# MAI pure part (src/mai/, include/softib/mai.h): stream and wire round
# trips, hostile streams, the filter engine.
sib_unit_test(test_mai SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_mai.c LIBS sib_mai)
