/* SPDX-License-Identifier: MIT */
/*
 * MAI, the Management Application Interface (seed 002, "Evolution of an
 * InfiniBand API", J. Mott): the only way agents and managers send and
 * receive MADs on QP0 (SMI) and QP1 (GSI).  IBA 13.4 (MAD formats), ch. 13
 * (SMI/GSI), 7.7/8.3 (LRH/GRH fields a filter may name).
 * This header is the whole public contract; it must not expose softibd's
 * control protocol.  The pure functions (streams, wire, filter checks and
 * matching) touch only their arguments: no locks, no I/O, no allocation.
 */
#ifndef SOFTIB_MAI_H
#define SOFTIB_MAI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- sizes (IBA 13.4: every MAD is 256 bytes, 24 of common header) ---- */
#define MAI_MAD_SIZE		256	/* bytes of a MAD on the wire */
#define MAI_MAD_HDR_SIZE	24	/* common MAD header, IBA 13.4 (mad-formats.md §1) */
#define MAI_MAD_DATA_SIZE	(MAI_MAD_SIZE - MAI_MAD_HDR_SIZE)	/* 232 */
#define MAI_FILTER_QUANT_MAX	4	/* (offset, length, value) per filter */
#define MAI_QUANT_LEN_MAX	8	/* bytes one quantifier compares */

/* The byte streams of mai_mmstream / mai_mfstream: fixed sizes, so a
 * reader can tell a truncated stream from a whole one (docs/mai.md). */
#define MAI_MSTREAM_SIZE	(8 + 92 + MAI_MAD_DATA_SIZE)	/* 332 */
#define MAI_FSTREAM_SIZE	(8 + 58 + MAI_FILTER_QUANT_MAX * 12)	/* 114 */

/* Message types (seed 002 "mai_send flow"). */
enum mai_type {
	MAI_TYPE_MAD = 1,	/* a normal MAD: softibd builds LRH/GRH/BTH/DETH */
	MAI_TYPE_RAW = 2,	/* a raw MAD: the sender gives LRH/GRH; privileged only */
	MAI_TYPE_OOB = 3,	/* no MAD: out-of-band data wrapped back to the
				 * receive queues of every channel with a matching
				 * filter (takeover state handed to the new owner) */
	MAI_TYPE_TIMEOUT = 4,	/* softibd -> channel only: a request sent with
				 * mai_send_req got no response with its TID in
				 * timeout_ms after `retries` resends; the message
				 * is that request's header, data_len 0 (the
				 * kernel's umad status 110, ETIMEDOUT) */
};

/* LRH fields (IBA 7.7): host order, each within its bit width. */
struct mai_lrh {
	uint8_t vl;		/* 4 bits; 15 for QP0 (VL15) */
	uint8_t lver;		/* 4 bits */
	uint8_t sl;		/* 4 bits */
	uint8_t lnh;		/* 2 bits: 2 = IBA local, 3 = IBA global (GRH) */
	uint16_t dlid;
	uint16_t slid;
	uint16_t pktlen;	/* 11 bits, in 4-byte words */
};

/* GRH fields (IBA 8.3): host order; gids in network order as on the wire. */
struct mai_grh {
	uint8_t ipver;		/* 4 bits, 6 */
	uint8_t tclass;
	uint32_t flow_label;	/* 20 bits */
	uint16_t paylen;
	uint8_t nxthdr;
	uint8_t hoplmt;
	uint8_t sgid[16];
	uint8_t dgid[16];
};

/*
 * mai_mad_t (seed 002: "holds a complete MAD plus routing information").
 * The common MAD header (IBA 13.4) is kept decoded in host order; the
 * class-specific rest stays as the 232 bytes of the wire (its layout is
 * the class's business).  For MAI_TYPE_OOB, data holds data_len bytes of
 * the sender's state and the header fields address the filters.
 */
typedef struct mai_mad {
	uint8_t type;		/* enum mai_type */
	uint8_t port;		/* CA or switch port the MAD came in on / goes out of */
	uint8_t qp;		/* 0 (SMI) or 1 (GSI): the channel's QP */
	uint8_t has_grh;	/* 0 or 1: grh is meaningful */
	uint32_t remote_qpn;	/* 24 bits: source QP received / destination QP sent */
	uint32_t remote_qkey;	/* Q_Key received, or to send (QP1: 0x80010000, the
				 * well-known GSI Q_Key, or 0x80000000: QP1's own;
				 * softibd drops a GMP with any other, docs/mai.md) */
	uint16_t pkey_index;
	uint16_t data_len;	/* bytes of data used: MAI_MAD_DATA_SIZE for MAD/RAW,
				 * 0..MAI_MAD_DATA_SIZE for OOB */
	struct mai_lrh lrh;
	struct mai_grh grh;
	/* common MAD header, IBA 13.4 (mad-formats.md §1) */
	uint8_t base_version;	/* 1 for IB */
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;		/* with the R bit (0x80) as on the wire */
	uint16_t status;
	uint16_t class_specific;	/* DR SMP: HopPointer << 8 | HopCount */
	uint64_t tid;
	uint16_t attr_id;
	uint16_t resv;
	uint32_t attr_mod;
	uint8_t data[MAI_MAD_DATA_SIZE];	/* MAD bytes 24..255, wire order */
} mai_mad_t;

/* One quantifier: the `length` bytes of the MAD at byte `offset` (counted
 * from byte 0 of the MAD, so the class-specific fields start at 24), read
 * big-endian (IBA byte order), must equal `value` (seed 002: "quantifiers
 * (offset, length, value) into the class specific fields"). */
struct mai_quant {
	uint16_t offset;	/* bytes; offset + length <= MAI_MAD_SIZE */
	uint8_t length;		/* 1..MAI_QUANT_LEN_MAX bytes */
	uint64_t value;		/* fits in length bytes */
};

/* Which fields of a filter are compared (Filter_t.match).  A field whose
 * bit is clear matches anything. */
enum mai_match_bits {
	MAI_M_PORT	= 1u << 0,	/* mai_mad_t.port */
	MAI_M_SLID	= 1u << 1,	/* LRH */
	MAI_M_DLID	= 1u << 2,
	MAI_M_SL	= 1u << 3,
	MAI_M_SGID	= 1u << 4,	/* GRH: only a MAD with a GRH can match */
	MAI_M_DGID	= 1u << 5,
	MAI_M_BASE_VER	= 1u << 6,	/* common MAD header */
	MAI_M_CLASS	= 1u << 7,
	MAI_M_CLASS_VER	= 1u << 8,
	MAI_M_METHOD	= 1u << 9,	/* with the R bit: a response is its own method */
	MAI_M_ATTR	= 1u << 10,
	MAI_M_ALL	= (1u << 11) - 1,
};

/* Filter_t.flags */
enum mai_filter_flags {
	MAI_F_CONSUME	= 1u << 0,	/* deliver exclusively to this filter's
					 * channel; clear: a copy to every match */
	MAI_F_EXCLUSIVE	= 1u << 1,	/* with CONSUME only: mai_filter_create fails
					 * (-EBUSY) while a consuming filter with the
					 * same template (mai_filter_same) is attached
					 * on the device, port and QP, as the kernel
					 * refuses a method in use (ib_register_mad_agent) */
	MAI_F_ALL	= MAI_F_CONSUME | MAI_F_EXCLUSIVE,
};

/*
 * Filter_t (seed 002: "holds a MAD template used to select MADs to
 * receive"): the template fields compared where `match` says, and up to
 * MAI_FILTER_QUANT_MAX quantifiers that must all hold.
 */
typedef struct mai_filter {
	uint32_t handle;	/* set by mai_filter_create; 0 before */
	uint32_t flags;		/* enum mai_filter_flags */
	uint32_t match;		/* enum mai_match_bits */
	uint8_t port;
	uint8_t sl;
	uint16_t slid;
	uint16_t dlid;
	uint8_t sgid[16];
	uint8_t dgid[16];
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	uint16_t attr_id;
	uint8_t nquant;		/* 0..MAI_FILTER_QUANT_MAX */
	struct mai_quant quant[MAI_FILTER_QUANT_MAX];
} mai_filter_t;

/* ---- channel functions (src/mai/mai_client.c, over softibd's control
 * socket; docs/mai.md "Channels").  Thread-safe; a channel handle is a
 * pollable file descriptor (POLLIN: a message waits). ---- */

/* Bits 63..40 of a request's TID: softibd writes the sending channel's
 * number there and routes responses by them; bits 39..0 are the sender's. */
#define MAI_TID_CHAN_SHIFT	40
#define MAI_TID_CHAN_MASK	0xFFFFFFu

/* Opens a channel to QP `qp` (0 or 1) of device `dev` port `port` (seed 002
 * "mai_open") through softibd (the verbs library's socket rules: $SOFTIB_SOCKET,
 * ...; autostarts it likewise).  Returns a channel handle >= 0 (a file
 * descriptor, close-on-exec, O_NONBLOCK: read/recv on it never block, as on
 * /dev/infiniband/umad*), or -EINVAL (qp not 0/1, port 0 on a CA, dev
 * NULL or too long), -ENODEV (no such device or port), -EACCES (QP0 without
 * privilege: uid 0 or CAP_NET_ADMIN, docs/mai.md), or the transport's
 * -errno (-ECONNREFUSED, -ETIMEDOUT, ...). */
int mai_open(const char *dev, uint8_t port, uint8_t qp);

/* Closes a channel; its filters are deleted and queued MADs dropped
 * ("mai_close").  0 or -EBADF. */
int mai_close(int chan);

/* Attaches filter *f to channel `chan` ("mai_filter_create"); checked as
 * mai_filter_check does.  Sets f->handle.  0, -EBADF, -EINVAL, -ENOMEM;
 * -EBUSY: MAI_F_EXCLUSIVE and the template is already consumed there. */
int mai_filter_create(int chan, mai_filter_t *f);

/* Removes the filter `handle` of channel `chan` ("mai_filter_delete").
 * 0, -EBADF, -ENOENT. */
int mai_filter_delete(int chan, uint32_t handle);

/* Sends *m on `chan` ("mai_send"): MAD, RAW (privileged clients only:
 * -EPERM otherwise) or OOB (wrapped back to matching filters).  m->qp must
 * be the channel's QP; m->port is the channel's port whatever it says.
 * softibd puts the channel number in TID bits 63..40 of a request (not of
 * a response or TrapRepress, nor of RAW).  0, -EBADF, -EINVAL
 * (mai_mad_check fails, or a TIMEOUT), -EPERM, -EAGAIN (queue full),
 * -ECONNRESET (softibd is gone).  A MAD that cannot be delivered is
 * dropped and counted by softibd (`softib status`, "mad" lines). */
int mai_send(int chan, const mai_mad_t *m);

/* mai_send for a request that expects a response, with the kernel umad
 * semantics (mgmt.md 1.4): without a response carrying the same TID
 * (after softibd's rewrite of bits 63..40) and class within timeout_ms,
 * softibd sends it again, `retries` times, then queues the request's
 * header back to the channel as MAI_TYPE_TIMEOUT.  timeout_ms 0 is
 * mai_send.  m must be a MAD (not RAW/OOB) request (no R bit, not
 * TrapRepress): else -EINVAL.  Other errors as mai_send.  A second
 * request with a TID still outstanding is answered at once by a TIMEOUT. */
int mai_send_req(int chan, const mai_mad_t *m, uint32_t timeout_ms, uint32_t retries);

/* Receives the next message that passed one of `chan`'s filters, or a
 * response routed by TID, or a TIMEOUT ("mai_recv"), waiting at most
 * timeout_ms (0: poll, <0: forever).  0, -EBADF, -ETIMEDOUT, -EINTR,
 * -ECONNRESET (softibd closed the channel), -EBADMSG (a malformed
 * message: skipped). */
int mai_recv(int chan, mai_mad_t *m, int timeout_ms);

/* ---- pure functions (libsib_mai) ---- */

/* Checks that *m is a message the streams and mai_send accept: known type,
 * qp 0/1, has_grh 0/1, every LRH/GRH field within its bit width,
 * remote_qpn within 24 bits, data_len MAI_MAD_DATA_SIZE for MAD/RAW and at
 * most that for OOB.  0 or -EINVAL.  (MAD header values are not judged
 * here: a bad base version is the agent's to answer with a status, mad-formats.md §1.2.) */
int mai_mad_check(const mai_mad_t *m);

/* Checks a filter: known flags and match bits, sl within 4 bits, nquant
 * <= MAI_FILTER_QUANT_MAX, each quantifier 1..8 bytes inside the MAD with
 * a value that fits its length.  0 or -EINVAL. */
int mai_filter_check(const mai_filter_t *f);

/* mai_mmstream (seed 002: "convert mai_mad_t to byte stream"): writes *m as
 * the endian-independent stream of docs/mai.md (magic "MAIM", version 1,
 * every field big-endian at a fixed place) into buf[0..cap).  Returns the
 * bytes written (MAI_MSTREAM_SIZE), -EINVAL if mai_mad_check fails,
 * -ENOSPC if cap < MAI_MSTREAM_SIZE. */
int mai_mmstream(const mai_mad_t *m, uint8_t *buf, size_t cap);

/* mai_rmstream ("inverse of mai_mmstream"): reads one message stream from
 * buf[0..len) into *m.  Returns the bytes used (MAI_MSTREAM_SIZE);
 * -EMSGSIZE if len is shorter than a stream (truncated), -EBADMSG for a
 * wrong magic, version or length, or a decoded message that fails
 * mai_mad_check; -EINVAL if m is NULL.  *m is written only on success. */
int mai_rmstream(const uint8_t *buf, size_t len, mai_mad_t *m);

/* mai_mfstream ("convert Filter_t to byte stream"): as mai_mmstream for a
 * filter (magic "MAIF").  Bytes written (MAI_FSTREAM_SIZE), -EINVAL if
 * mai_filter_check fails, -ENOSPC. */
int mai_mfstream(const mai_filter_t *f, uint8_t *buf, size_t cap);

/* mai_rfstream ("inverse of mai_mfstream").  Bytes used, -EMSGSIZE,
 * -EBADMSG (also for a filter failing mai_filter_check), -EINVAL if f is
 * NULL.  *f is written only on success. */
int mai_rfstream(const uint8_t *buf, size_t len, mai_filter_t *f);

/* mai_towire ("create InfiniBand MAD from mai_mad_t"): the 256-byte MAD,
 * common header big-endian at IBA 13.4's offsets, then data.  The LRH,
 * GRH and QP fields are routing, not MAD: the sender builds those headers.
 * Returns MAI_MAD_SIZE, -EINVAL (fails mai_mad_check, or an OOB message:
 * it has no wire form), -ENOSPC if cap < MAI_MAD_SIZE. */
int mai_towire(const mai_mad_t *m, uint8_t *wire, size_t cap);

/* mai_fromwire ("create mai_mad_t from an InfiniBand MAD"): decodes the
 * MAD in wire[0..len) into the MAD fields of *m (type MAD, header, data,
 * data_len) and leaves its routing fields (port, qp, LRH, GRH, remote QP,
 * Q_Key, P_Key index) as the caller set them from the receive.  Returns
 * MAI_MAD_SIZE, -EMSGSIZE if len != MAI_MAD_SIZE (a MAD is never shorter
 * or longer, IBA 13.4), -EINVAL if m is NULL. */
int mai_fromwire(const uint8_t *wire, size_t len, mai_mad_t *m);

/* One attached filter as the matching engine sees it. */
struct mai_filter_ent {
	uint32_t chan;		/* channel that receives */
	uint64_t seq;		/* creation order: larger is newer */
	const mai_filter_t *f;
	uint8_t internal;	/* 1: softibd's own agent (SMA, PMA): its consuming
				 * filters are tried before every client's, as a
				 * kernel driver answers SMPs and PerfMgt before any
				 * agent sees them */
};

/* Does filter f pass message m?  Every field named in f->match equal and
 * every quantifier equal.  Quantifiers read the MAD as mai_towire would
 * write it (bytes past data_len of an OOB read as 0).  1 or 0. */
int mai_filter_match(const mai_filter_t *f, const mai_mad_t *m);

/* Do a and b select the same MADs by the same template: equal match bits,
 * equal values in the fields they name, the same quantifiers in order, and
 * both consuming or both not?  (handle and other flags ignored.)  1 or 0. */
int mai_filter_same(const mai_filter_t *a, const mai_filter_t *b);

/* How specific a filter is: the number of fields it compares (bits set in
 * match) plus its quantifiers.  mai_match's precedence among consumers. */
int mai_filter_specificity(const mai_filter_t *f);

/*
 * Who receives m (seed 002: "consuming or non-consuming"; the precedence
 * among several consuming filters is softib's, docs/mai.md):
 *  - MAD or RAW: if any consuming filter passes m, only the channel of the
 *    first such filter by: internal (softibd's agents) before clients, then
 *    the most specific (mai_filter_specificity), among equally
 *    specific ones the newest (largest seq: the agent that took over),
 *    receives; otherwise every channel with a passing non-consuming filter
 *    receives.
 *  - OOB: every channel with a passing filter, consuming or not ("queued to
 *    the input buffers of all channels with matching filters").
 * `ents` holds the filters of the channels opened on the device and QP
 * (0 or 1) the message came in on: the seed's "physical source (channel,
 * port)" is the caller's list plus MAI_M_PORT.
 * A channel appears once however many of its filters pass, in the order
 * of the first such filter in `ents`.  Writes up to `max` channels to
 * out[] and returns how many receive (may exceed max: the caller's array
 * was short); 0 means nobody (the caller drops and counts, or answers).
 * -EINVAL if m is NULL or not MAD/RAW/OOB, or an array is NULL while
 * its count is not 0.
 */
int mai_match(const struct mai_filter_ent *ents, size_t n, const mai_mad_t *m,
	      uint32_t *out, size_t max);

#ifdef __cplusplus
}
#endif
#endif /* SOFTIB_MAI_H */
