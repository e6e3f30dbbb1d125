# SPDX-License-Identifier: MIT
# The pyverbs program of issue 6 (tests/integration/pyverbs_hca.py): Debian's
# python3-pyverbs, run by /usr/bin/python3, on our libibverbs between two
# processes.  One CTest per section; a section joins PYVERBS_SECTIONS when its
# feature is on main (the others SKIP today: run them by hand with
# `pyverbs_hca.py SECTION` against a softibd).
set(PYVERBS_SECTIONS rc)
set(PYVERBS_SECTIONS_PENDING ud srq xrc atomic mw mcast)
if(TARGET ibverbs AND TARGET softibd AND TARGET softib AND EXISTS /usr/bin/python3)
  if(SOFTIB_SANITIZE)
    set(sib_py_san ON)
  else()
    set(sib_py_san OFF)
  endif()
  foreach(s ${PYVERBS_SECTIONS})
    add_test(NAME pyverbs_${s}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/pyverbs.sh ${s})
    set_tests_properties(pyverbs_${s} PROPERTIES TIMEOUT 180 LABELS integration
      SKIP_RETURN_CODE 77
      ENVIRONMENT "SIB_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY};SIB_LIB=${CMAKE_LIBRARY_OUTPUT_DIRECTORY};SIB_SANITIZE=${sib_py_san}")
  endforeach()
endif()
