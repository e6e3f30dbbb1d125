# SPDX-License-Identifier: MIT
# Fabric model (src/subnet/fabric.c): topology parser, writer, LIDs.
if(TARGET sib_subnet)
  sib_unit_test(test_fabric
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_fabric.c
    LIBS sib_subnet)
  target_compile_definitions(test_fabric PRIVATE
    SIB_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data")
endif()
