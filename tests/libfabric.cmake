# SPDX-License-Identifier: MIT
# libfabric's verbs provider (Debian libfabric-bin 1.17) over softib's
# libibverbs.so.1 and librdmacm.so.1 (tests/integration/libfabric.sh,
# docs/rdmacm.md "libfabric"), 77 (skip) without fi_pingpong:
#   fabric_pingpong_msg  fi_pingpong -p verbs -e msg, control on 127.0.0.1,
#                        data on the ports' GIDs (AF_IB); no root;
#   fabric_pingpong_dgram fi_info -p verbs (msg, rdm and dgram domains),
#                        fi_pingpong -p verbs -e dgram (UD), control on
#                        127.0.0.1; no root;
#   fabric_pingpong_rdm  fi_pingpong -p "verbs;ofi_rxm" -e rdm (and -e msg)
#                        between two network namespaces with IPoIB interfaces:
#                        server on softib0, client on softib1 (root,
#                        /dev/net/tun; else 77).
# Debian ships no fabtests (fi_rdm_pingpong, fi_msg_pingpong).
if(NOT TARGET rdmacm)
  return()
endif()
foreach(c msg dgram rdm)
  sib_itest(fabric_pingpong_${c} libfabric.sh ${c})
  set_tests_properties(fabric_pingpong_${c} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 240)
endforeach()
