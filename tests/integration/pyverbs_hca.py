#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The pyverbs program of issue 6: Debian's python3-pyverbs (rdma-core 44)
# drives softib's libibverbs between two processes, this one on softib0 and a
# child per section on softib1, and checks data and completions of RC, UD
# (AH, GRH), SRQ, XRC, atomics, memory windows and multicast (IBA vol 1
# ch. 9-11, rdma-core verbs.h semantics).  It must not wait without a
# deadline, leave a child behind, or report PASS for a check it did not make.
# Single-threaded; the two processes share only a pipe (JSON lines).  pyverbs
# 44 has neither ibv_attach_mcast nor the async fd: those go through ctypes on
# the same libibverbs (c_pointer() below).
"""pyverbs through softib between two processes: RC, UD, SRQ, XRC, atomics,
memory windows and multicast, data and completions checked.

Each section prints PASS, FAIL or SKIP (the feature does not exist: a verb
answered EOPNOTSUPP/ENOSYS or the device attributes say so); with --strict a
SKIP counts as a failure.  Exit status 1 on any failure.  Needs a running
softibd and LD_LIBRARY_PATH on softib's libibverbs (tests/integration/
pyverbs.sh does both)."""

import argparse
import contextlib
import ctypes
import errno
import json
import os
import random
import select
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback

try:
    import pyverbs.enums as e
    from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
    from pyverbs.base import inc_rkey
    from pyverbs.cq import CQ, cqe_opcode_to_str, cqe_status_to_str
    from pyverbs.device import Context
    from pyverbs.mr import MR, MW, MWBind, MWBindInfo
    from pyverbs.pd import PD
    from pyverbs.pyverbs_error import PyverbsRDMAError
    from pyverbs.qp import QP, QPAttr, QPCap, QPEx, QPInitAttr, QPInitAttrEx
    from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr, SrqInitAttrEx
    from pyverbs.wr import SGE, RecvWR, SendWR
    from pyverbs.xrcd import XRCD, XRCDInitAttr
except ImportError as ex:
    print(f'SKIP: python3-pyverbs is not installed ({ex})')
    sys.exit(77)

PORT = 1
WAIT = 10.0          # seconds any single wait may take
GRACE = 0.3          # seconds of silence that prove "nothing more arrives"
GRH_LEN = 40         # IBA 8.3: the GRH area at the start of a UD receive buffer
QKEY = 0x11110000    # no high bit: an ordinary Q_Key (IBA 10.2.4)
MCAST_QPN = 0xFFFFFF  # IBA 9.8.1: the destination QPN of a multicast datagram
ACC_RW = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
          e.IBV_ACCESS_REMOTE_READ)


class Fail(Exception):
    """A check failed."""


class Skip(Exception):
    """The feature under test does not exist in this build."""


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def need(what, fn, *args, **kw):
    """Create an object; EOPNOTSUPP/ENOSYS means the feature is missing."""
    try:
        return fn(*args, **kw)
    except PyverbsRDMAError as ex:
        if ex.error_code in (errno.EOPNOTSUPP, errno.ENOSYS):
            raise Skip(f'{what}: {os.strerror(ex.error_code)}') from None
        raise Fail(f'{what}: {ex}') from None


def expect_errno(what, want, fn, *args, **kw):
    """fn must fail with errno want."""
    try:
        fn(*args, **kw)
    except PyverbsRDMAError as ex:
        check(ex.error_code == want, f'{what}: errno {ex.error_code} '
              f'({os.strerror(ex.error_code)}), expected {errno.errorcode[want]}')
        return
    raise Fail(f'{what}: succeeded, expected {errno.errorcode[want]}')


# ---- the pipe between the two processes: one JSON object per line ----------

class Channel:
    def __init__(self, rfd, wfd):
        self.rfd, self.wfd, self.buf = rfd, wfd, b''

    def send(self, tag, **kw):
        kw['tag'] = tag
        data = (json.dumps(kw) + '\n').encode()
        while data:
            data = data[os.write(self.wfd, data):]

    def recv(self, tag, timeout=WAIT):
        deadline = time.monotonic() + timeout
        while b'\n' not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Fail(f'no "{tag}" from the peer within {timeout:.0f} s')
            if select.select([self.rfd], [], [], left)[0]:
                chunk = os.read(self.rfd, 65536)
                if not chunk:
                    raise Fail(f'the peer exited while we waited for "{tag}"')
                self.buf += chunk
        line, self.buf = self.buf.split(b'\n', 1)
        msg = json.loads(line)
        if msg['tag'] == 'skip':
            raise Skip('peer: ' + msg['why'])
        if msg['tag'] == 'fail':
            raise Fail('peer: ' + msg['why'])
        check(msg['tag'] == tag, f'the peer sent "{msg["tag"]}", expected "{tag}"')
        return msg

    def check_peer(self):
        """Raise at once if the peer already reported a failure or a skip
        (other messages stay queued for recv)."""
        while select.select([self.rfd], [], [], 0)[0]:
            chunk = os.read(self.rfd, 65536)
            if not chunk:
                break
            self.buf += chunk
        for line in self.buf.split(b'\n')[:-1]:
            msg = json.loads(line)
            if msg['tag'] == 'skip':
                raise Skip('peer: ' + msg['why'])
            if msg['tag'] == 'fail':
                raise Fail('peer: ' + msg['why'])

    def exchange(self, tag, **mine):
        """Both sides send, then read the other's (pipes buffer both)."""
        self.send(tag, **mine)
        return self.recv(tag)


# ---- completions ------------------------------------------------------------

peer_channel = None     # polls give up at once when the peer reports a failure

def wc_str(wc):
    return (f'wr_id={wc.wr_id} status={cqe_status_to_str(wc.status)} '
            f'opcode={cqe_opcode_to_str(wc.opcode)} byte_len={wc.byte_len} '
            f'qp_num={wc.qp_num} src_qp={wc.src_qp} slid={wc.slid} '
            f'flags={wc.wc_flags:#x} imm={wc.imm_data:#x}')


def poll(cq, count, what, timeout=WAIT):
    """count completions, or Fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    wcs, idle = [], 0
    while len(wcs) < count:
        n, got = cq.poll(count - len(wcs))
        wcs += got
        if n == 0:
            if time.monotonic() > deadline:
                raise Fail(f'{what}: {len(wcs)} of {count} completions in '
                           f'{timeout:.0f} s ' + '; '.join(map(wc_str, wcs)))
            idle += 1
            if peer_channel and idle % 256 == 0:
                peer_channel.check_peer()
            time.sleep(0.0002)
    return wcs


def quiet(cq, what, grace=GRACE):
    """No completion may arrive within grace seconds."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        n, got = cq.poll(1)
        check(n == 0, f'{what}: unexpected completion {wc_str(got[0]) if got else ""}')
        time.sleep(0.001)


def check_wc(wc, what, opcode=None, status=e.IBV_WC_SUCCESS, wr_id=None,
             byte_len=None, flags=0, noflags=0):
    bad = []
    if wc.status != status:
        bad.append(f'status {cqe_status_to_str(status)}')
    if status == e.IBV_WC_SUCCESS and opcode is not None and wc.opcode != opcode:
        bad.append(f'opcode {cqe_opcode_to_str(opcode)}')
    if wr_id is not None and wc.wr_id != wr_id:
        bad.append(f'wr_id {wr_id}')
    if byte_len is not None and wc.byte_len != byte_len:
        bad.append(f'byte_len {byte_len}')
    if wc.wc_flags & flags != flags:
        bad.append(f'flags {flags:#x} set')
    if wc.wc_flags & noflags:
        bad.append(f'flags {noflags:#x} clear')
    check(not bad, f'{what}: expected {", ".join(bad)}; got {wc_str(wc)}')


# ---- objects ----------------------------------------------------------------

class Node:
    """One process's device: context, PD, port 1's LID, GID 0 and MTU."""

    def __init__(self, dev):
        self.dev = dev
        self.ctx = Context(name=dev)
        self.pd = PD(self.ctx)
        port = self.ctx.query_port(PORT)
        check(port.state == e.IBV_PORT_ACTIVE, f'{dev} port {PORT} not active')
        self.lid = port.lid
        self.mtu = port.active_mtu
        self.gid = str(self.ctx.query_gid(PORT, 0))
        dev_attr = self.ctx.query_device()
        # RDMA READ/atomic depth both ways, within what the device allows.
        self.rd_atom = max(1, min(4, dev_attr.max_qp_rd_atom, dev_attr.max_qp_init_rd_atom))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.ctx.close()  # closes every object made on the context

    def info(self, **kw):
        return dict(lid=self.lid, gid=self.gid, mtu=self.mtu, **kw)


def gid_bytes(gid):
    return bytes.fromhex(gid.replace(':', ''))


def sge(mr, off, length):
    return SGE(mr.buf + off, length, mr.lkey)


def post_recv(q, mr, off, length, wr_id):
    """q: a QP or an SRQ."""
    q.post_recv(RecvWR(wr_id=wr_id, num_sge=1, sg=[sge(mr, off, length)]))


def send_wr(opcode, mr=None, off=0, length=0, wr_id=0, imm=0,
            flags=e.IBV_SEND_SIGNALED):
    if mr is None:
        return SendWR(wr_id=wr_id, opcode=opcode, imm_data=imm, send_flags=flags)
    return SendWR(wr_id=wr_id, opcode=opcode, num_sge=1, sg=[sge(mr, off, length)],
                  imm_data=imm, send_flags=flags)


def pattern(seed, length):
    r = random.Random(seed)
    return bytes(r.getrandbits(8) for _ in range(length))


def rc_qp(n, cq, srq=None, send_ops=0, max_send_wr=64, max_recv_wr=64, rcq=None):
    """An RC QP in RESET; send_ops: a QPEx with those IBV_QP_EX_WITH_* ops;
    rcq: its own receive CQ."""
    cap = QPCap(max_send_wr=max_send_wr, max_recv_wr=0 if srq else max_recv_wr,
                max_send_sge=1, max_recv_sge=1)
    rcq = rcq or cq
    if send_ops:
        attr = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=cq, rcq=rcq, srq=srq, cap=cap,
                            pd=n.pd, send_ops_flags=send_ops, comp_mask=
                            e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
        qp = need('ibv_create_qp_ex with send_ops_flags', QPEx, n.ctx, attr)
    else:
        qp = QP(n.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=rcq, srq=srq,
                                 cap=cap, sq_sig_all=0))
    return qp


def to_init(qp, access, qkey=None):
    a = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=PORT)
    a.pkey_index = 0
    mask = e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT
    if qkey is None:
        a.qp_access_flags = access
        mask |= e.IBV_QP_ACCESS_FLAGS
    else:
        a.qkey = qkey
        mask |= e.IBV_QP_QKEY
    qp.modify(a, mask)


def to_rtr(qp, n, peer, qpn, psn, recv=True):
    """Connected QP to RTR towards peer's QP qpn (RC, XRC_SEND/RECV)."""
    a = QPAttr(qp_state=e.IBV_QPS_RTR, port_num=PORT,
               path_mtu=min(e.IBV_MTU_1024, peer['mtu']))
    a.dest_qp_num = qpn
    a.rq_psn = psn
    a.ah_attr = AHAttr(dlid=peer['lid'], port_num=PORT)
    mask = (e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU |
            e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN)
    if recv:
        a.max_dest_rd_atomic = n.rd_atom
        a.min_rnr_timer = 1
        mask |= e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER
    qp.modify(a, mask)


def to_rts(qp, n, psn):
    a = QPAttr(qp_state=e.IBV_QPS_RTS)
    a.sq_psn = psn
    a.timeout = 14
    a.retry_cnt = 7
    a.rnr_retry = 7
    a.max_rd_atomic = n.rd_atom
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN | e.IBV_QP_TIMEOUT |
              e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY | e.IBV_QP_MAX_QP_RD_ATOMIC)


def rc_pairs(ch, n, tag, qps, **extra):
    """Connect our RC QPs (in INIT) one to one with the peer's; both end in
    RTS.  Returns the peer's message (its extra fields too)."""
    psns = [random.getrandbits(24) for _ in qps]
    peer = ch.exchange(tag, **n.info(qpns=[q.qp_num for q in qps], psns=psns, **extra))
    check(len(peer['qpns']) == len(qps), f'{tag}: QP counts differ')
    for qp, psn, rqpn, rpsn in zip(qps, psns, peer['qpns'], peer['psns']):
        to_rtr(qp, n, peer, rqpn, rpsn)
        to_rts(qp, n, psn)
    ch.exchange(tag + '-rts')
    return peer


# ---- C pointers behind pyverbs objects (pyverbs 44 lacks a few verbs) -------

_mem_fd = None


def peek(addr, length):
    """Read our own memory without faulting on a bad address."""
    global _mem_fd
    if _mem_fd is None:
        _mem_fd = os.open('/proc/self/mem', os.O_RDONLY)
    try:
        data = os.pread(_mem_fd, length, addr)
    except (OSError, OverflowError):
        return None
    return data if len(data) == length else None


def c_pointer(obj, what, valid):
    """The C pointer a pyverbs object wraps: the word in the object for which
    valid(pointer) holds (checked against values pyverbs does expose)."""
    raw = ctypes.string_at(id(obj), type(obj).__basicsize__)
    for off in range(16, len(raw) - 7, 8):
        p = struct.unpack_from('=Q', raw, off)[0]
        if p and p % 8 == 0 and valid(p):
            return p
    raise Fail(f'cannot find the {what} pointer in the pyverbs object')


def qp_pointer(qp):
    """struct ibv_qp *: qp_num at 52, state at 56, qp_type at 60 (verbs.h, LP64)."""
    def valid(p):
        d = peek(p, 64)
        if d is None or struct.unpack_from('=Q', d, 0)[0] == 0:
            return False
        num, _, qpt = struct.unpack_from('=III', d, 52)
        return num == qp.qp_num and qpt == qp.qp_type
    return c_pointer(qp, 'ibv_qp', valid)


def async_fd(ctx):
    """ibv_context.async_fd: cmd_fd at 264, async_fd at 268, device->name at
    24 (verbs.h of rdma-core 44, LP64)."""
    def valid(p):
        d = peek(p, 272)
        if d is None or struct.unpack_from('=i', d, 264)[0] != ctx.cmd_fd:
            return False
        dev = struct.unpack_from('=Q', d, 0)[0]
        name = peek(dev + 24, 64) if dev else None
        return name is not None and name.split(b'\0')[0] == ctx.name.encode()
    p = c_pointer(ctx, 'ibv_context', valid)
    return struct.unpack_from('=i', peek(p, 272), 268)[0]


def wait_event(ctx, want, what, timeout=WAIT):
    """The next async event of type want (others before it are reported)."""
    fd = async_fd(ctx)
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise Fail(f'{what}: no async event {want} in {timeout:g} s (saw {seen})')
        if select.select([fd], [], [], left)[0]:
            ev = ctx.get_async_event()
            t = ev.event_type
            ev.ack()
            if t == want:
                return seen
            seen.append(t)


def no_event(ctx, what, grace=GRACE):
    fd = async_fd(ctx)
    if select.select([fd], [], [], grace)[0]:
        ev = ctx.get_async_event()
        t = ev.event_type
        ev.ack()
        raise Fail(f'{what}: unexpected async event {t}')


_verbs = None


def verbs_lib():
    """The libibverbs pyverbs loaded (dlopen of a loaded soname returns it)."""
    global _verbs
    if _verbs is None:
        _verbs = ctypes.CDLL('libibverbs.so.1', use_errno=True)
        for f in (_verbs.ibv_attach_mcast, _verbs.ibv_detach_mcast):
            f.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint16]
            f.restype = ctypes.c_int
    return _verbs


def mcast(verb, qp, mgid, mlid):
    """ibv_attach_mcast / ibv_detach_mcast: 0 or an errno value."""
    f = getattr(verbs_lib(), 'ibv_' + verb + '_mcast')
    return f(qp_pointer(qp), ctypes.create_string_buffer(gid_bytes(mgid), 16), mlid)


def libibverbs_path():
    with open('/proc/self/maps') as f:
        paths = {ln.split()[-1] for ln in f if '/libibverbs.so' in ln}
    return ' '.join(sorted(paths))


# ---- rc: the baseline ---------------------------------------------------------

def sec_rc(ch, role, dev, opt):
    """SEND_WITH_IMM (3 packets), RDMA_WRITE_WITH_IMM, RDMA_READ, a reply."""
    msg1, wdata = pattern(1, 3000), pattern(2, 2500)
    rdata, reply = pattern(3, 700), pattern(4, 100)
    with Node(dev) as n:
        # Own CQs for sends and receives: the reply may overtake the READ.
        cq, rcq = CQ(n.ctx, 64), CQ(n.ctx, 64)
        mr = MR(n.pd, 16384, ACC_RW)
        qp = rc_qp(n, cq, rcq=rcq)
        to_init(qp, ACC_RW)
        if role == 'b':
            mr.write(rdata, len(rdata), 12288)
            post_recv(qp, mr, 0, 4096, 1)
            post_recv(qp, mr, 4096, 16, 2)     # consumed by WRITE_WITH_IMM
        else:
            post_recv(qp, mr, 0, 4096, 9)
        peer = rc_pairs(ch, n, 'rc', [qp], addr=mr.buf, rkey=mr.rkey)
        if role == 'a':
            mr.write(msg1, len(msg1), 0)
            qp.post_send(send_wr(e.IBV_WR_SEND_WITH_IMM, mr, 0, len(msg1), 11,
                                 imm=0x1234abcd))
            w = send_wr(e.IBV_WR_RDMA_WRITE_WITH_IMM, mr, 4096, len(wdata), 12,
                        imm=0x55667788)
            mr.write(wdata, len(wdata), 4096)
            w.set_wr_rdma(peer['rkey'], peer['addr'] + 8192)
            qp.post_send(w)
            r = send_wr(e.IBV_WR_RDMA_READ, mr, 8192, len(rdata), 13)
            r.set_wr_rdma(peer['rkey'], peer['addr'] + 12288)
            qp.post_send(r)
            wcs = poll(cq, 3, 'rc: send completions')
            for wc, wid, op in zip(wcs, (11, 12, 13), (e.IBV_WC_SEND, e.IBV_WC_RDMA_WRITE,
                                                      e.IBV_WC_RDMA_READ)):
                check_wc(wc, 'rc: requester', op, wr_id=wid)
            check(mr.read(len(rdata), 8192) == rdata, 'rc: RDMA_READ data differ')
            wc = poll(rcq, 1, 'rc: reply')[0]
            check_wc(wc, 'rc: reply', e.IBV_WC_RECV, wr_id=9, byte_len=len(reply),
                     noflags=e.IBV_WC_WITH_IMM)
            check(mr.read(len(reply), 0) == reply, 'rc: reply data differ')
        else:
            wc = poll(rcq, 1, 'rc: SEND_WITH_IMM')[0]
            check_wc(wc, 'rc: SEND_WITH_IMM', e.IBV_WC_RECV, wr_id=1,
                     byte_len=len(msg1), flags=e.IBV_WC_WITH_IMM)
            check(wc.imm_data == 0x1234abcd, f'rc: imm {wc.imm_data:#x}')
            check(wc.qp_num == qp.qp_num, 'rc: qp_num of the receive')
            check(mr.read(len(msg1), 0) == msg1, 'rc: SEND data differ')
            wc = poll(rcq, 1, 'rc: RDMA_WRITE_WITH_IMM')[0]
            check_wc(wc, 'rc: RDMA_WRITE_WITH_IMM', e.IBV_WC_RECV_RDMA_WITH_IMM,
                     wr_id=2, byte_len=len(wdata), flags=e.IBV_WC_WITH_IMM)
            check(wc.imm_data == 0x55667788, f'rc: write imm {wc.imm_data:#x}')
            check(mr.read(len(wdata), 8192) == wdata, 'rc: RDMA_WRITE data differ')
            mr.write(reply, len(reply), 0)
            qp.post_send(send_wr(e.IBV_WR_SEND, mr, 0, len(reply), 21))
            check_wc(poll(cq, 1, 'rc: reply sent')[0], 'rc: reply', e.IBV_WC_SEND, wr_id=21)
        ch.exchange('rc-end')


# ---- ud: address handles, GRH, Q_Keys, create_ah_from_wc ---------------------

MTU_BYTES = {e.IBV_MTU_256: 256, e.IBV_MTU_512: 512, e.IBV_MTU_1024: 1024,
             e.IBV_MTU_2048: 2048, e.IBV_MTU_4096: 4096}


def ud_qp(n, cq, create_flags=0, rcq=None):
    """A UD QP in RTS with Q_Key QKEY (IBA 10.2.4); rcq: its own receive CQ."""
    cap = QPCap(max_send_wr=32, max_recv_wr=64, max_send_sge=1, max_recv_sge=1)
    rcq = rcq or cq
    if create_flags:
        attr = QPInitAttrEx(qp_type=e.IBV_QPT_UD, scq=cq, rcq=rcq, cap=cap, pd=n.pd,
                            create_flags=create_flags, comp_mask=
                            e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_CREATE_FLAGS)
        qp = need(f'ibv_create_qp_ex(UD, create_flags {create_flags:#x})', QP, n.ctx, attr)
    else:
        qp = need('ibv_create_qp(UD)', QP, n.pd,
                  QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=rcq, cap=cap, sq_sig_all=0))
    to_init(qp, 0, qkey=QKEY)
    qp.modify(QPAttr(qp_state=e.IBV_QPS_RTR), e.IBV_QP_STATE)
    a = QPAttr(qp_state=e.IBV_QPS_RTS)
    a.sq_psn = random.getrandbits(24)
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)
    return qp


def ud_send(qp, ah, qpn, mr, off, data, wr_id, qkey=QKEY, opcode=e.IBV_WR_SEND, imm=0):
    mr.write(data, len(data), off)
    w = send_wr(opcode, mr, off, len(data), wr_id, imm=imm)
    w.set_wr_ud(ah, qpn, qkey)
    qp.post_send(w)


def global_ah(n, dlid, dgid, hop_limit=64, tclass=0, flow=0):
    gr = GlobalRoute(dgid=GID(dgid), sgid_index=0, hop_limit=hop_limit,
                     traffic_class=tclass, flow_label=flow)
    return need('ibv_create_ah (GRH)', AH, n.pd,
                attr=AHAttr(dlid=dlid, is_global=1, gr=gr, port_num=PORT))


def check_grh(raw, what, sgid, dgid, paylen=None, tclass=None, flow=None, hop=None):
    """The 40-byte GRH area of a UD receive (IBA 8.3)."""
    vtf, plen, nxt, hops = struct.unpack_from('>IHBB', raw, 0)
    bad = []
    if vtf >> 28 != 6:
        bad.append(f'IPVer {vtf >> 28}')
    if tclass is not None and (vtf >> 20) & 0xff != tclass:
        bad.append(f'TClass {(vtf >> 20) & 0xff:#x}')
    if flow is not None and vtf & 0xfffff != flow:
        bad.append(f'FlowLabel {vtf & 0xfffff:#x}')
    if paylen is not None and plen != paylen:
        bad.append(f'PayLen {plen} (expected {paylen})')
    if nxt != 0x1b:
        bad.append(f'NxtHdr {nxt:#x}')
    if hop is not None and hops != hop:
        bad.append(f'HopLmt {hops}')
    if raw[8:24] != gid_bytes(sgid):
        bad.append(f'SGID {raw[8:24].hex()}')
    if raw[24:40] != gid_bytes(dgid):
        bad.append(f'DGID {raw[24:40].hex()}')
    check(not bad, f'{what}: GRH ' + ', '.join(bad))


def ud_paylen(length):
    """GRH PayLen of a UD SEND: BTH + DETH + payload + pad + ICRC (IBA 8.3.1)."""
    return 12 + 8 + (length + 3) // 4 * 4 + 4


def sec_ud(ch, role, dev, opt):
    """Datagrams softib0 -> softib1 with and without GRH, Q_Key rules, replies
    through ibv_create_ah_from_wc, a datagram over the MTU."""
    slot = 4096 + GRH_LEN
    with Node(dev) as n:
        cq = CQ(n.ctx, 64)
        mr = MR(n.pd, 16 * slot, e.IBV_ACCESS_LOCAL_WRITE)
        qp = ud_qp(n, cq)
        for i in range(8):
            post_recv(qp, mr, (8 + i) * slot, slot, 100 + i)
        peer = ch.exchange('ud', **n.info(qpn=qp.qp_num))
        msgs = [pattern(10 + i, ln) for i, ln in enumerate((200, 64, 300, 32, 90))]
        mtu = MTU_BYTES[min(n.mtu, peer['mtu'])]
        big = pattern(20, mtu)
        if role == 'a':
            ah = need('ibv_create_ah', AH, n.pd, attr=AHAttr(dlid=peer['lid'], port_num=PORT))
            expect_errno('ibv_create_ah on port 2', errno.EINVAL, AH, n.pd,
                         attr=AHAttr(dlid=peer['lid'], port_num=2))
            gah = global_ah(n, peer['lid'], peer['gid'], 64, 0x20, 0x12345)
            ud_send(qp, ah, peer['qpn'], mr, 0, msgs[0], 1)
            ud_send(qp, ah, peer['qpn'], mr, slot, msgs[1], 2,
                    opcode=e.IBV_WR_SEND_WITH_IMM, imm=0x0badf00d)
            ud_send(qp, gah, peer['qpn'], mr, 2 * slot, msgs[2], 3)
            ud_send(qp, ah, peer['qpn'], mr, 3 * slot, msgs[3], 4, qkey=QKEY ^ 1)
            # High bit: the QP's own Q_Key (QKEY) goes on the wire (IBA 10.2.4).
            ud_send(qp, ah, peer['qpn'], mr, 4 * slot, msgs[4], 5, qkey=0x80000000)
            ud_send(qp, ah, peer['qpn'], mr, 5 * slot, big, 6)
            for i, wc in enumerate(poll(cq, 6, 'ud: sends')):
                check_wc(wc, 'ud: send', e.IBV_WC_SEND, wr_id=i + 1)
            ch.send('sent')
            # Replies: one from a GRH completion, one from a plain one.
            for wc in poll(cq, 2, 'ud: replies'):
                check_wc(wc, 'ud: reply', e.IBV_WC_RECV, byte_len=GRH_LEN + 50)
                check(wc.src_qp == peer['qpn'] and wc.slid == peer['lid'],
                      f'ud: reply source {wc.src_qp}/{wc.slid}')
                off = (8 + wc.wr_id - 100) * slot
                data = mr.read(50, off + GRH_LEN)
                check(data in (pattern(30, 50), pattern(31, 50)), 'ud: reply data')
                if data == pattern(30, 50):
                    check_wc(wc, 'ud: reply to a GRH datagram', flags=e.IBV_WC_GRH)
                    check_grh(mr.read(GRH_LEN, off), 'ud: reply', peer['gid'], n.gid,
                              paylen=ud_paylen(50))
                else:
                    check_wc(wc, 'ud: reply to a LID-only datagram', noflags=e.IBV_WC_GRH)
            ch.recv('replied')
            # Over the path MTU: EINVAL at post or a local length error.
            try:
                ud_send(qp, ah, peer['qpn'], mr, 0, pattern(21, mtu + 1), 7)
                wc = poll(cq, 1, 'ud: datagram over the MTU')[0]
                check(wc.status == e.IBV_WC_LOC_LEN_ERR,
                      f'ud: datagram over the MTU: {wc_str(wc)}')
            except PyverbsRDMAError as ex:
                check(ex.error_code == errno.EINVAL, f'ud: post over the MTU: {ex}')
            ch.send('big')
        else:
            ch.recv('sent')
            wcs = poll(cq, 5, 'ud: datagrams')
            for k, (wc, i) in enumerate(zip(wcs, (0, 1, 2, 4))):
                off = (8 + k) * slot
                check_wc(wc, f'ud: datagram {i + 1}', e.IBV_WC_RECV, wr_id=100 + k,
                         byte_len=GRH_LEN + len(msgs[i]))
                check(wc.src_qp == peer['qpn'], f'ud: src_qp {wc.src_qp} != {peer["qpn"]}')
                check(wc.slid == peer['lid'], f'ud: slid {wc.slid} != {peer["lid"]}')
                check(wc.qp_num == qp.qp_num and wc.pkey_index == 0 and wc.sl == 0,
                      f'ud: qp_num/pkey_index/sl: {wc_str(wc)}')
                check(mr.read(len(msgs[i]), off + GRH_LEN) == msgs[i],
                      f'ud: datagram {i + 1} data differ (a wrong Q_Key must be dropped)')
                if i == 2:
                    check_wc(wc, 'ud: GRH datagram', flags=e.IBV_WC_GRH)
                    check_grh(mr.read(GRH_LEN, off), 'ud', peer['gid'], n.gid,
                              paylen=ud_paylen(len(msgs[i])), tclass=0x20, flow=0x12345,
                              hop=64)
                    grh_wc, grh_off = wc, off
                else:
                    check_wc(wc, f'ud: datagram {i + 1}', noflags=e.IBV_WC_GRH)
                if i == 1:
                    check_wc(wc, 'ud: SEND_WITH_IMM', flags=e.IBV_WC_WITH_IMM)
                    check(wc.imm_data == 0x0badf00d, f'ud: imm {wc.imm_data:#x}')
            wc = wcs[4]
            check_wc(wc, 'ud: MTU-sized datagram', e.IBV_WC_RECV, byte_len=GRH_LEN + mtu)
            check(mr.read(mtu, (8 + wc.wr_id - 100) * slot + GRH_LEN) == big,
                  'ud: MTU-sized datagram data differ')
            quiet(cq, 'ud: the datagram with the wrong Q_Key')
            # Replies to the source of a completion (ibv_create_ah_from_wc).
            ah1 = need('ibv_create_ah_from_wc (GRH)', AH, n.pd, wc=grh_wc,
                       grh=mr.buf + grh_off, port_num=PORT)
            ah2 = need('ibv_create_ah_from_wc', AH, n.pd, wc=wcs[0],
                       grh=mr.buf + (8 + wcs[0].wr_id - 100) * slot, port_num=PORT)
            ud_send(qp, ah1, grh_wc.src_qp, mr, 0, pattern(30, 50), 1)
            ud_send(qp, ah2, wcs[0].src_qp, mr, slot, pattern(31, 50), 2)
            for wc in poll(cq, 2, 'ud: replies sent'):
                check_wc(wc, 'ud: reply sent', e.IBV_WC_SEND)
            ch.send('replied')
            ch.recv('big')
            quiet(cq, 'ud: the datagram over the MTU')
        ch.exchange('ud-end')


# ---- mcast: ibv_attach_mcast across two processes (IBA 10.5) ----------------

def sec_mcast(ch, role, dev, opt):
    """softib1's QPs B1, B2 and softib0's A1 (BLOCK_SELF_MCAST_LB), A2 join a
    group.  A1 sends 2: B1, B2, A2 get each once, A1 not.  A2 sends 1: all
    four get it once.  B2 leaves, A2 sends 1: B1, A1, A2 get it, B2 not."""
    slot = 256 + GRH_LEN
    with Node(dev) as n:
        scq, cqs = CQ(n.ctx, 32), [CQ(n.ctx, 32), CQ(n.ctx, 32)]
        mr = MR(n.pd, 32 * slot, e.IBV_ACCESS_LOCAL_WRITE)
        flags = e.IBV_QP_CREATE_BLOCK_SELF_MCAST_LB if role == 'a' else 0
        qps = [ud_qp(n, scq, create_flags=flags, rcq=cqs[0]), ud_qp(n, scq, rcq=cqs[1])]
        for q, qp in enumerate(qps):
            for i in range(8):
                post_recv(qp, mr, (q * 8 + i) * slot, slot, q * 8 + i)
        if role == 'a':
            mgid = 'ff12:401b:ffff:0000:0000:0000:%04x:%04x' % (
                random.getrandbits(16), random.getrandbits(16))
            mlid = 0xc000 + random.randrange(1, 0x3ffe)
            ch.send('group', mgid=mgid, mlid=mlid)
        else:
            g = ch.recv('group')
            mgid, mlid = g['mgid'], g['mlid']
            # Kernel rules every provider shares (ib_attach_mcast): EINVAL.
            rc = mcast('attach', qps[0], n.gid, mlid)
            if rc in (errno.EOPNOTSUPP, errno.ENOSYS):
                raise Skip(f'ibv_attach_mcast: {os.strerror(rc)}')
            check(rc == errno.EINVAL, f'attach to a unicast GID: {rc}, expected EINVAL')
            rc = mcast('attach', qps[0], mgid, n.lid)
            check(rc == errno.EINVAL, f'attach to a unicast LID: {rc}, expected EINVAL')
            rcq = CQ(n.ctx, 4)
            rcqp = rc_qp(n, rcq)
            rc = mcast('attach', rcqp, mgid, mlid)
            check(rc == errno.EINVAL, f'attach of an RC QP: {rc}, expected EINVAL')
        for q, qp in enumerate(qps):
            rc = mcast('attach', qp, mgid, mlid)
            if rc in (errno.EOPNOTSUPP, errno.ENOSYS):
                raise Skip(f'ibv_attach_mcast: {os.strerror(rc)}')
            check(rc == 0, f'ibv_attach_mcast of QP {q + 1}: {os.strerror(rc)}')
        peer = ch.exchange('joined', **n.info(qpns=[q.qp_num for q in qps]))
        a_info = n.info(qpns=[q.qp_num for q in qps]) if role == 'a' else peer
        rounds = [(0, 2, [0, 1], [1]), (1, 1, [0, 1], [0, 1]), (1, 1, [0], [0, 1])]
        seq = 0
        for r, (sender, count, b_get, a_get) in enumerate(rounds):
            msgs = [pattern(100 + seq + i, 100 + i) for i in range(count)]
            seq += count
            if role == 'a':
                ah = global_ah(n, mlid, mgid, hop_limit=1)
                for i, m in enumerate(msgs):
                    ud_send(qps[sender], ah, MCAST_QPN, mr, (24 + i) * slot, m, 50 + i)
                for wc in poll(scq, count, f'mcast round {r + 1}: sends'):
                    check_wc(wc, f'mcast round {r + 1}: send', e.IBV_WC_SEND)
                got = a_get
            else:
                got = b_get
            expect_mcast(cqs, mr, slot, got, msgs, mgid, a_info, sender,
                         f'mcast round {r + 1} on {dev}')
            if role == 'b' and r == 1:
                rc = mcast('detach', qps[1], mgid, mlid)
                check(rc == 0, f'ibv_detach_mcast: {os.strerror(rc)}')
            ch.exchange(f'round{r}')
        for qp in qps[:1] if role == 'b' else qps:
            rc = mcast('detach', qp, mgid, mlid)
            check(rc == 0, f'ibv_detach_mcast: {os.strerror(rc)}')
        ch.exchange('mcast-end')


def expect_mcast(cqs, mr, slot, got, msgs, mgid, a_info, sender, what):
    """QPs whose index is in got receive msgs once each, in order; the
    others nothing."""
    for q, cq in enumerate(cqs):
        if q not in got:
            continue
        for i, wc in enumerate(poll(cq, len(msgs), f'{what}: QP {q + 1}')):
            check_wc(wc, f'{what}: QP {q + 1}', e.IBV_WC_RECV, flags=e.IBV_WC_GRH,
                     byte_len=GRH_LEN + len(msgs[i]))
            check(wc.src_qp == a_info['qpns'][sender] and wc.slid == a_info['lid'],
                  f'{what}: source {wc.src_qp}/{wc.slid}')
            off = wc.wr_id * slot
            check(mr.read(len(msgs[i]), off + GRH_LEN) == msgs[i], f'{what}: data differ')
            check_grh(mr.read(GRH_LEN, off), what, a_info['gid'], mgid,
                      paylen=ud_paylen(len(msgs[i])), hop=1)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline:
        for q, cq in enumerate(cqs):
            n, wcs = cq.poll(1)
            check(n == 0, f'{what}: QP {q + 1} got a datagram it should not: '
                  f'{wc_str(wcs[0]) if wcs else ""}')
        time.sleep(0.001)



# ---- srq: one SRQ under two RC QPs, its limit, LAST_WQE_REACHED ---------------

def sec_srq(ch, role, dev, opt):
    """softib0's A1, A2 send 6 messages each to softib1's B1, B2, which
    receive from one SRQ; srq_limit raises SRQ_LIMIT_REACHED; B1 to ERR
    raises QP_LAST_WQE_REACHED (IBA 10.2.9, 11.6.3)."""
    per_qp, size = 6, 256
    with Node(dev) as n:
        cq = CQ(n.ctx, 128)
        if role == 'b':
            srq = need('ibv_create_srq', SRQ, n.pd, SrqInitAttr(SrqAttr(max_wr=32, max_sge=1)))
            attr = srq.query()
            check(attr.max_wr >= 32 and attr.max_sge >= 1,
                  f'srq: query gives max_wr {attr.max_wr}, max_sge {attr.max_sge}')
            depth = attr.max_wr
            mr = MR(n.pd, depth * size, e.IBV_ACCESS_LOCAL_WRITE)
            for i in range(depth):
                post_recv(srq, mr, i * size, size, i)
            expect_errno(f'srq: receive {depth + 1} of max_wr {depth}', errno.ENOMEM,
                         post_recv, srq, mr, 0, size, 999)
            expect_errno('srq: srq_limit above max_wr', errno.EINVAL, srq.modify,
                         SrqAttr(srq_limit=depth + 1), e.IBV_SRQ_LIMIT)
            srq.modify(SrqAttr(srq_limit=depth - 2 * per_qp + 4), e.IBV_SRQ_LIMIT)
            no_event(n.ctx, 'srq: armed limit, nothing consumed')
            qps = [rc_qp(n, cq, srq=srq), rc_qp(n, cq, srq=srq)]
        else:
            mr = MR(n.pd, 2 * per_qp * size, e.IBV_ACCESS_LOCAL_WRITE)
            qps = [rc_qp(n, cq), rc_qp(n, cq)]
        for qp in qps:
            to_init(qp, ACC_RW)
        rc_pairs(ch, n, 'srq', qps)
        if role == 'a':
            for k in range(per_qp):
                for q, qp in enumerate(qps):
                    i = k * 2 + q
                    m = bytes([q, k]) + pattern(200 + i, 98 + i)
                    mr.write(m, len(m), i * size)
                    qp.post_send(send_wr(e.IBV_WR_SEND, mr, i * size, len(m), i))
            for wc in poll(cq, 2 * per_qp, 'srq: sends'):
                check_wc(wc, 'srq: send', e.IBV_WC_SEND)
            ch.send('sent')
        else:
            ch.recv('sent')
            seen, next_seq = set(), [0, 0]
            for wc in poll(cq, 2 * per_qp, 'srq: receives'):
                check_wc(wc, 'srq: receive', e.IBV_WC_RECV)
                check(wc.qp_num in (qps[0].qp_num, qps[1].qp_num),
                      f'srq: completion for QP {wc.qp_num}')
                check(wc.wr_id not in seen and wc.wr_id < depth, f'srq: wr_id {wc.wr_id} twice')
                seen.add(wc.wr_id)
                q = 0 if wc.qp_num == qps[0].qp_num else 1
                k = next_seq[q]
                next_seq[q] += 1
                i = k * 2 + q
                m = bytes([q, k]) + pattern(200 + i, 98 + i)
                check(wc.byte_len == len(m), f'srq: byte_len {wc.byte_len} != {len(m)}')
                check(mr.read(len(m), wc.wr_id * size) == m,
                      f'srq: message {k} of QP {q + 1} differs (or came out of order)')
            check(seen == set(range(2 * per_qp)), f'srq: WQEs not used in order: {sorted(seen)}')
            wait_event(n.ctx, e.IBV_EVENT_SRQ_LIMIT_REACHED, 'srq: below srq_limit')
            a = QPAttr(qp_state=e.IBV_QPS_ERR)
            qps[0].modify(a, e.IBV_QP_STATE)
            wait_event(n.ctx, e.IBV_EVENT_QP_LAST_WQE_REACHED, 'srq: QP on an SRQ to ERR')
            # SRQ resize where the device says it can (IBV_DEVICE_SRQ_RESIZE).
            if n.ctx.query_device().device_cap_flags & e.IBV_DEVICE_SRQ_RESIZE:
                srq.modify(SrqAttr(max_wr=depth * 2), e.IBV_SRQ_MAX_WR)
                check(srq.query().max_wr >= depth * 2, 'srq: max_wr did not grow')
        ch.exchange('srq-end')


# ---- xrc: an XRCD from a file, XRC SRQs, XRC_SEND / XRC_RECV QPs ------------

def xrc_srq(ctx, pd, xrcd, cq, depth):
    a = SrqInitAttrEx(max_wr=depth)
    a.srq_type = e.IBV_SRQT_XRC
    a.pd, a.xrcd, a.cq = pd, xrcd, cq
    a.comp_mask = (e.IBV_SRQ_INIT_ATTR_TYPE | e.IBV_SRQ_INIT_ATTR_PD |
                   e.IBV_SRQ_INIT_ATTR_CQ | e.IBV_SRQ_INIT_ATTR_XRCD)
    return need('ibv_create_srq_ex(XRC)', SRQ, ctx, a)


def sec_xrc(ch, role, dev, opt):
    """softib1 opens one XRCD from a file twice (O_CREAT, as ibv_xsrq_pingpong),
    an XRC SRQ on each handle (two PDs) and an XRC_RECV QP; softib0's XRC_SEND
    QP sends to either SRQ number, writes into the first SRQ's PD and, where
    the device has atomics, adds to it (IBA 9.2.4 XRCETH, 11.4.2.2)."""
    xrc_run(ch, role, dev, shared=False)


def sec_xrc_shared(ch, role, dev, opt):
    """As xrc, but the second XRCD handle, SRQ and PD are in a second context
    (as another process would have them): the domain is the file's, and an
    XRCETH reaches every SRQ of the domain."""
    xrc_run(ch, role, dev, shared=True)


def xrc_run(ch, role, dev, shared):
    size, count = 256, 4
    with Node(dev) as n, contextlib.ExitStack() as stack:
        atomics = n.ctx.query_device().atomic_caps != e.IBV_ATOMIC_NONE
        acc = ACC_RW | (e.IBV_ACCESS_REMOTE_ATOMIC if atomics else 0)
        if role == 'b':
            fd_, path = tempfile.mkstemp(prefix='pyverbs-xrcd.')
            os.close(fd_)
            os.unlink(path)     # O_CREAT below makes it again, as xsrq_pingpong
            stack.callback(lambda: os.path.exists(path) and os.unlink(path))
            fds = [os.open(path, os.O_RDONLY | os.O_CREAT, 0o600), 0]
            fds[1] = os.open(path, os.O_RDONLY)
            for fd in fds:
                stack.callback(os.close, fd)
            ctx2 = n.ctx
            if shared:
                ctx2 = Context(name=dev)
                stack.callback(ctx2.close)
            pd2 = PD(ctx2)
            flags = e.IBV_XRCD_INIT_ATTR_FD | e.IBV_XRCD_INIT_ATTR_OFLAGS
            xrcd1 = need('ibv_open_xrcd', XRCD, n.ctx, XRCDInitAttr(flags, os.O_CREAT, fds[0]))
            xrcd2 = need('ibv_open_xrcd (the same file again)', XRCD, ctx2,
                         XRCDInitAttr(flags, os.O_CREAT, fds[1]))
            cqs = [CQ(n.ctx, 32), CQ(ctx2, 32)]
            srqs = [xrc_srq(n.ctx, n.pd, xrcd1, cqs[0], 16), xrc_srq(ctx2, pd2, xrcd2, cqs[1], 16)]
            srqns = [s_.get_srq_num() for s_ in srqs]
            check(srqns[0] != srqns[1], f'xrc: SRQs of one XRC domain share number '
                  f'{srqns[0]} (an XRCETH could not tell them apart)')
            mrs = [MR(n.pd, 16 * size, acc), MR(pd2, 16 * size, e.IBV_ACCESS_LOCAL_WRITE)]
            mrs[0].write(struct.pack('=Q', V0), 8, 14 * size)
            for k in range(2):
                for i in range(8):
                    post_recv(srqs[k], mrs[k], i * size, size, i)
            qp = need('ibv_create_qp_ex(XRC_RECV)', QP, n.ctx, QPInitAttrEx(
                qp_type=e.IBV_QPT_XRC_RECV, comp_mask=e.IBV_QP_INIT_ATTR_XRCD, xrcd=xrcd1))
            to_init(qp, acc)
            extra = dict(srqns=srqns, addr=mrs[0].buf + 12 * size, rkey=mrs[0].rkey)
        else:
            cq = CQ(n.ctx, 32)
            mr = MR(n.pd, 16 * size, e.IBV_ACCESS_LOCAL_WRITE)
            cap = QPCap(max_send_wr=32, max_recv_wr=0, max_send_sge=1, max_recv_sge=0)
            qp = need('ibv_create_qp_ex(XRC_SEND)', QP, n.ctx, QPInitAttrEx(
                qp_type=e.IBV_QPT_XRC_SEND, comp_mask=e.IBV_QP_INIT_ATTR_PD, pd=n.pd,
                scq=cq, cap=cap))
            to_init(qp, 0)
            extra = {}
        psn = random.getrandbits(24)
        peer = ch.exchange('xrc', **n.info(qpns=[qp.qp_num], psns=[psn], **extra))
        to_rtr(qp, n, peer, peer['qpns'][0], peer['psns'][0], recv=role == 'b')
        if role == 'a':
            to_rts(qp, n, psn)
        ch.exchange('xrc-rtr')
        msgs = [pattern(300 + i, 60 + i) for i in range(count)]
        wdata = pattern(310, 500)
        if role == 'a':
            for i, m in enumerate(msgs):
                mr.write(m, len(m), i * size)
                w = send_wr(e.IBV_WR_SEND_WITH_IMM if i == 3 else e.IBV_WR_SEND,
                            mr, i * size, len(m), i, imm=0x600d)
                w.set_qp_type_xrc(peer['srqns'][i % 2])
                qp.post_send(w)
            mr.write(wdata, len(wdata), 8 * size)
            w = send_wr(e.IBV_WR_RDMA_WRITE, mr, 8 * size, len(wdata), 9)
            w.set_wr_rdma(peer['rkey'], peer['addr'])
            w.set_qp_type_xrc(peer['srqns'][0])
            qp.post_send(w)
            for i, wc in enumerate(poll(cq, count + 1, 'xrc: sends')):
                check_wc(wc, 'xrc: send', e.IBV_WC_RDMA_WRITE if i == count else e.IBV_WC_SEND,
                         wr_id=9 if i == count else i)
            if atomics:
                w = atomic_wr(e.IBV_WR_ATOMIC_FETCH_AND_ADD, mr, 10 * size, peer['rkey'],
                              peer['addr'] + 2 * size, 5, wr_id=10)
                w.set_qp_type_xrc(peer['srqns'][0])
                qp.post_send(w)
                check_wc(poll(cq, 1, 'xrc: FETCH_AND_ADD')[0], 'xrc: FETCH_AND_ADD',
                         e.IBV_WC_FETCH_ADD, wr_id=10)
                check(u64(mr, 10 * size) == V0, f'xrc: FETCH_AND_ADD returned '
                      f'{u64(mr, 10 * size):#x}, expected {V0:#x}')
            ch.send('sent')
        else:
            ch.recv('sent')
            for k in range(2):
                for j, wc in enumerate(poll(cqs[k], count // 2, f'xrc: SRQ {k + 1}')):
                    i = j * 2 + k
                    check_wc(wc, f'xrc: message {i} in SRQ {k + 1}', e.IBV_WC_RECV, wr_id=j,
                             byte_len=len(msgs[i]),
                             flags=e.IBV_WC_WITH_IMM if i == 3 else 0,
                             noflags=0 if i == 3 else e.IBV_WC_WITH_IMM)
                    check(mrs[k].read(len(msgs[i]), j * size) == msgs[i],
                          f'xrc: message {i} data differ')
                quiet(cqs[k], f'xrc: SRQ {k + 1}')
            check(mrs[0].read(len(wdata), 12 * size) == wdata, 'xrc: RDMA_WRITE data differ')
            want = V0 + 5 if atomics else V0
            check(u64(mrs[0], 14 * size) == want, f'xrc: atomic target '
                  f'{u64(mrs[0], 14 * size):#x}, expected {want:#x}')
        ch.exchange('xrc-end')



# ---- atomic: CMP_AND_SWP and FETCH_AND_ADD on RC (IBA 9.4.5, 10.7.2.3) ------

ATOMIC_OPS = (e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
              e.IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
V0, V1, V2, V3 = 0x0102030405060708, 0x1111222233334444, 0x5555666677778888, 0x0a0b0c0d0e0f1011
ADD0 = 0x00000000fffffff0   # the add carries into the high word
COUNT0 = 1000


def u64(mr, off):
    return struct.unpack('=Q', mr.read(8, off))[0]


def atomic_wr(opcode, res, off, rkey, addr, cmp_add, swap=0, wr_id=0):
    w = send_wr(opcode, res, off, 8, wr_id)
    w.set_wr_atomic(rkey, addr, cmp_add, swap)
    return w


def sec_atomic(ch, role, dev, opt):
    """softib0's QPs run atomics on softib1's memory: both opcodes through
    ibv_post_send and the ibv_wr_* API, 100 FETCH_AND_ADDs from two QPs on
    one counter (each old value returned once, the counter exact), a
    misaligned address and an MR without REMOTE_ATOMIC."""
    adds = 50
    with Node(dev) as n:
        caps = n.ctx.query_device().atomic_caps
        if caps == e.IBV_ATOMIC_NONE:
            raise Skip('the device reports IBV_ATOMIC_NONE')
        check(caps == e.IBV_ATOMIC_HCA, f'atomic_cap {caps}, expected IBV_ATOMIC_HCA')
        cq = CQ(n.ctx, 256)
        acc = ACC_RW | e.IBV_ACCESS_REMOTE_ATOMIC
        if role == 'a':
            qps = [rc_qp(n, cq, send_ops=ATOMIC_OPS, max_send_wr=2 * adds)] + [
                rc_qp(n, cq, max_send_wr=2 * adds) for _ in range(3)]
            res = MR(n.pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
            extra = {}
        else:
            qps = [rc_qp(n, cq) for _ in range(4)]
            mem = MR(n.pd, 4096, acc)
            plain = MR(n.pd, 4096, ACC_RW)
            mem.write(struct.pack('=QQQ', V0, ADD0, COUNT0), 24, 0)
            plain.write(struct.pack('=Q', V0), 8, 0)
            extra = dict(addr=mem.buf, rkey=mem.rkey, paddr=plain.buf, prkey=plain.rkey)
        for qp in qps:
            to_init(qp, acc)
        peer = rc_pairs(ch, n, 'atomic', qps, **extra)
        if role == 'a':
            rk, ad = peer['rkey'], peer['addr']
            q = qps[0]
            steps = [  # (how, opcode, remote offset, compare/add, swap, expected result)
                ('post', e.IBV_WR_ATOMIC_CMP_AND_SWP, 0, V0, V1, V0),
                ('post', e.IBV_WR_ATOMIC_CMP_AND_SWP, 0, V0, V2, V1),   # no match: no swap
                ('post', e.IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 0x20, 0, ADD0),
                ('wr', e.IBV_WR_ATOMIC_CMP_AND_SWP, 0, V1, V3, V1),
                ('wr', e.IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 1, 0, ADD0 + 0x20),
            ]
            for i, (how, op, off, ca, sw, want) in enumerate(steps):
                if how == 'post':
                    q.post_send(atomic_wr(op, res, 8 * i, rk, ad + off, ca, sw, wr_id=i))
                else:
                    q.wr_start()
                    q.wr_id = i
                    q.wr_flags = e.IBV_SEND_SIGNALED
                    if op == e.IBV_WR_ATOMIC_CMP_AND_SWP:
                        q.wr_atomic_cmp_swp(rk, ad + off, ca, sw)
                    else:
                        q.wr_atomic_fetch_add(rk, ad + off, ca)
                    q.wr_set_sge(SGE(res.buf + 8 * i, 8, res.lkey))
                    q.wr_complete()
                wc = poll(cq, 1, f'atomic step {i + 1}')[0]
                check_wc(wc, f'atomic step {i + 1} ({how})', e.IBV_WC_COMP_SWAP
                         if op == e.IBV_WR_ATOMIC_CMP_AND_SWP else e.IBV_WC_FETCH_ADD, wr_id=i)
                got = u64(res, 8 * i)
                check(got == want, f'atomic step {i + 1} ({how}): returned {got:#x}, '
                      f'expected {want:#x}')
            # Two QPs, one counter: every old value exactly once.
            for k in range(adds):
                for j in (1, 2):
                    w = atomic_wr(e.IBV_WR_ATOMIC_FETCH_AND_ADD, res, 64 + 8 * (2 * k + j - 1),
                                  rk, ad + 16, 1, wr_id=100 + 2 * k + j - 1)
                    qps[j].post_send(w)
            for wc in poll(cq, 2 * adds, 'atomic: concurrent FETCH_AND_ADDs'):
                check_wc(wc, 'atomic: concurrent FETCH_AND_ADD', e.IBV_WC_FETCH_ADD)
            olds = sorted(u64(res, 64 + 8 * i) for i in range(2 * adds))
            check(olds == list(range(COUNT0, COUNT0 + 2 * adds)),
                  f'atomic: the returned values are not {COUNT0}..{COUNT0 + 2 * adds - 1} '
                  f'once each: {olds}')
            # Errors: the responder refuses, the requester completes in error.
            qps[3].post_send(atomic_wr(e.IBV_WR_ATOMIC_FETCH_AND_ADD, res, 2048, rk, ad + 4,
                                       1, wr_id=200))
            check_wc(poll(cq, 1, 'atomic: misaligned')[0], 'atomic on a misaligned address',
                     status=e.IBV_WC_REM_INV_REQ_ERR, wr_id=200)
            ch.send('misaligned')
            ch.recv('misaligned')
            # A fresh QP pair for the access error (the last one is in ERR).
            q2 = rc_qp(n, cq)
            to_init(q2, acc)
            rc_pairs(ch, n, 'atomic2', [q2])
            q2.post_send(atomic_wr(e.IBV_WR_ATOMIC_CMP_AND_SWP, res, 2056, peer['prkey'],
                                   peer['paddr'], V0, V1, wr_id=201))
            check_wc(poll(cq, 1, 'atomic: no REMOTE_ATOMIC')[0],
                     'atomic on an MR without REMOTE_ATOMIC', status=e.IBV_WC_REM_ACCESS_ERR,
                     wr_id=201)
            ch.send('done-ops')
        else:
            ch.recv('misaligned')
            ch.send('misaligned')
            q2 = rc_qp(n, cq)
            to_init(q2, acc)
            rc_pairs(ch, n, 'atomic2', [q2])
            ch.recv('done-ops')
            got = struct.unpack('=QQQ', mem.read(24, 0))
            want = (V3, ADD0 + 0x21, COUNT0 + 2 * adds)
            check(got == want, 'atomic: target memory ' + ' '.join(map(hex, got)) +
                  ', expected ' + ' '.join(map(hex, want)))
            check(u64(plain, 0) == V0, 'atomic: an MR without REMOTE_ATOMIC was changed')
        ch.exchange('atomic-end')


# ---- mw: memory windows type 1 and 2 (IBA 10.6.7, 9.4.6) ---------------------

MW_OPS = (e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_BIND_MW | e.IBV_QP_EX_WITH_LOCAL_INV |
          e.IBV_QP_EX_WITH_SEND_WITH_INV)


def rdma(qp, cq, op, mr, off, length, rkey, addr, what, status=e.IBV_WC_SUCCESS):
    w = send_wr(op, mr, off, length, 7)
    w.set_wr_rdma(rkey, addr)
    qp.post_send(w)
    check_wc(poll(cq, 1, what)[0], what, e.IBV_WC_RDMA_WRITE if op == e.IBV_WR_RDMA_WRITE
             else e.IBV_WC_RDMA_READ, status=status, wr_id=7)


def sec_mw(ch, role, dev, opt):
    """softib1 binds windows on its MR, softib0 accesses through them.
    Pair 1: type 1 (ibv_bind_mw), write and read inside, a write across its
    end fails.  Pair 2: the type 1 window from another QP of the PD, then a
    zero-length bind invalidates it.  Pair 3: type 2 (IBV_WR_BIND_MW), then
    IBV_WR_LOCAL_INV.  Pair 4: type 2 through ibv_wr_bind_mw, then the peer's
    SEND_WITH_INV (IBV_WC_WITH_INV).  Pair 5: a bind on an MR without
    IBV_ACCESS_MW_BIND fails."""
    win = 4096
    with Node(dev) as n:
        cq = CQ(n.ctx, 64)
        pairs = 5
        if role == 'b':
            mr = need('ibv_reg_mr with IBV_ACCESS_MW_BIND', MR, n.pd, 8 * win,
                      ACC_RW | e.IBV_ACCESS_MW_BIND)
            nobind = MR(n.pd, win, ACC_RW)
            mw1 = need('ibv_alloc_mw(type 1)', MW, n.pd, e.IBV_MW_TYPE_1)
            mw2 = need('ibv_alloc_mw(type 2)', MW, n.pd, e.IBV_MW_TYPE_2)
            mw2b = MW(n.pd, e.IBV_MW_TYPE_2)
            mw1b = MW(n.pd, e.IBV_MW_TYPE_1)
            qps = [rc_qp(n, cq) for _ in range(3)] + [rc_qp(n, cq, send_ops=MW_OPS), rc_qp(n, cq)]
        else:
            mr = MR(n.pd, 8 * win, ACC_RW)
            qps = [rc_qp(n, cq) for _ in range(pairs)]
        for qp in qps:
            to_init(qp, ACC_RW)
        rc_pairs(ch, n, 'mw', qps)
        rw = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
        data = pattern(400, 512)
        if role == 'b':
            # Pair 1: type 1.
            old = mw1.rkey
            bind = MWBind(MWBindInfo(mr, mr.buf + win, win, rw), e.IBV_SEND_SIGNALED, wr_id=1)
            qps[0].bind_mw(mw1, bind)
            check_wc(poll(cq, 1, 'mw: type 1 bind')[0], 'mw: type 1 bind', e.IBV_WC_BIND_MW,
                     wr_id=1)
            check(mw1.rkey != old, 'mw: a type 1 bind kept the old R_Key')
            expect_errno('mw: ibv_bind_mw on a type 2 window', errno.EINVAL,
                         qps[0].bind_mw, mw2, bind)
            ch.send('w1', rkey=mw1.rkey, addr=mr.buf + win)
            ch.recv('w1-done')
            check(mr.read(len(data), win + 100) == data, 'mw: write through type 1 differs')
            check(mr.read(16, 2 * win - 8) == bytes(16), 'mw: a write across the window end '
                  'changed memory')
            # Pair 2: zero-length bind invalidates the type 1 window.
            ch.recv('w2-used')
            qps[1].bind_mw(mw1, MWBind(MWBindInfo(mr, mr.buf, 0, 0), e.IBV_SEND_SIGNALED, 2))
            check_wc(poll(cq, 1, 'mw: zero-length bind')[0], 'mw: zero-length bind',
                     e.IBV_WC_BIND_MW, wr_id=2)
            ch.send('w2-unbound')
            # Pair 3: type 2 by IBV_WR_BIND_MW, IBV_WR_LOCAL_INV.
            w = SendWR(wr_id=3, opcode=e.IBV_WR_BIND_MW)
            w.set_bind_wr(mw2, MWBindInfo(mr, mr.buf + 2 * win, win, rw))
            rkey3 = w.rkey
            qps[2].post_send(w)
            check_wc(poll(cq, 1, 'mw: type 2 bind')[0], 'mw: type 2 bind', e.IBV_WC_BIND_MW,
                     wr_id=3)
            ch.send('w3', rkey=rkey3, addr=mr.buf + 2 * win)
            ch.recv('w3-used')
            check(mr.read(len(data), 2 * win) == data, 'mw: write through type 2 differs')
            w = SendWR(wr_id=4, opcode=e.IBV_WR_LOCAL_INV)
            w.imm_data = rkey3      # the invalidate_rkey of the union
            qps[2].post_send(w)
            check_wc(poll(cq, 1, 'mw: local invalidate')[0], 'mw: LOCAL_INV',
                     e.IBV_WC_LOCAL_INV, wr_id=4)
            ch.send('w3-invalid')
            # Pair 4: type 2 through the ibv_wr_* API, SEND_WITH_INV from the peer.
            post_recv(qps[3], mr, 6 * win, 256, 5)
            q = qps[3]
            rkey4 = inc_rkey(mw2b.rkey)
            q.wr_start()
            q.wr_id = 6
            q.wr_flags = e.IBV_SEND_SIGNALED
            q.wr_bind_mw(mw2b, rkey4, MWBindInfo(mr, mr.buf + 3 * win, win, rw))
            q.wr_complete()
            check_wc(poll(cq, 1, 'mw: ibv_wr_bind_mw')[0], 'mw: ibv_wr_bind_mw',
                     e.IBV_WC_BIND_MW, wr_id=6)
            ch.send('w4', rkey=rkey4, addr=mr.buf + 3 * win)
            wc = poll(cq, 1, 'mw: SEND_WITH_INV')[0]
            check_wc(wc, 'mw: SEND_WITH_INV', e.IBV_WC_RECV, wr_id=5, byte_len=64,
                     flags=e.IBV_WC_WITH_INV)
            check(wc.imm_data == rkey4, f'mw: invalidated_rkey {wc.imm_data:#x} != {rkey4:#x}')
            check(mr.read(len(data), 3 * win) == data, 'mw: write through ibv_wr_bind_mw')
            ch.send('w4-invalid')
            # Pair 5: no IBV_ACCESS_MW_BIND on the MR.
            try:
                qps[4].bind_mw(mw1b, MWBind(MWBindInfo(nobind, nobind.buf, 1024,
                                                       e.IBV_ACCESS_REMOTE_WRITE),
                                            e.IBV_SEND_SIGNALED, 8))
                wc = poll(cq, 1, 'mw: bind without MW_BIND')[0]
                check(wc.status != e.IBV_WC_SUCCESS,
                      'mw: a bind on an MR without IBV_ACCESS_MW_BIND succeeded')
            except PyverbsRDMAError:
                pass
        else:
            src = 4 * win
            mr.write(data, len(data), src)
            p = ch.recv('w1')
            rdma(qps[0], cq, e.IBV_WR_RDMA_WRITE, mr, src, len(data), p['rkey'],
                 p['addr'] + 100, 'mw: write through type 1')
            rdma(qps[0], cq, e.IBV_WR_RDMA_READ, mr, 0, len(data), p['rkey'], p['addr'] + 100,
                 'mw: read through type 1')
            check(mr.read(len(data), 0) == data, 'mw: read through type 1 differs')
            rdma(qps[0], cq, e.IBV_WR_RDMA_WRITE, mr, src, 16, p['rkey'], p['addr'] + win - 8,
                 'mw: write across the window end', e.IBV_WC_REM_ACCESS_ERR)
            ch.send('w1-done')
            rdma(qps[1], cq, e.IBV_WR_RDMA_READ, mr, 0, 64, p['rkey'], p['addr'] + 100,
                 'mw: type 1 from another QP of the PD')
            ch.send('w2-used')
            ch.recv('w2-unbound')
            rdma(qps[1], cq, e.IBV_WR_RDMA_WRITE, mr, src, 64, p['rkey'], p['addr'],
                 'mw: write after the zero-length bind', e.IBV_WC_REM_ACCESS_ERR)
            p = ch.recv('w3')
            rdma(qps[2], cq, e.IBV_WR_RDMA_WRITE, mr, src, len(data), p['rkey'], p['addr'],
                 'mw: write through type 2')
            ch.send('w3-used')
            ch.recv('w3-invalid')
            rdma(qps[2], cq, e.IBV_WR_RDMA_WRITE, mr, src, 64, p['rkey'], p['addr'],
                 'mw: write after LOCAL_INV', e.IBV_WC_REM_ACCESS_ERR)
            p = ch.recv('w4')
            rdma(qps[3], cq, e.IBV_WR_RDMA_WRITE, mr, src, len(data), p['rkey'], p['addr'],
                 'mw: write through ibv_wr_bind_mw')
            w = send_wr(e.IBV_WR_SEND_WITH_INV, mr, src, 64, 9)
            w.imm_data = p['rkey']
            qps[3].post_send(w)
            check_wc(poll(cq, 1, 'mw: SEND_WITH_INV sent')[0], 'mw: SEND_WITH_INV',
                     e.IBV_WC_SEND, wr_id=9)
            ch.recv('w4-invalid')
            rdma(qps[3], cq, e.IBV_WR_RDMA_WRITE, mr, src, 64, p['rkey'], p['addr'],
                 'mw: write after SEND_WITH_INV', e.IBV_WC_REM_ACCESS_ERR)
        ch.exchange('mw-end')


# ---- the runner ---------------------------------------------------------------

SECTIONS = {'rc': sec_rc, 'ud': sec_ud, 'srq': sec_srq, 'xrc': sec_xrc,
            'xrc_shared': sec_xrc_shared, 'atomic': sec_atomic, 'mw': sec_mw, 'mcast': sec_mcast}


def run_peer(opt):
    """The child: one section's side b on dev_b, reporting over the pipe."""
    rfd, wfd = map(int, opt.fds.split(','))
    global peer_channel
    ch = peer_channel = Channel(rfd, wfd)
    try:
        SECTIONS[opt.peer](ch, 'b', opt.dev_b, opt)
        ch.send('done')
    except Skip as ex:
        ch.send('skip', why=str(ex))
    except Fail as ex:
        ch.send('fail', why=str(ex))
    except Exception:
        ch.send('fail', why=traceback.format_exc())
    return 0


def run_section(name, opt):
    """Side a here, side b in a child; returns (PASS|FAIL|SKIP, reason)."""
    p_r, p_w = os.pipe()   # parent -> child
    c_r, c_w = os.pipe()   # child -> parent
    cmd = [sys.executable, os.path.abspath(__file__), '--peer', name,
           '--fds', f'{p_r},{c_w}', '--dev-a', opt.dev_a, '--dev-b', opt.dev_b]
    child = subprocess.Popen(cmd, pass_fds=(p_r, c_w), stdin=subprocess.DEVNULL)
    os.close(p_r)
    os.close(c_w)
    global peer_channel
    ch = peer_channel = Channel(c_r, p_w)
    status, why = 'PASS', ''
    try:
        SECTIONS[name](ch, 'a', opt.dev_a, opt)
        ch.recv('done')
    except Skip as ex:
        status, why = 'SKIP', str(ex)
    except Fail as ex:
        status, why = 'FAIL', str(ex)
    except Exception:
        status, why = 'FAIL', traceback.format_exc()
    if status != 'PASS':
        # The peer's own report, if it failed first, names the cause.
        try:
            ch.recv('done', timeout=1)
        except (Fail, Skip) as ex:
            if str(ex).startswith('peer: ') and str(ex) != why:
                why = f'{ex} [side a: {why}]' if status == 'FAIL' else str(ex)
        with contextlib.suppress(OSError):
            ch.send(status.lower(), why='the other side stopped')
    os.close(p_w)
    try:
        rc = child.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        child.kill()
        rc = child.wait()
        if status == 'PASS':
            status, why = 'FAIL', 'the child did not exit'
    if rc != 0 and status == 'PASS':
        status, why = 'FAIL', f'the child exited with {rc}'
    os.close(c_r)
    return status, why


def main():
    sections = '\n'.join(textwrap.fill(' '.join(f.__doc__.split()), 79, initial_indent=
                                        f'  {k:7}', subsequent_indent=' ' * 9)
                          for k, f in SECTIONS.items())
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog='sections:\n' + sections)
    ap.add_argument('sections', nargs='*', metavar='SECTION',
                    help='sections to run (default: all): ' + ' '.join(SECTIONS))
    ap.add_argument('--strict', action='store_true', help='a SKIP is a failure')
    ap.add_argument('--dev-a', default='softib0', help='this process\'s device')
    ap.add_argument('--dev-b', default='softib1', help='the child\'s device')
    ap.add_argument('--peer', help=argparse.SUPPRESS)
    ap.add_argument('--fds', help=argparse.SUPPRESS)
    opt = ap.parse_args()
    if opt.peer:
        return run_peer(opt)
    for s in opt.sections:
        if s not in SECTIONS:
            ap.error(f'unknown section {s} (have: {" ".join(SECTIONS)})')
    print(f'libibverbs: {libibverbs_path() or "not loaded"}', flush=True)
    bad = 0
    for name in opt.sections or list(SECTIONS):
        t0 = time.monotonic()
        status, why = run_section(name, opt)
        print(f'{status} {name} ({time.monotonic() - t0:.1f} s){": " + why if why else ""}',
              flush=True)
        bad += status == 'FAIL' or (status == 'SKIP' and opt.strict)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
