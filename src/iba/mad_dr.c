// SPDX-License-Identifier: MIT
/*
 * softib directed-route SMI rules (IBA 14.2.2: C14-6 hop count limit, C14-9
 * outgoing, C14-13 returning) and the SMA's reply transformation, as pure
 * functions over one 256-byte SMP held by the caller. They change only the
 * SMP's HopPointer, ReturnPath, method and Status; no I/O, no state, no
 * allocation. Restated from mad-formats.md §2.2 (the rules smi.c applies).
 */
#include <errno.h>
#include <stdint.h>

#include "iba/fields.h"
#include "iba/mad.h"

/* Byte positions of the DR fields (IBA 14.2.1.2). */
enum {
	DR_STATUS = 4,		/* bit 7 of byte 4: D */
	DR_HOP_PTR = 6,
	DR_HOP_CNT = 7,
	DR_SLID = 32,
	DR_DLID = 34,
	DR_IPATH = MAD_SMP_PATH_OFFS,
	DR_RPATH = MAD_SMP_PATH_OFFS + MAD_DR_MAX_HOPS,
};

static struct mad_dr_result res(enum mad_dr_verdict v, uint8_t port, uint16_t lid)
{
	struct mad_dr_result r = { .verdict = v, .port = port, .lid = lid };

	return r;
}

static inline bool is_d(const uint8_t *mad)
{
	return mad[DR_STATUS] & 0x80;
}

static inline uint16_t ld16(const uint8_t *p)
{
	return (uint16_t)iba_ld_be(p, 2);
}

const char *mad_dr_verdict_str(enum mad_dr_verdict v)
{
	switch (v) {
	case MAD_DR_SEND: return "send";
	case MAD_DR_LOCAL: return "local";
	case MAD_DR_FORWARD: return "forward";
	case MAD_DR_LID_ROUTE: return "lid_route";
	case MAD_DR_DROP_HOP_CNT: return "drop_hop_cnt";
	case MAD_DR_DROP_HOP_PTR: return "drop_hop_ptr";
	case MAD_DR_DROP_PORT: return "drop_port";
	case MAD_DR_DROP_NOT_SWITCH: return "drop_not_switch";
	case MAD_DR_DROP_PERMISSIVE: return "drop_permissive";
	case MAD_DR_DROP_NOT_DR: return "drop_not_dr";
	}
	return "?";
}

/* Common entry checks: class 0x81 and HopCount < 64 (C14-6). */
static bool dr_ok(const uint8_t *mad, struct mad_dr_result *r)
{
	if (mad[1] != MAD_MGMT_CLASS_SUBN_DIRECTED_ROUTE) {
		*r = res(MAD_DR_DROP_NOT_DR, 0, 0);
		return false;
	}
	if (mad[DR_HOP_CNT] >= MAD_DR_MAX_HOPS) {
		*r = res(MAD_DR_DROP_HOP_CNT, 0, 0);
		return false;
	}
	return true;
}

/* Verdict for "the path entry must equal the port we send on". */
static struct mad_dr_result path_is(uint8_t entry, uint8_t port)
{
	return res(entry == port ? MAD_DR_SEND : MAD_DR_DROP_PORT, port, 0);
}

struct mad_dr_result mad_dr_send(uint8_t *mad, const struct mad_dr_node *node,
				 uint8_t port)
{
	struct mad_dr_result r;
	uint8_t *hp = &mad[DR_HOP_PTR];
	uint8_t hc = mad[DR_HOP_CNT];

	if (!dr_ok(mad, &r))
		return r;
	if (!is_d(mad)) {
		if (hc && *hp == 0) {			/* C14-9:1 originator */
			(*hp)++;
			return path_is(mad[DR_IPATH + *hp], port);
		}
		if (*hp && *hp < hc) {			/* C14-9:2 intermediate */
			if (!node->is_switch)
				return res(MAD_DR_DROP_NOT_SWITCH, 0, 0);
			(*hp)++;
			return path_is(mad[DR_IPATH + *hp], port);
		}
		if (*hp == hc) {			/* C14-9:3 end of DR part */
			(*hp)++;
			if (node->is_switch || ld16(mad + DR_DLID) == MAD_PERMISSIVE_LID)
				return res(MAD_DR_SEND, port, 0);
			return res(MAD_DR_DROP_PERMISSIVE, 0, 0);
		}
		if (*hp == hc + 1)			/* C14-9:4 */
			return res(MAD_DR_SEND, port, 0);
		return res(MAD_DR_DROP_HOP_PTR, 0, 0);	/* C14-9:5 */
	}
	if (hc && *hp == hc + 1) {			/* C14-13:1 responder */
		(*hp)--;
		return path_is(mad[DR_RPATH + *hp], port);
	}
	if (*hp >= 2 && *hp <= hc) {			/* C14-13:2 intermediate */
		if (!node->is_switch)
			return res(MAD_DR_DROP_NOT_SWITCH, 0, 0);
		(*hp)--;
		return path_is(mad[DR_RPATH + *hp], port);
	}
	if (*hp == 1) {					/* C14-13:3 end of DR part */
		(*hp)--;
		if (node->is_switch || ld16(mad + DR_SLID) == MAD_PERMISSIVE_LID)
			return res(MAD_DR_SEND, port, 0);
		return res(MAD_DR_DROP_PERMISSIVE, 0, 0);
	}
	if (*hp == 0)					/* C14-13:4 */
		return res(MAD_DR_SEND, port, 0);
	return res(MAD_DR_DROP_HOP_PTR, 0, 0);		/* C14-13:5 */
}

/* D=0 arrival (C14-9 at the receiving node). */
static struct mad_dr_result recv_out(uint8_t *mad, const struct mad_dr_node *node,
				     uint8_t port)
{
	uint8_t *hp = &mad[DR_HOP_PTR];
	uint8_t hc = mad[DR_HOP_CNT];
	uint16_t dlid = ld16(mad + DR_DLID);
	uint8_t out;

	if (hc && *hp == 0)				/* C14-9:1 not incremented */
		return res(MAD_DR_DROP_HOP_PTR, 0, 0);
	if (*hp && *hp < hc) {				/* C14-9:2 intermediate */
		if (!node->is_switch)
			return res(MAD_DR_DROP_NOT_SWITCH, 0, 0);
		mad[DR_RPATH + *hp] = port;
		out = mad[DR_IPATH + *hp + 1];
		if (out > node->num_ports)
			return res(MAD_DR_DROP_PORT, out, 0);
		(*hp)++;				/* the send step for out */
		return res(MAD_DR_FORWARD, out, 0);
	}
	if (*hp == hc) {				/* C14-9:3 end of DR part */
		if (hc)
			mad[DR_RPATH + *hp] = port;
		if (dlid == MAD_PERMISSIVE_LID) {
			(*hp)++;			/* loop back: hop_cnt + 1 */
			return res(MAD_DR_LOCAL, port, 0);
		}
		if (node->is_switch)
			return res(MAD_DR_LID_ROUTE, 0, dlid);
		return res(MAD_DR_DROP_PERMISSIVE, 0, 0);
	}
	if (*hp == hc + 1)				/* C14-9:4 */
		return res(MAD_DR_LOCAL, port, 0);
	return res(MAD_DR_DROP_HOP_PTR, 0, 0);		/* C14-9:5 */
}

/* D=1 arrival (C14-13 at the receiving node). */
static struct mad_dr_result recv_ret(uint8_t *mad, const struct mad_dr_node *node,
				     uint8_t port)
{
	uint8_t *hp = &mad[DR_HOP_PTR];
	uint8_t hc = mad[DR_HOP_CNT];
	uint16_t slid = ld16(mad + DR_SLID);
	uint8_t out;

	if (hc && *hp == hc + 1) {			/* C14-13:1 */
		(*hp)--;
		if (mad[DR_RPATH + *hp] != port)
			return res(MAD_DR_DROP_PORT, port, 0);
	}
	if (*hp >= 2 && *hp <= hc) {			/* C14-13:2 intermediate */
		if (!node->is_switch)
			return res(MAD_DR_DROP_NOT_SWITCH, 0, 0);
		out = mad[DR_RPATH + *hp - 1];
		if (out > node->num_ports)
			return res(MAD_DR_DROP_PORT, out, 0);
		(*hp)--;				/* the send step for out */
		return res(MAD_DR_FORWARD, out, 0);
	}
	if (*hp == 1) {					/* C14-13:3 end of DR part */
		if (slid == MAD_PERMISSIVE_LID) {
			(*hp)--;			/* to the SM, hop_ptr 0 */
			return res(MAD_DR_LOCAL, port, 0);
		}
		if (node->is_switch) {
			(*hp)--;
			return res(MAD_DR_LID_ROUTE, 0, slid);
		}
		return res(MAD_DR_DROP_PERMISSIVE, 0, 0);
	}
	if (*hp == 0)					/* C14-13:4 */
		return res(MAD_DR_LOCAL, port, 0);
	return res(MAD_DR_DROP_HOP_PTR, 0, 0);		/* C14-13:5 */
}

struct mad_dr_result mad_dr_recv(uint8_t *mad, const struct mad_dr_node *node,
				 uint8_t port)
{
	struct mad_dr_result r;

	if (!dr_ok(mad, &r))
		return r;
	return is_d(mad) ? recv_ret(mad, node, port) : recv_out(mad, node, port);
}

int mad_make_reply(uint8_t *mad, uint16_t status)
{
	bool dr = mad[1] == MAD_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
	uint8_t method = mad[3];

	if (method & MAD_METHOD_RESP_MASK || method == MAD_METHOD_TRAP_REPRESS)
		return -EINVAL;
	if (dr && (status & MAD_SMP_DIRECTION))
		return -EINVAL;
	switch (method) {
	case MAD_METHOD_GET:
	case MAD_METHOD_SET:
		mad[3] = MAD_METHOD_GET_RESP;	/* there is no SetResp */
		break;
	case MAD_METHOD_TRAP:
		mad[3] = MAD_METHOD_TRAP_REPRESS;	/* not a response: R=0 */
		break;
	default:
		mad[3] = method | MAD_METHOD_RESP_MASK;
		break;
	}
	if (dr)
		status |= MAD_SMP_DIRECTION;	/* C14-13: D=1, paths kept */
	iba_st_be(mad + DR_STATUS, 2, status);
	return 0;
}
