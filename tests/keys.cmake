# SPDX-License-Identifier: MIT
# Issue 14 items 5 and 6 through the built library against a private softibd:
# privileged Q_Keys (softibd's CAPABLE, docs/threat-model.md "Privilege") and
# the device limits ibv_query_device reports, each created up to its value.
if(TARGET ibverbs AND TARGET softibd)
  foreach(t test_verbs_keys test_verbs_limits)
    sib_verbs_test(${t} TIMEOUT 300)
  endforeach()
  # test_verbs_limits registers max_mr (65,534) MRs to reach the table's
  # ENOMEM: 256 MiB of pages, which RLIMIT_MEMLOCK would stop first without
  # CAP_IPC_LOCK (as on hardware); it tests the table, so no accounting.
  set_tests_properties(test_verbs_limits PROPERTIES ENVIRONMENT SOFTIB_MEMLOCK=0)
endif()

# Unmodified ibacm as root on the default fabric under OpenSM, in a mount
# namespace with a private /run (tests/integration/ibacm.sh); 77 when not root.
if(TARGET ibverbs AND TARGET softibd AND TARGET softib)
  sib_itest(ibacm ibacm.sh)
  set_tests_properties(ibacm PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180)
endif()
