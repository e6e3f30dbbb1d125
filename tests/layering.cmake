# SPDX-License-Identifier: MIT
# The layering check (tests/layering.sh): no static library may need a
# symbol that only a layer above it defines.  iba <- common <- link <- hca
# <- verbs; softibd sits on subnet/link/mai/common/iba; sib_subnet on
# mai/common/iba; sib_mai on iba/common.  sib_link is checked once it exists.
if(TARGET sib_iba AND TARGET sib_common AND TARGET sib_hca AND TARGET ibverbs AND TARGET softibd)
  set(sib_layers
    "sib_iba=$<TARGET_FILE:sib_iba>=sib_iba"
    "sib_common=$<TARGET_FILE:sib_common>=sib_common,sib_iba")
  if(TARGET sib_mai)
    # MAI's pure part (include/softib/mai.h) sits on common and iba only.
    list(APPEND sib_layers "sib_mai=$<TARGET_FILE:sib_mai>=sib_mai,sib_common,sib_iba")
  endif()
  set(sib_low sib_common,sib_iba)
  if(TARGET sib_link)
    list(APPEND sib_layers "sib_link=$<TARGET_FILE:sib_link>=sib_link,sib_common,sib_iba")
    set(sib_low sib_link,sib_common,sib_iba)
  endif()
  list(APPEND sib_layers "sib_hca=$<TARGET_FILE:sib_hca>=sib_hca,${sib_low}")
  if(TARGET sib_subnet AND TARGET sib_mai)
    # The managed fabric (src/subnet) sits on mai, common and iba; it calls
    # softibd only through the host table it is given (subnet_api.h).
    list(APPEND sib_layers "sib_subnet=$<TARGET_FILE:sib_subnet>=sib_subnet,sib_mai,sib_common,sib_iba")
  endif()
  add_test(NAME layering COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/layering.sh
    --above $<TARGET_FILE:ibverbs> --above $<TARGET_FILE:softibd>
    --ldd $<TARGET_FILE:ibverbs> --ldd $<TARGET_FILE:softibd>
    ${sib_layers})
  set_tests_properties(layering PROPERTIES TIMEOUT 60 LABELS unit)
endif()
