/* SPDX-License-Identifier: MIT */
/*
 * softibd control protocol: the "uverbs" of softib (seed 003).
 *
 * Clients talk to softibd over a SOCK_SEQPACKET Unix socket.  Every message
 * is one fixed-layout struct sib_ctl_msg: a header plus one body per op.
 * Objects are named by small per-connection handles, never by pointers.
 * File descriptors (the fabric map and inboxes, both memfds) travel as
 * SCM_RIGHTS ancillary data on the reply.
 *
 * Changing any struct in this file changes SIB_ABI_VERSION.
 */
#ifndef SIB_CTL_H
#define SIB_CTL_H

#include <stdint.h>

#define SIB_ABI_VERSION 2u  /* 2: link area in the fabric map, LINK_* ops */
#define SIB_CTL_MAGIC   0x53494243u /* "SIBC" */

/* Default socket path when SOFTIB_SOCKET is unset: $XDG_RUNTIME_DIR/softib.sock,
 * else /tmp/softib-<uid>/softib.sock (see sib_ctl_default_path()). */

enum sib_ctl_op {
	SIB_CTL_HELLO = 1,     /* -> fabric memfd */
	SIB_CTL_OPEN_DEVICE,   /* -> device handle, inbox index and memfd */
	SIB_CTL_CLOSE_DEVICE,
	SIB_CTL_GET_INBOX,     /* map a peer's inbox: -> memfd */
	SIB_CTL_CREATE_OBJ,    /* PD, MR, CQ, QP, ...: -> handle (+ QPN) */
	SIB_CTL_DESTROY_OBJ,
	SIB_CTL_STATUS,        /* -> text report, in chunks */
	SIB_CTL_SHUTDOWN,      /* stop the daemon (tests, `softib stop`) */
	SIB_CTL_LINK_CAPTURE,  /* arm a capture ring on ports: -> its memfd (`softib capture`) */
	SIB_CTL_GET_CAPTURE,   /* map an armed capture ring: -> memfd (clients' links) */
	SIB_CTL_LINK_FAULTS,   /* set or clear a port's faults (`softib fault`) */
	SIB_CTL_OP_MAX,
};

/* Object types tracked per connection (also the status report columns). */
enum sib_obj_type {
	SIB_OBJ_PD = 1,
	SIB_OBJ_MR,
	SIB_OBJ_CQ,
	SIB_OBJ_QP,
	SIB_OBJ_SRQ,
	SIB_OBJ_AH,
	SIB_OBJ_COMP_CHANNEL,
	SIB_OBJ_TYPE_MAX,
};

struct sib_ctl_hdr {
	uint32_t magic;   /* SIB_CTL_MAGIC */
	uint16_t op;      /* enum sib_ctl_op */
	uint16_t flags;   /* SIB_CTL_F_* */
	uint32_t seq;     /* echoed in the reply */
	int32_t status;   /* reply: 0 or a positive errno */
};

#define SIB_CTL_F_MORE 0x1 /* reply: more chunks follow (STATUS) */

struct sib_ctl_hello {
	uint32_t abi_version; /* in and out */
	int32_t pid;          /* in */
	uint32_t fabric_size; /* out: bytes of the fabric memfd */
	uint32_t num_devices; /* out */
};

struct sib_ctl_open_device {
	uint32_t dev_index;   /* in: index in sib_fabric_shm.devs */
	uint32_t handle;      /* out */
	uint32_t inbox;       /* out: inbox index */
	uint32_t inbox_gen;   /* out */
	uint32_t inbox_size;  /* out: bytes of the inbox memfd */
};

struct sib_ctl_get_inbox {
	uint32_t inbox;       /* in */
	uint32_t inbox_gen;   /* in: must match, else ESTALE */
	uint32_t inbox_size;  /* out */
};

struct sib_ctl_obj {
	uint32_t type;        /* enum sib_obj_type */
	uint32_t dev_handle;  /* in: the owning OPEN_DEVICE handle */
	uint32_t handle;      /* out (CREATE) / in (DESTROY) */
	uint32_t qpn;         /* out for QPs: 24-bit QPN, unique per port */
	uint32_t qp_type;     /* in for QPs: enum ibv_qp_type */
	uint32_t pad;
};

/* LINK_CAPTURE, GET_CAPTURE, LINK_FAULTS (docs/link.md). */
#define SIB_CTL_LINK_ALL   0xffffffffu /* dev_index: every device */
#define SIB_CTL_SPEC_MAX   256
struct sib_ctl_link {
	uint32_t dev_index;   /* in: index in sib_fabric_shm.devs, or SIB_CTL_LINK_ALL */
	uint32_t port;        /* in: port number, 0 = every port */
	uint32_t cap;         /* out (LINK_CAPTURE), in (GET_CAPTURE): SIB_LINK_CAP_MAKE word */
	uint32_t ring_size;   /* out: bytes of the capture ring memfd */
	char spec[SIB_CTL_SPEC_MAX]; /* in (LINK_FAULTS): SOFTIB_FAULTS syntax, "off" = none */
};

#define SIB_CTL_TEXT_MAX 3072

struct sib_ctl_text {
	uint32_t len;
	char text[SIB_CTL_TEXT_MAX];
};

struct sib_ctl_msg {
	struct sib_ctl_hdr hdr;
	union {
		struct sib_ctl_hello hello;
		struct sib_ctl_open_device open;
		struct sib_ctl_get_inbox get_inbox;
		struct sib_ctl_obj obj;
		struct sib_ctl_text text;
		struct sib_ctl_link link;
		uint32_t handle;
	} u;
};

_Static_assert(sizeof(struct sib_ctl_hdr) == 16, "ctl header is ABI");
_Static_assert(sizeof(struct sib_ctl_obj) == 24, "ctl obj is ABI");

#endif
