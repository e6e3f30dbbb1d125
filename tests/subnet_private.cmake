# SPDX-License-Identifier: MIT
# The subnet layer's context is private (tests/subnet_private.py): no file of
# src/ or tools/ outside src/subnet/ includes subnet_int.h or uses a field of
# struct sib_subnet; the selftest shows a scratch use of each kind is caught.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  set(sib_sn_private_args --source-dir ${CMAKE_SOURCE_DIR})
  add_test(NAME subnet_private COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/subnet_private.py ${sib_sn_private_args})
  add_test(NAME subnet_private_selftest COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/subnet_private.py ${sib_sn_private_args} --selftest)
  set_tests_properties(subnet_private subnet_private_selftest PROPERTIES TIMEOUT 60 LABELS unit)
endif()
