#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# pyverbs CMID programs through softib's librdmacm.so.1, one process per
# side (tests/integration/rdmacm.sh runs them).  Usage:
#   rdmacm_cmid.py s|c CASE PORT [ADDR [CLIENT_SRC]]
# ADDR is the server's address (default 127.0.0.1), CLIENT_SRC the client's
# source (default none; 127.1.1.1 puts the client on softib1).  A server
# prints "ready" once a client can come; every side prints "<side> dev
# DEVICE" and what it got.  Cases (the API as rdma-core's tests/
# base_rdmacm.py and rdmacm_utils.py use it):
#   sync    synchronous ids: rdma_create_ep, rdma_get_request, accept,
#           connect, the rdma_verbs.h inlines
#   async   ids on a CMEventChannel: resolve_addr, resolve_route, connect,
#           accept with private data, every event checked, disconnect
#   reject  the server rejects with private data: the client's REJECTED
#           event carries it (148 bytes); a synchronous connect to the same
#           server fails with ECONNREFUSED
#   udp     the UDP port space: SIDR, a UD QP, send to the QPN / Q_Key of
#           the ESTABLISHED event's ud params, the reply from the WC's AH
#   extqp   an external RC QP (pyverbs QP and CQ) moved with init_qp_attr,
#           CONNECT_RESPONSE + establish on the client
#   mcast   join_multicast (server: full member; client: send-only through
#           join_multicast_ex), send to the group, receive, leave
#   server_dies, client_dies_req, client_dies_rep
#           a peer that SIGKILLs itself mid-handshake (the server with a
#           CONNECT_REQUEST not accepted; the client after sending the REQ, or
#           after the REP before the RTU); the survivor sees REJECTED,
#           UNREACHABLE, CONNECT_ERROR or DISCONNECTED, never hangs
# pyverbs' CMID.bind_addr and create_qp need the device (the Context and PD)
# that a bind to a port's address attaches; a loopback or wildcard bind
# attaches none (Linux's cma_any_addr), so with ADDR 127.0.0.1 the server's
# listener is synchronous (rdma_create_ep, rdma_get_request) while the
# client still runs on an event channel, and mcast binds softib0's
# 127.1.0.1 on both sides.  Every wait is bounded: an alarm ends a stuck
# side with exit 3.
import errno
import os
import signal
import sys
import time

from pyverbs.addr import AH
from pyverbs.cmid import CMID, AddrInfo, CMEventChannel, CMEvent, ConnParam, UDParam, JoinMCAttrEx
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR
import pyverbs.cm_enums as ce
import pyverbs.enums as e

GRH = 40
MC_QPN = 0xFFFFFF
UDP_QKEY = 0x01234567
MC_GROUP = '224.0.0.7'

role, case, port = sys.argv[1], sys.argv[2], sys.argv[3]
addr = sys.argv[4] if len(sys.argv) > 4 else '127.0.0.1'
csrc = sys.argv[5] if len(sys.argv) > 5 else None
side = 'server' if role == 's' else 'client'


def stuck(signum, frame):
    print(side, 'timed out in', case, flush=True)
    sys.exit(3)


signal.signal(signal.SIGALRM, stuck)
signal.alarm(40)


def say(*a):
    print(*a, flush=True)


def fail(msg):
    say(side, 'FAIL:', msg)
    sys.exit(1)


def event(ch, want):
    """The next event on ch, which must be `want`: (event, private data)."""
    ev = CMEvent(ch)
    got = ev.event_type
    pdata = ev.private_data
    if got != want:
        name = ev.event_str()
        ev.ack_cm_event()
        fail('expected event %d, got %s (%d)' % (want, name, got))
    return ev, pdata


def cap(n=4):
    return QPCap(max_send_wr=n, max_recv_wr=n, max_send_sge=1, max_recv_sge=1)


def passive_ai(ps):
    return AddrInfo(src=addr, src_service=port, port_space=ps, flags=ce.RAI_PASSIVE)


def active_ai(ps):
    return AddrInfo(src=csrc, dst=addr, dst_service=port, port_space=ps)


def conn_param(data=b'', qp_num=0):
    p = ConnParam(qp_num=qp_num, data_len=len(data))
    if data:
        p.set_private_data(data)
    return p


def resolve(cmid, ch, ps):
    cmid.resolve_addr(active_ai(ps))
    event(ch, ce.RDMA_CM_EVENT_ADDR_RESOLVED)[0].ack_cm_event()
    cmid.resolve_route()
    event(ch, ce.RDMA_CM_EVENT_ROUTE_RESOLVED)[0].ack_cm_event()
    say(side, 'dev', cmid.dev_name)


def port_addr(a):
    """A CA port's own address (127.1.d.p): a bind attaches its device."""
    return a.startswith('127.1.')


class Listener:
    """The server's listening id.  On an event channel when ADDR is a
    port's address; pyverbs' CMID.bind_addr needs the device a bind
    attaches, and a loopback or wildcard address attaches none (Linux:
    cma_any_addr), so on 127.0.0.1 the listener is synchronous
    (rdma_create_ep, rdma_get_request) and the client's side is the
    asynchronous one."""

    def __init__(self, ps, attr=None):
        self.ch = None
        if port_addr(addr):
            self.ch = CMEventChannel()
            self.lid = CMID(creator=self.ch, port_space=ps)
            self.lid.bind_addr(passive_ai(ps))
        else:
            self.lid = CMID(creator=passive_ai(ps), qp_init_attr=attr)
        self.lid.listen()
        say('server listener', 'async' if self.ch else 'sync')
        say('ready')

    def request(self):
        """The next connection request: (new id, its private data or None)."""
        pdata = None
        if self.ch:
            ev, pdata = event(self.ch, ce.RDMA_CM_EVENT_CONNECT_REQUEST)
            cid = CMID(creator=ev, listen_id=self.lid)
            ev.ack_cm_event()
        else:
            cid = self.lid.get_request()
        say(side, 'dev', cid.dev_name)
        return cid, pdata

    def established(self):
        if self.ch:  # a synchronous rdma_accept returned once established
            event(self.ch, ce.RDMA_CM_EVENT_ESTABLISHED)[0].ack_cm_event()

    def close(self, cid):
        """The new id first: a synchronous UD id keeps its CONNECT_REQUEST
        (rdma_accept does not wait for UD), which counts on the listener,
        whose rdma_destroy_id waits until it is acknowledged."""
        cid.close()
        self.lid.close()
        if self.ch:
            self.ch.close()

    def disconnected(self, cid):
        """Wait for the client's DREQ (async), then answer it."""
        if self.ch:
            event(self.ch, ce.RDMA_CM_EVENT_DISCONNECTED)[0].ack_cm_event()
        cid.disconnect()
        say('server disconnected')


def check_pdata(pdata, want, what):
    if pdata is None:
        return
    if not pdata.startswith(want):
        fail('%s private data %r' % (what, pdata[:16]))
    say(side, 'request data', bytes(pdata[:len(want)]), len(pdata))


def poll(cq, what):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        n, wcs = cq.poll()
        if n:
            if wcs[0].status != e.IBV_WC_SUCCESS:
                fail('%s completion status %d' % (what, wcs[0].status))
            return wcs[0]
        time.sleep(0.001)
    fail('no %s completion' % what)


# ---- sync: synchronous ids (rdma_create_ep, rdma_get_request) ----
def sync_case():
    attr = QPInitAttr(qp_type=e.IBV_QPT_RC, cap=cap())
    if role == 's':
        lid = CMID(creator=passive_ai(ce.RDMA_PS_TCP), qp_init_attr=attr)
        lid.listen()
        say('ready')
        cid = lid.get_request()
        say(side, 'dev', cid.dev_name)
        mr = cid.reg_msgs(64)
        cid.post_recv(mr, 64)
        cid.accept()
        cid.get_recv_comp()
        say("server got", bytes(mr.read(5, 0)))
        cid.disconnect()
    else:
        cid = CMID(creator=active_ai(ce.RDMA_PS_TCP), qp_init_attr=attr)
        say(side, 'dev', cid.dev_name)
        cid.connect()
        mr = cid.reg_msgs(64)
        mr.write(b'hello', 5)
        cid.post_send(mr, 0, 5)
        cid.get_send_comp()
        say("client sent")
        cid.disconnect()


# ---- async: an event channel, every event checked ----
def async_case():
    ps = ce.RDMA_PS_TCP
    attr = QPInitAttr(qp_type=e.IBV_QPT_RC, cap=cap())
    if role == 's':
        lis = Listener(ps, attr)
        cid, pdata = lis.request()
        check_pdata(pdata, b'async-req', 'CONNECT_REQUEST')
        if lis.ch:
            cid.create_qp(attr)
        mr = cid.reg_msgs(64)
        cid.post_recv(mr, 64)
        cid.accept(conn_param(b'async-rep'))
        lis.established()
        cid.get_recv_comp()
        say('server got', bytes(mr.read(5, 0)))
        mr.write(b'pong!', 5)
        cid.post_send(mr, 0, 5)
        cid.get_send_comp()
        lis.disconnected(cid)
        lis.close(cid)
    else:
        ch = CMEventChannel()
        cid = CMID(creator=ch, port_space=ps)
        resolve(cid, ch, ps)
        cid.create_qp(attr)
        mr = cid.reg_msgs(64)
        cid.post_recv(mr, 64)
        cid.connect(conn_param(b'async-req'))
        ev, pdata = event(ch, ce.RDMA_CM_EVENT_ESTABLISHED)
        if not pdata.startswith(b'async-rep'):
            fail('ESTABLISHED private data %r' % pdata[:16])
        say(side, 'reply data', bytes(pdata[:9]), len(pdata))
        ev.ack_cm_event()
        smr = cid.reg_msgs(64)
        smr.write(b'ping!', 5)
        cid.post_send(smr, 0, 5)
        cid.get_send_comp()
        cid.get_recv_comp()
        say('client got', bytes(mr.read(5, 0)))
        cid.disconnect()
        event(ch, ce.RDMA_CM_EVENT_DISCONNECTED)[0].ack_cm_event()
        say('client disconnected')


# ---- reject: REJECTED with the server's private data; sync ECONNREFUSED ----
def reject_case():
    ps = ce.RDMA_PS_TCP
    if role == 's':
        lis = Listener(ps)
        for i in range(2):
            cid, pdata = lis.request()
            cid.reject(b'go away')
            say('server rejected', i + 1)
            cid.close()
    else:
        ch = CMEventChannel()
        cid = CMID(creator=ch, port_space=ps)
        resolve(cid, ch, ps)
        cid.create_qp(QPInitAttr(qp_type=e.IBV_QPT_RC, cap=cap()))
        cid.connect(conn_param(b'may I'))
        ev, pdata = event(ch, ce.RDMA_CM_EVENT_REJECTED)
        ev.ack_cm_event()
        if not pdata.startswith(b'go away'):
            fail('REJECTED private data %r' % pdata[:16])
        say('client rejected with', bytes(pdata[:7]), len(pdata))
        # a synchronous id: rdma_connect fails with ECONNREFUSED
        attr = QPInitAttr(qp_type=e.IBV_QPT_RC, cap=cap())
        sid = CMID(creator=active_ai(ps), qp_init_attr=attr)
        try:
            sid.connect()
        except PyverbsRDMAError as ex:
            if ex.error_code != errno.ECONNREFUSED:
                fail('sync connect: errno %d' % ex.error_code)
            say('client sync connect refused')
        else:
            fail('sync connect to a rejecting server succeeded')


# ---- udp: SIDR, UD QPs, the ud params of ESTABLISHED ----
def udp_case():
    ps = ce.RDMA_PS_UDP
    attr = QPInitAttr(qp_type=e.IBV_QPT_UD, cap=cap())
    size = 32
    if role == 's':
        lis = Listener(ps, attr)
        cid, pdata = lis.request()
        check_pdata(pdata, b'sidr-req', 'SIDR request')
        if lis.ch:
            cid.create_qp(attr)
        mr = cid.reg_msgs(size + GRH)
        cid.post_recv(mr, size + GRH)
        cid.accept(conn_param(b'sidr-rep'))
        wc = cid.get_recv_comp()
        say('server got', bytes(mr.read(5, GRH)), 'from QPN', hex(wc.src_qp))
        ah = AH(cid.pd, wc=wc, port_num=1, grh=mr.buf)
        mr.write(b'pong!', 5)
        cid.post_ud_send(mr, ah, rqpn=wc.src_qp, length=5)
        cid.get_send_comp()
        lis.close(cid)
    else:
        ch = CMEventChannel()
        cid = CMID(creator=ch, port_space=ps)
        resolve(cid, ch, ps)
        cid.create_qp(attr)
        mr = cid.reg_msgs(size + GRH)
        cid.post_recv(mr, size + GRH)
        cid.connect(conn_param(b'sidr-req'))
        ev, pdata = event(ch, ce.RDMA_CM_EVENT_ESTABLISHED)
        ud = UDParam(ev)
        ev.ack_cm_event()
        if not pdata.startswith(b'sidr-rep'):
            fail('SIDR reply private data %r' % pdata[:16])
        if ud.qkey != UDP_QKEY:
            fail('Q_Key %#x' % ud.qkey)
        say('client ud qpn', hex(ud.qp_num), 'qkey', hex(ud.qkey), 'reply data', len(pdata))
        smr = cid.reg_msgs(size)
        smr.write(b'ping!', 5)
        cid.post_ud_send(smr, AH(cid.pd, attr=ud.ah_attr), rqpn=ud.qp_num, length=5)
        cid.get_send_comp()
        cid.get_recv_comp()
        say('client got', bytes(mr.read(5, GRH)))


# ---- extqp: a QP the program makes, moved with rdma_init_qp_attr ----
def to_rts(cid, qp):
    for state in (e.IBV_QPS_INIT, e.IBV_QPS_RTR, e.IBV_QPS_RTS):
        a, mask = cid.init_qp_attr(state)
        qp.modify(a, mask)


def ext_qp(cid):
    cq = CQ(cid.context, 8, None, None, 0)
    qp = QP(cid.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, rcq=cq, scq=cq, cap=cap()), QPAttr())
    mr = MR(cid.pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    return cq, qp, mr


def extqp_case():
    ps = ce.RDMA_PS_TCP
    if role == 's':
        lis = Listener(ps)
        cid, _ = lis.request()
        cq, qp, mr = ext_qp(cid)
        qp.post_recv(RecvWR(num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
        # INIT, RTR and RTS from the request before the REP: the QP is
        # ready when the client's first packet comes
        to_rts(cid, qp)
        cid.accept(conn_param(qp_num=qp.qp_num))
        lis.established()
        poll(cq, 'receive')
        say('server got', bytes(mr.read(6, 0)), 'on external QP', hex(qp.qp_num))
        lis.disconnected(cid)
        qp.close()
        lis.close(cid)
    else:
        ch = CMEventChannel()
        cid = CMID(creator=ch, port_space=ps)
        resolve(cid, ch, ps)
        cq, qp, mr = ext_qp(cid)
        cid.connect(conn_param(qp_num=qp.qp_num))
        event(ch, ce.RDMA_CM_EVENT_CONNECT_RESPONSE)[0].ack_cm_event()
        to_rts(cid, qp)
        cid.establish()
        mr.write(b'ext-qp', 6)
        qp.post_send(SendWR(opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, 6, mr.lkey)],
                            send_flags=e.IBV_SEND_SIGNALED))
        poll(cq, 'send')
        say('client sent on external QP', hex(qp.qp_num))
        cid.disconnect()
        event(ch, ce.RDMA_CM_EVENT_DISCONNECTED)[0].ack_cm_event()
        say('client disconnected')


# ---- mcast: join, send, receive, leave ----
def mcast_case():
    ps = ce.RDMA_PS_UDP
    attr = QPInitAttr(qp_type=e.IBV_QPT_UD, cap=cap(8))
    # pyverbs needs the device a bind to a port's address attaches (its
    # CMID.create_qp uses the PD bind_addr makes; a loopback bind attaches
    # none, as on Linux): on 127.0.0.1 both sides take softib0's 127.1.0.1
    src = addr if role == 's' else (csrc or addr)
    if not port_addr(src):
        src = '127.1.0.1'
    ch = CMEventChannel()
    cid = CMID(creator=ch, port_space=ps)
    cid.bind_addr(AddrInfo(src=src, port_space=ps, flags=ce.RAI_PASSIVE))
    cid.resolve_addr(AddrInfo(src=src, dst=MC_GROUP, port_space=ps))
    event(ch, ce.RDMA_CM_EVENT_ADDR_RESOLVED)[0].ack_cm_event()
    say(side, 'dev', cid.dev_name)
    cid.create_qp(attr)
    group = AddrInfo(src=MC_GROUP, port_space=ps, flags=ce.RAI_PASSIVE)
    if role == 's':
        cid.join_multicast(addr=group)
    else:
        cid.join_multicast(mc_attr=JoinMCAttrEx(
            addr=group, comp_mask=ce.RDMA_CM_JOIN_MC_ATTR_ADDRESS | ce.RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
            join_flags=ce.RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER))
    ev, _ = event(ch, ce.RDMA_CM_EVENT_MULTICAST_JOIN)
    ud = UDParam(ev)
    ev.ack_cm_event()
    if ud.qp_num != MC_QPN or ud.qkey != UDP_QKEY:
        fail('join: QPN %#x Q_Key %#x' % (ud.qp_num, ud.qkey))
    say(side, 'joined, MLID', hex(ud.ah_attr.dlid))
    size = 32
    if role == 's':
        mr = cid.reg_msgs(size + GRH)
        cid.post_recv(mr, size + GRH)
        say('ready')
        cid.get_recv_comp()
        say('server got', bytes(mr.read(5, GRH)), 'from the group')
    else:
        mr = cid.reg_msgs(size)
        mr.write(b'mcast', 5)
        cid.post_ud_send(mr, AH(cid.pd, attr=ud.ah_attr), rqpn=MC_QPN, length=5)
        cid.get_send_comp()
        say('client sent to the group')
    cid.leave_multicast(group)
    say(side, 'left')


# ---- faults: a peer that dies mid-handshake (SIGKILL, which nothing can
# catch: the kernel, and softibd, clean up after the process) ----
def die(where):
    say(side, 'dies', where)
    os.kill(os.getpid(), signal.SIGKILL)


def survivor_event(ch, cid, wanted):
    """The survivor's next event on its id: one of `wanted`, never a hang."""
    ev = CMEvent(ch)
    got = ev.event_type
    name = ev.event_str()
    ev.ack_cm_event()
    if got not in wanted:
        fail('after the peer died: %s (%d)' % (name, got))
    say(side, 'saw', name)


ENDINGS = (ce.RDMA_CM_EVENT_REJECTED, ce.RDMA_CM_EVENT_UNREACHABLE,
           ce.RDMA_CM_EVENT_CONNECT_ERROR, ce.RDMA_CM_EVENT_DISCONNECTED)


def fault_client(die_after):
    """Connect (an external QP when dying after the REP: CONNECT_RESPONSE); die
    after sending the REQ or after the REP, or see the server's death."""
    ps = ce.RDMA_PS_TCP
    ch = CMEventChannel()
    cid = CMID(creator=ch, port_space=ps)
    resolve(cid, ch, ps)
    qpn = 0
    if die_after == 'rep':  # an external QP: the REP comes as CONNECT_RESPONSE
        cq, qp, mr = ext_qp(cid)
        qpn = qp.qp_num
    else:
        cid.create_qp(QPInitAttr(qp_type=e.IBV_QPT_RC, cap=cap()))
    cid.connect(conn_param(b'fault', qp_num=qpn))
    if die_after == 'req':
        die('after sending the REQ')
    if die_after == 'rep':
        event(ch, ce.RDMA_CM_EVENT_CONNECT_RESPONSE)[0].ack_cm_event()
        die('after the REP, before the RTU')
    survivor_event(ch, cid, ENDINGS)


def fault_server(die_before_accept):
    """Die with a CONNECT_REQUEST in hand, or accept and see the client's death."""
    ps = ce.RDMA_PS_TCP
    ch = CMEventChannel()
    lid = CMID(creator=ch, port_space=ps)
    lid.bind_addr(passive_ai(ps))
    lid.listen()
    say('ready')
    ev, _ = event(ch, ce.RDMA_CM_EVENT_CONNECT_REQUEST)
    cid = CMID(creator=ev, listen_id=lid)
    ev.ack_cm_event()
    say(side, 'got the request')
    if die_before_accept:
        die('before accepting')
    cid.create_qp(QPInitAttr(qp_type=e.IBV_QPT_RC, cap=cap()))
    try:
        cid.accept(conn_param(b'fault'))
    except PyverbsRDMAError as ex:  # the client's REJ came first
        say(side, 'accept failed, errno', ex.error_code)
    survivor_event(ch, cid, ENDINGS)


def fault_case(which):
    # which: server_dies, client_dies_req, client_dies_rep
    if role == 's':
        fault_server(which == 'server_dies')
    else:
        fault_client({'client_dies_req': 'req', 'client_dies_rep': 'rep'}.get(which))


cases = {'sync': sync_case, 'async': async_case, 'reject': reject_case, 'udp': udp_case,
         'extqp': extqp_case, 'mcast': mcast_case,
         'server_dies': lambda: fault_case('server_dies'),
         'client_dies_req': lambda: fault_case('client_dies_req'),
         'client_dies_rep': lambda: fault_case('client_dies_rep')}
if case not in cases:
    fail('unknown case ' + case)
try:
    cases[case]()
except PyverbsRDMAError as ex:
    fail('%s (errno %d)' % (ex, ex.error_code))
say(side, 'done')
