// SPDX-License-Identifier: MIT
/*
 * The PMA of every node (IBA 1.4 vol 1, 16.1 Performance Management, class
 * 0x04 on QP1): ClassPortInfo (16.1.3.1... 13.4.8.1), PortCounters
 * (16.1.3.5) and PortCountersExtended (16.1.4.6) as a table {attribute,
 * get, set}.  Counters are what softibd counted (subnet.h) plus, on CA
 * ports of verbs devices, the contexts' data-path counters
 * (the host's data_counters); a clearing Set moves the port's `base` up to the
 * current totals, nothing is written to a client.  Single-threaded; no locks.
 */
#include <stddef.h>
#include <string.h>

#include "subnet/sma.h"
#include "subnet/subnet_int.h"

/* ClassPortInfo.CapabilityMask (16.1.2 table 209): AllPortSelect (8),
 * PortCountersExtended (9), PortXmitWait (12), QP1Dropped (15);
 * CapabilityMask2 bit 1: PortCountersExtended has the error counters. */
#define PMA_CAP_MASK   ((1u << 8) | (1u << 9) | (1u << 12) | (1u << 15))
#define PMA_CAP_MASK2  (1u << 1)
#define PMA_RESP_TIME  8 /* 4.096 us * 2^8 ~ 1 ms */
#define ALL_PORTS      0xFF

#define F(name) offsetof(struct sib_pma_counters, name)

/* PortCounters CounterSelect bits 0-15, then CounterSelect2 bits 0-1 (16, 17). */
static const size_t pc_select[] = {
	F(symbol_errors), F(link_error_recovery), F(link_downed), F(rcv_errors),
	F(rcv_remote_physical_errors), F(rcv_switch_relay_errors), F(xmit_discards),
	F(xmit_constraint_errors), F(rcv_constraint_errors), F(local_link_integrity_errors),
	F(excessive_buffer_overrun_errors), F(vl15_dropped), F(xmit_data), F(rcv_data),
	F(xmit_pkts), F(rcv_pkts), F(xmit_wait), F(qp1_dropped),
};

/* PortCountersExtended CounterSelect bits 0-7, then CounterSelect2 bits 0-13 (8..21). */
static const size_t pcx_select[] = {
	F(xmit_data), F(rcv_data), F(xmit_pkts), F(rcv_pkts), F(ucast_xmit_pkts),
	F(ucast_rcv_pkts), F(mcast_xmit_pkts), F(mcast_rcv_pkts),
	F(symbol_errors), F(link_error_recovery), F(link_downed), F(rcv_errors),
	F(rcv_remote_physical_errors), F(rcv_switch_relay_errors), F(xmit_discards),
	F(xmit_constraint_errors), F(rcv_constraint_errors), F(local_link_integrity_errors),
	F(excessive_buffer_overrun_errors), F(vl15_dropped), F(xmit_wait), F(qp1_dropped),
};

#define NCOUNTERS (sizeof(struct sib_pma_counters) / sizeof(uint64_t))

static uint64_t *ctr(struct sib_pma_counters *c, size_t off)
{
	return (uint64_t *)((char *)c + off);
}

/* Everything port pn of n ever counted: softibd's and the data path's. */
static void port_total(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn,
		       struct sib_pma_counters *t)
{
	*t = n->mgmt->port[pn].pma;
	if (n->type == SIB_NODE_CA && pn >= 1)
		sn->host->data_counters(sn->host_ctx, n, pn, t);
}

/* The port's counters since the last clearing Set (never below 0: a
 * context that closed takes its counts along). */
static void port_now(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn,
		     struct sib_pma_counters *out)
{
	const struct sib_pma_counters *base = &n->mgmt->port[pn].base;
	struct sib_pma_counters t;

	port_total(sn, n, pn, &t);
	for (size_t i = 0; i < NCOUNTERS; i++) {
		uint64_t v = ctr(&t, i * sizeof(uint64_t))[0];
		uint64_t b = ctr((struct sib_pma_counters *)base, i * sizeof(uint64_t))[0];

		*ctr(out, i * sizeof(uint64_t)) = v > b ? v - b : 0;
	}
}

/* Clear the counters of sel (bit i = table[i]) on port pn. */
static void port_clear(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn, const size_t *table,
		       size_t entries, uint32_t sel)
{
	struct sib_pma_counters t;

	port_total(sn, n, pn, &t);
	for (size_t i = 0; i < entries; i++)
		if (sel >> i & 1)
			*ctr(&n->mgmt->port[pn].base, table[i]) = *ctr(&t, table[i]);
}

/* PortSelect: a port of n, or ALL_PORTS (the sum of ports 1..N).  CA port
 * 0 does not exist. */
static bool port_select_ok(const struct sib_fab_node *n, uint8_t ps)
{
	if (ps == ALL_PORTS)
		return true;
	return ps <= n->num_ports && (n->type == SIB_NODE_SWITCH || ps >= 1);
}

static void counters_of(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t ps,
			struct sib_pma_counters *sum)
{
	struct sib_pma_counters one;

	if (ps != ALL_PORTS) {
		port_now(sn, n, ps, sum);
		return;
	}
	memset(sum, 0, sizeof(*sum));
	for (unsigned int pn = 1; pn <= n->num_ports; pn++) {
		port_now(sn, n, (uint8_t)pn, &one);
		for (size_t i = 0; i < NCOUNTERS; i++)
			*ctr(sum, i * sizeof(uint64_t)) += *ctr(&one, i * sizeof(uint64_t));
	}
}

static void clear_sel(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t ps, const size_t *table,
		      size_t entries, uint32_t sel)
{
	if (ps != ALL_PORTS) {
		port_clear(sn, n, ps, table, entries, sel);
		return;
	}
	for (unsigned int pn = 1; pn <= n->num_ports; pn++)
		port_clear(sn, n, (uint8_t)pn, table, entries, sel);
}

static uint64_t sat(uint64_t v, uint64_t max)
{
	return v < max ? v : max; /* 16.1.3.5: counters stop at their maximum */
}

/* ---- attributes --------------------------------------------------------- */

struct pma_ctx {
	struct sib_subnet *sn;
	struct sib_fab_node *n;
	const uint8_t *in;   /* request data (192 bytes) */
	uint8_t *out;        /* reply data */
};

static uint16_t cpi_get(struct pma_ctx *c)
{
	struct mad_class_port_info cpi;

	memset(&cpi, 0, sizeof(cpi));
	cpi.base_version = MAD_BASE_VERSION;
	cpi.class_version = MAD_PMA_CLASS_VERSION;
	cpi.capability_mask = PMA_CAP_MASK;
	cpi.capability_mask2 = PMA_CAP_MASK2;
	cpi.resp_time_value = PMA_RESP_TIME;
	mad_class_port_info_encode(&cpi, c->out);
	return MAD_STATUS_SUCCESS;
}

static uint16_t pc_get(struct pma_ctx *c)
{
	struct mad_port_counters req, pc;
	struct sib_pma_counters v;

	mad_port_counters_decode(&req, c->in);
	if (!port_select_ok(c->n, req.port_select))
		return MAD_STATUS_INVALID_FIELD;
	counters_of(c->sn, c->n, req.port_select, &v);
	memset(&pc, 0, sizeof(pc));
	pc.port_select = req.port_select;
	pc.counter_select = req.counter_select;
	pc.counter_select2 = req.counter_select2;
	pc.symbol_error_counter = (uint16_t)sat(v.symbol_errors, 0xFFFF);
	pc.link_error_recovery_counter = (uint8_t)sat(v.link_error_recovery, 0xFF);
	pc.link_downed_counter = (uint8_t)sat(v.link_downed, 0xFF);
	pc.port_rcv_errors = (uint16_t)sat(v.rcv_errors, 0xFFFF);
	pc.port_rcv_remote_physical_errors = (uint16_t)sat(v.rcv_remote_physical_errors, 0xFFFF);
	pc.port_rcv_switch_relay_errors = (uint16_t)sat(v.rcv_switch_relay_errors, 0xFFFF);
	pc.port_xmit_discards = (uint16_t)sat(v.xmit_discards, 0xFFFF);
	pc.port_xmit_constraint_errors = (uint8_t)sat(v.xmit_constraint_errors, 0xFF);
	pc.port_rcv_constraint_errors = (uint8_t)sat(v.rcv_constraint_errors, 0xFF);
	pc.local_link_integrity_errors = (uint8_t)sat(v.local_link_integrity_errors, 0xF);
	pc.excessive_buffer_overrun_errors = (uint8_t)sat(v.excessive_buffer_overrun_errors, 0xF);
	pc.qp1_dropped = (uint16_t)sat(v.qp1_dropped, 0xFFFF);
	pc.vl15_dropped = (uint16_t)sat(v.vl15_dropped, 0xFFFF);
	pc.port_xmit_data = (uint32_t)sat(v.xmit_data, 0xFFFFFFFF);
	pc.port_rcv_data = (uint32_t)sat(v.rcv_data, 0xFFFFFFFF);
	pc.port_xmit_pkts = (uint32_t)sat(v.xmit_pkts, 0xFFFFFFFF);
	pc.port_rcv_pkts = (uint32_t)sat(v.rcv_pkts, 0xFFFFFFFF);
	pc.port_xmit_wait = (uint32_t)sat(v.xmit_wait, 0xFFFFFFFF);
	mad_port_counters_encode(&pc, c->out);
	return MAD_STATUS_SUCCESS;
}

static uint16_t pc_set(struct pma_ctx *c)
{
	struct mad_port_counters req;

	mad_port_counters_decode(&req, c->in);
	if (!port_select_ok(c->n, req.port_select))
		return MAD_STATUS_INVALID_FIELD;
	clear_sel(c->sn, c->n, req.port_select, pc_select, sizeof(pc_select) / sizeof(pc_select[0]),
		  req.counter_select | (uint32_t)(req.counter_select2 & 3) << 16);
	return MAD_STATUS_SUCCESS;
}

static uint16_t pcx_get(struct pma_ctx *c)
{
	struct mad_port_counters_ext req, x;
	struct sib_pma_counters v;

	mad_port_counters_ext_decode(&req, c->in);
	if (!port_select_ok(c->n, req.port_select))
		return MAD_STATUS_INVALID_FIELD;
	counters_of(c->sn, c->n, req.port_select, &v);
	memset(&x, 0, sizeof(x));
	x.port_select = req.port_select;
	x.counter_select = req.counter_select;
	x.counter_select2 = req.counter_select2;
	x.port_xmit_data = v.xmit_data;
	x.port_rcv_data = v.rcv_data;
	x.port_xmit_pkts = v.xmit_pkts;
	x.port_rcv_pkts = v.rcv_pkts;
	x.port_unicast_xmit_pkts = v.ucast_xmit_pkts;
	x.port_unicast_rcv_pkts = v.ucast_rcv_pkts;
	x.port_multicast_xmit_pkts = v.mcast_xmit_pkts;
	x.port_multicast_rcv_pkts = v.mcast_rcv_pkts;
	x.symbol_error_counter = v.symbol_errors;
	x.link_error_recovery_counter = v.link_error_recovery;
	x.link_downed_counter = v.link_downed;
	x.port_rcv_errors = v.rcv_errors;
	x.port_rcv_remote_physical_errors = v.rcv_remote_physical_errors;
	x.port_rcv_switch_relay_errors = v.rcv_switch_relay_errors;
	x.port_xmit_discards = v.xmit_discards;
	x.port_xmit_constraint_errors = v.xmit_constraint_errors;
	x.port_rcv_constraint_errors = v.rcv_constraint_errors;
	x.local_link_integrity_errors = v.local_link_integrity_errors;
	x.excessive_buffer_overrun_errors = v.excessive_buffer_overrun_errors;
	x.vl15_dropped = v.vl15_dropped;
	x.port_xmit_wait = v.xmit_wait;
	x.qp1_dropped = v.qp1_dropped;
	mad_port_counters_ext_encode(&x, c->out);
	return MAD_STATUS_SUCCESS;
}

static uint16_t pcx_set(struct pma_ctx *c)
{
	struct mad_port_counters_ext req;

	mad_port_counters_ext_decode(&req, c->in);
	if (!port_select_ok(c->n, req.port_select))
		return MAD_STATUS_INVALID_FIELD;
	clear_sel(c->sn, c->n, req.port_select, pcx_select,
		  sizeof(pcx_select) / sizeof(pcx_select[0]),
		  (req.counter_select & 0xFFu) | (req.counter_select2 & 0x3FFFu) << 8);
	return MAD_STATUS_SUCCESS;
}

struct pma_attr {
	uint16_t id;
	uint16_t (*get)(struct pma_ctx *c);
	uint16_t (*set)(struct pma_ctx *c); /* NULL: Get only */
};

static const struct pma_attr pma_attrs[] = {
	{ MAD_ATTR_CLASS_PORT_INFO, cpi_get, NULL },
	{ MAD_ATTR_PORT_CNTRS, pc_get, pc_set },
	{ MAD_ATTR_PORT_CNTRS_EXT, pcx_get, pcx_set },
};

int sib_pma_process(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t in_port,
		     const uint8_t *req, uint8_t *resp)
{
	uint8_t in[MAD_PMA_DATA_SIZE], out[MAD_PMA_DATA_SIZE];
	const struct pma_attr *a = NULL;
	struct pma_ctx c = { .sn = sn, .n = n, .in = in, .out = out };
	struct mad_hdr h;
	uint16_t st;

	mad_hdr_decode(&h, req);
	if (h.mgmt_class != MAD_MGMT_CLASS_PERF_MGMT || h.r || !n->mgmt ||
	    in_port > n->num_ports || h.method == MAD_METHOD_TRAP_REPRESS) {
		sn->sma.dropped++;
		return 0;
	}
	if (resp != req)
		memcpy(resp, req, MAD_SIZE);
	if (h.base_version != MAD_BASE_VERSION || h.class_version != MAD_PMA_CLASS_VERSION) {
		sn->sma.bad_version++;
		return mad_make_reply(resp, MAD_STATUS_BAD_VERSION) ? 0 : 1;
	}
	if (h.method != MAD_METHOD_GET && h.method != MAD_METHOD_SET) {
		sn->sma.unsupported++;
		return mad_make_reply(resp, MAD_STATUS_UNSUP_METHOD) ? 0 : 1;
	}
	for (size_t i = 0; i < sizeof(pma_attrs) / sizeof(pma_attrs[0]); i++)
		if (pma_attrs[i].id == h.attr_id)
			a = &pma_attrs[i];
	if (!a || (h.method == MAD_METHOD_SET && !a->set)) {
		sn->sma.unsupported++;
		return mad_make_reply(resp, MAD_STATUS_UNSUP_METHOD_ATTR) ? 0 : 1;
	}
	if (h.attr_mod) {
		sn->sma.invalid_field++;
		return mad_make_reply(resp, MAD_STATUS_INVALID_FIELD) ? 0 : 1;
	}
	memcpy(in, req + MAD_PMA_DATA_OFFS, sizeof(in));
	memset(out, 0, sizeof(out));
	st = h.method == MAD_METHOD_SET ? a->set(&c) : MAD_STATUS_SUCCESS;
	if (st == MAD_STATUS_SUCCESS)
		st = a->get(&c);
	if (st == MAD_STATUS_SUCCESS)
		memcpy(resp + MAD_PMA_DATA_OFFS, out, sizeof(out));
	else
		sn->sma.invalid_field++;
	sn->sma.gmps++;
	return mad_make_reply(resp, st) ? 0 : 1;
}
