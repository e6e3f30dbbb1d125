#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# A pyverbs CMID program (synchronous ids: rdma_create_ep, rdma_get_request,
# rdma_accept, rdma_connect, the rdma_verbs.h inlines) through softib's
# librdmacm.so.1.  Usage: rdmacm_cmid.py s|c PORT (server or client).
import sys
from pyverbs.cmid import CMID, AddrInfo
from pyverbs.qp import QPInitAttr, QPCap
import pyverbs.cm_enums as ce
from pyverbs.pd import PD
from pyverbs.mr import MR
import pyverbs.enums as e
role = sys.argv[1]
port = sys.argv[2]
cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
attr = QPInitAttr(qp_type=e.IBV_QPT_RC, cap=cap)
if role == 's':
    ai = AddrInfo(src='127.0.0.1', src_service=port, port_space=ce.RDMA_PS_TCP, flags=ce.RAI_PASSIVE)
    lid = CMID(creator=ai, qp_init_attr=attr)
    lid.listen()
    cid = lid.get_request()
    mr = cid.reg_msgs(64)
    cid.post_recv(mr, 64)
    cid.accept()
    wc = cid.get_recv_comp()
    print("server got", bytes(mr.read(5, 0)))
    cid.disconnect()
else:
    ai = AddrInfo(src=None, dst='127.0.0.1', dst_service=port, port_space=ce.RDMA_PS_TCP)
    cid = CMID(creator=ai, qp_init_attr=attr)
    cid.connect()
    mr = cid.reg_msgs(64)
    mr.write(b'hello', 5)
    cid.post_send(mr, 0, 5)
    cid.get_send_comp()
    print("client sent")
    cid.disconnect()
