# SPDX-License-Identifier: MIT
# The docs stay true: every source file has its row in docs/architecture.md.
add_test(NAME docs_files COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/docs_files.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(docs_files PROPERTIES TIMEOUT 30 LABELS unit)
