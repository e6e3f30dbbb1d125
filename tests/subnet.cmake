# SPDX-License-Identifier: MIT
# The managed subnet (src/daemon/subnet.c): defaults of a powered fabric and
# LID routing through the LFTs, every verdict.
if(TARGET sib_fabric)
  sib_unit_test(test_subnet
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_subnet.c
    LIBS sib_fabric sib_iba)
  target_compile_definitions(test_subnet PRIVATE
    SIB_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data")
endif()
