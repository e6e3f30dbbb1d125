/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the built-in SM's SA (src/subnet/sa_agent.c) through the
 * MAD router, without softibd: the default fabric loaded and swept, SA
 * requests sent from a CA port's QP1 to the SM's LID as saquery sends them,
 * the answers caught by the host table (mad_response) and reassembled with
 * sa_rmpp_recv_seg as the umad library does.  ClassPortInfo; NodeRecord,
 * PortInfoRecord, PathRecord by Get and GetTable; ComponentMask filters;
 * RMPP segments; statuses; malformed MADs dropped and counted.
 * MCMemberRecord: the IPoIB broadcast group, join/leave/create with
 * OpenSM's statuses, and a randomized join/leave sequence checked against
 * a model of the groups and of where the MFTs deliver (replay with
 * SIB_SEED=N).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "iba/sa.h"
#include "subnet/subnet_api.h"
#include "fake_subnet_host.h"

#define CHAN 20u
#define DATA(name) SIB_TEST_DATA "/" name	/* a host channel number (above SIB_MAD_CHAN_INTERNAL) */

static uint8_t segs[64][MAD_SIZE];
static unsigned int nsegs;
static const struct sib_fab_node *requester;	/* where answers are caught */

/* Every response for CHAN is kept, in order. */
static int catch_resp(void *ctx, uint32_t chan, const struct sib_fab_node *n, uint8_t port,
		      uint8_t qp, const mai_mad_t *m)
{
	(void)ctx;
	if (chan != CHAN || qp != 1 || n != requester || port != 1 || nsegs >= 64)
		return -ENOENT;
	assert_int_equal(mai_towire(m, segs[nsegs], MAD_SIZE), MAD_SIZE);
	nsegs++;
	return 0;
}

/* The fake host, but responses are caught. */
static const struct sib_subnet_host host = {
	.port_changed = fake_host_port_changed, .route_changed = fake_host_route_changed,
	.data_counters = fake_host_no_counters, .log = fake_host_no_log,
	.mad_filters = fake_host_agents_only, .mad_push = fake_host_no_chan,
	.mad_response = catch_resp,
};

struct fx {
	struct sib_subnet *sn;
	struct sib_fab_node *ca;	/* the requester: a CA that is not the SM's node */
	uint16_t ca_lid;
	uint8_t msg[MAD_SA_HDR_SIZE + 64 * MAD_SA_DATA_SIZE];
	size_t len;
};

static int setup_topo(void **state, const char *topo)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct sib_fab_node *n;
	char err[128];

	assert_non_null(f);
	f->sn = sib_subnet_new(&host, NULL);
	assert_non_null(f->sn);
	assert_int_equal(sib_subnet_load(f->sn, topo, err, sizeof(err)), 0);
	assert_int_equal(sib_mad_init(f->sn), 0);
	for (unsigned int i = 0; (n = sib_subnet_node(f->sn, i)); i++)
		if (n->type == SIB_NODE_CA && n->mgmt->port[1].pi.lid != SIB_SM_LID)
			f->ca = n;
	assert_non_null(f->ca);
	f->ca_lid = f->ca->mgmt->port[1].pi.lid;
	requester = f->ca;
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_topo(state, NULL);
}

static int setup_2sw(void **state)
{
	return setup_topo(state, DATA("two_switch.topo"));
}

static int teardown(void **state)
{
	struct fx *f = *state;

	sib_mad_fini(f->sn);
	sib_subnet_unload(f->sn);
	sib_subnet_delete(f->sn);
	free(f);
	return 0;
}

/* Send an SA request (method, attribute, mask, record rec of rlen bytes)
 * from the CA's QP1 to the SM's LID as saquery does; the answer (one MAD
 * or the RMPP segments reassembled) in f->msg[0..f->len). Returns the
 * segment count. */
static unsigned int ask_wire(struct fx *f, const uint8_t *wire)
{
	mai_mad_t m;
	struct sa_rmpp_recv r;
	uint8_t ack[MAD_SIZE];
	bool rep;

	memset(&m, 0, sizeof(m));
	assert_int_equal(mai_fromwire(wire, MAD_SIZE, &m), MAD_SIZE);
	m.type = MAI_TYPE_MAD;
	m.qp = 1;
	m.port = 1;
	m.remote_qpn = 1;
	m.remote_qkey = 0x80010000u;
	m.lrh.dlid = SIB_SM_LID;
	m.lrh.slid = f->ca_lid;
	nsegs = 0;
	f->len = 0;
	sib_mad_send(f->sn, f->ca, 1, &m);
	if (!nsegs)
		return 0;
	if (!(segs[0][26] & MAD_RMPP_FLAG_ACTIVE)) {
		memcpy(f->msg, segs[0], MAD_SIZE);
		f->len = MAD_SIZE;
		return nsegs;
	}
	sa_rmpp_recv_init(&r, f->msg, sizeof(f->msg), SA_RMPP_MAX_SEGS);
	for (unsigned int i = 0; i < nsegs; i++) {
		enum sa_rmpp_verdict v = sa_rmpp_recv_seg(&r, segs[i], ack, &rep);

		assert_int_equal(v, i + 1 == nsegs ? SA_RMPP_COMPLETE : SA_RMPP_ACCEPTED);
	}
	f->len = r.len;
	return nsegs;
}

static unsigned int ask(struct fx *f, uint8_t method, uint16_t attr, uint64_t mask,
			const void *rec, size_t rlen)
{
	struct mad_sa s;
	uint8_t wire[MAD_SIZE];

	memset(&s, 0, sizeof(s));
	s.hdr.base_version = MAD_BASE_VERSION;
	s.hdr.mgmt_class = MAD_MGMT_CLASS_SUBN_ADM;
	s.hdr.class_version = MAD_SA_CLASS_VERSION;
	s.hdr.method = method;
	s.hdr.tid = (uint64_t)CHAN << MAI_TID_CHAN_SHIFT | 0x1234;
	s.hdr.attr_id = attr;
	s.comp_mask = mask;
	if (rec)
		memcpy(s.data, rec, rlen);
	mad_sa_encode(&s, wire);
	return ask_wire(f, wire);
}

static uint16_t status_of(const struct fx *f)
{
	return (uint16_t)(f->msg[4] << 8 | f->msg[5]);
}

/* Records in a GetTableResp as saquery counts them. */
static size_t nrec(const struct fx *f)
{
	unsigned int off = (unsigned int)(f->msg[44] << 8 | f->msg[45]);

	if (!off)
		return 0;
	assert_int_equal((f->len - MAD_SA_HDR_SIZE) % (off * 8u), 0);
	return (f->len - MAD_SA_HDR_SIZE) / (off * 8u);
}

static void test_class_port_info(void **state)
{
	struct fx *f = *state;
	struct mad_class_port_info cpi;

	assert_int_equal(ask(f, MAD_METHOD_GET, MAD_ATTR_CLASS_PORT_INFO, 0, NULL, 0), 1);
	assert_int_equal(f->msg[3], MAD_METHOD_GET_RESP);
	assert_int_equal(status_of(f), 0);
	mad_class_port_info_decode(&cpi, f->msg + MAD_SA_HDR_SIZE);
	assert_int_equal(cpi.base_version, 1);
	assert_int_equal(cpi.class_version, 2);
	assert_int_equal(cpi.redirect_qkey, 0x80010000u);
	assert_int_equal(cpi.capability_mask, (1u << 1) | (1u << 13));
	assert_int_equal(cpi.resp_time_value, 16);
	assert_int_equal(sib_subnet_mad_counters(f->sn)->sa, 1);
}

static void test_node_records(void **state)
{
	struct fx *f = *state;
	struct sa_node_record nr, want;
	const struct sa_layout *l = sa_layout_find(SA_ATTR_NODE_RECORD);
	uint8_t rec[112];
	unsigned int cas = 0;

	/* saquery: GetTable, mask 0: the switch and four CAs, 112 bytes each,
	 * 560 bytes in 3 RMPP segments */
	assert_int_equal(ask(f, MAD_METHOD_GETTABLE, SA_ATTR_NODE_RECORD, 0, NULL, 0), 3);
	assert_int_equal(f->msg[3], MAD_METHOD_GETTABLE_RESP);
	assert_int_equal(status_of(f), 0);
	assert_int_equal(f->msg[44] << 8 | f->msg[45], 14);
	assert_int_equal(nrec(f), 5);
	for (size_t i = 0; i < 5; i++) {
		sa_node_record_decode(&nr, f->msg + MAD_SA_HDR_SIZE + i * 112);
		assert_int_not_equal(nr.lid, 0);
		assert_int_not_equal(nr.node_info.node_guid, 0);
		cas += nr.node_info.node_type == MAD_NODE_TYPE_CA;
	}
	assert_int_equal(cas, 4);

	/* by LID: Get, one record */
	memset(&want, 0, sizeof(want));
	want.lid = f->ca_lid;
	sa_node_record_encode(&want, rec);
	assert_int_equal(ask(f, MAD_METHOD_GET, SA_ATTR_NODE_RECORD, sa_comp_mask(l, "LID"), rec,
			     sizeof(rec)), 1);
	assert_int_equal(status_of(f), 0);
	assert_int_equal(f->msg[3], MAD_METHOD_GET_RESP);
	sa_node_record_decode(&nr, f->msg + MAD_SA_HDR_SIZE);
	assert_int_equal(nr.lid, f->ca_lid);
	assert_true(nr.node_info.node_guid == f->ca->node_guid);
	assert_memory_equal(nr.node_desc.description, f->ca->desc, strlen(f->ca->desc));

	/* by NodeType: the four CAs; Get of many: 0x0400; of none: 0x0300 */
	want.node_info.node_type = MAD_NODE_TYPE_CA;
	sa_node_record_encode(&want, rec);
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_NODE_RECORD, sa_comp_mask(l, "NodeType"), rec,
	    sizeof(rec));
	assert_int_equal(nrec(f), 4);
	ask(f, MAD_METHOD_GET, SA_ATTR_NODE_RECORD, sa_comp_mask(l, "NodeType"), rec, sizeof(rec));
	assert_int_equal(status_of(f), MAD_SA_STATUS_TOO_MANY_RECORDS);
	want.lid = 0x7777;
	sa_node_record_encode(&want, rec);
	ask(f, MAD_METHOD_GET, SA_ATTR_NODE_RECORD, sa_comp_mask(l, "LID"), rec, sizeof(rec));
	assert_int_equal(status_of(f), MAD_SA_STATUS_NO_RECORDS);
	/* GetTable without a match: status 0, AttributeOffset 0, 56 bytes */
	assert_int_equal(ask(f, MAD_METHOD_GETTABLE, SA_ATTR_NODE_RECORD, sa_comp_mask(l, "LID"),
			     rec, sizeof(rec)), 1);
	assert_int_equal(status_of(f), 0);
	assert_int_equal(f->len, MAD_SA_HDR_SIZE);
	assert_int_equal(nrec(f), 0);
	/* NodeDescription as a whole */
	memset(&want, 0, sizeof(want));
	memcpy(want.node_desc.description, f->ca->desc, strlen(f->ca->desc));
	sa_node_record_encode(&want, rec);
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_NODE_RECORD, sa_comp_mask(l, "NodeDescription"), rec,
	    sizeof(rec));
	assert_int_equal(nrec(f), 1);
}

static void test_port_info_records(void **state)
{
	struct fx *f = *state;
	const struct sa_layout *l = sa_layout_find(SA_ATTR_PORT_INFO_RECORD);
	struct sa_port_info_record pr, want;
	uint8_t rec[72];
	size_t all;

	/* every port: the switch's 0..8 and the four CA ports */
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_PORT_INFO_RECORD, 0, NULL, 0);
	assert_int_equal(status_of(f), 0);
	assert_int_equal(f->msg[44] << 8 | f->msg[45], 9);
	all = nrec(f);
	assert_int_equal(all, 9 + 4);
	memset(&want, 0, sizeof(want));
	want.endport_lid = f->ca_lid;
	sa_port_info_record_encode(&want, rec);
	ask(f, MAD_METHOD_GET, SA_ATTR_PORT_INFO_RECORD, sa_comp_mask(l, "EndportLID"), rec,
	    sizeof(rec));
	assert_int_equal(status_of(f), 0);
	sa_port_info_record_decode(&pr, f->msg + MAD_SA_HDR_SIZE);
	assert_int_equal(pr.endport_lid, f->ca_lid);
	assert_int_equal(pr.port_num, 1);
	assert_int_equal(pr.port_info.lid, f->ca_lid);
	assert_int_equal(pr.port_info.port_state, MAD_PORT_STATE_ACTIVE);
	assert_int_equal(pr.port_info.master_sm_lid, SIB_SM_LID);
	/* PortNum 3: the switch's port 3 only */
	want.endport_lid = 0;
	want.port_num = 3;
	sa_port_info_record_encode(&want, rec);
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_PORT_INFO_RECORD, sa_comp_mask(l, "PortNum"), rec,
	    sizeof(rec));
	assert_int_equal(nrec(f), 1);
	/* saquery -s: CapabilityMask matched bitwise, IsSM: the SM's port only */
	memset(&want, 0, sizeof(want));
	want.port_info.capability_mask = MAD_PORT_CAP_IS_SM;
	sa_port_info_record_encode(&want, rec);
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_PORT_INFO_RECORD, sa_comp_mask(l, "CapabilityMask"),
	    rec, sizeof(rec));
	assert_int_equal(nrec(f), 1);
	sa_port_info_record_decode(&pr, f->msg + MAD_SA_HDR_SIZE);
	assert_int_equal(pr.endport_lid, SIB_SM_LID);
	/* and LID of the embedded PortInfo (bit 5) */
	memset(&want, 0, sizeof(want));
	want.port_info.lid = f->ca_lid;
	sa_port_info_record_encode(&want, rec);
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_PORT_INFO_RECORD, sa_comp_mask(l, "LID"), rec,
	    sizeof(rec));
	assert_int_equal(nrec(f), 1);
}

static void test_path_records(void **state)
{
	struct fx *f = *state;
	const struct sa_layout *l = sa_layout_find(SA_ATTR_PATH_RECORD);
	struct sa_path_record pr, want;
	uint8_t rec[64];
	unsigned int n;

	/* saquery PR: every pair of the five end ports, 25 x 64 bytes, 8 segments */
	n = ask(f, MAD_METHOD_GETTABLE, SA_ATTR_PATH_RECORD, 0, NULL, 0);
	assert_int_equal(status_of(f), 0);
	assert_int_equal(nrec(f), 25);
	assert_int_equal(n, 8);
	/* by DLID and SLID: one reversible path, MTU 4096, 40 Gb/s, P_Key 0xFFFF */
	memset(&want, 0, sizeof(want));
	want.slid = f->ca_lid;
	want.dlid = SIB_SM_LID;
	want.reversible = 1;
	want.numb_path = 1;
	sa_path_record_encode(&want, rec);
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_PATH_RECORD,
	    sa_comp_mask(l, "SLID") | sa_comp_mask(l, "DLID") | sa_comp_mask(l, "Reversible") |
	    sa_comp_mask(l, "NumbPath"), rec, sizeof(rec));
	assert_int_equal(nrec(f), 1);
	sa_path_record_decode(&pr, f->msg + MAD_SA_HDR_SIZE);
	assert_int_equal(pr.slid, f->ca_lid);
	assert_int_equal(pr.dlid, SIB_SM_LID);
	assert_int_equal(pr.reversible, 1);
	assert_int_equal(pr.mtu, MAD_MTU_4096);
	assert_int_equal(pr.mtu_selector, 2);
	assert_int_equal(pr.rate, 7);
	assert_int_equal(pr.pkey, 0xFFFF);
	assert_int_equal(pr.sgid[15], (uint8_t)f->ca->ports[1].guid);
	/* NumbPath as OpenSM takes it at LMC 0: 4 (saquery -p / a multi-path
	 * client) still one path; 0 in a GetTable none (status 0); a Get
	 * takes NumbPath 1 */
	want.numb_path = 4;
	sa_path_record_encode(&want, rec);
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_PATH_RECORD,
	    sa_comp_mask(l, "SLID") | sa_comp_mask(l, "DLID") | sa_comp_mask(l, "NumbPath"), rec,
	    sizeof(rec));
	assert_int_equal(status_of(f), 0);
	assert_int_equal(nrec(f), 1);
	want.numb_path = 0; /* Reversible 1 beside it */
	sa_path_record_encode(&want, rec);
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_PATH_RECORD,
	    sa_comp_mask(l, "SLID") | sa_comp_mask(l, "DLID") | sa_comp_mask(l, "NumbPath"), rec,
	    sizeof(rec));
	assert_int_equal(status_of(f), 0);
	assert_int_equal(nrec(f), 0);
	want.numb_path = 0;
	want.reversible = 0;
	sa_path_record_encode(&want, rec);
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_PATH_RECORD, sa_comp_mask(l, "NumbPath"), rec,
	    sizeof(rec));
	assert_int_equal(nrec(f), 0);
	ask(f, MAD_METHOD_GET, SA_ATTR_PATH_RECORD,
	    sa_comp_mask(l, "SLID") | sa_comp_mask(l, "DLID") | sa_comp_mask(l, "NumbPath"), rec,
	    sizeof(rec));
	assert_int_equal(status_of(f), 0);
	want.numb_path = 127;
	sa_path_record_encode(&want, rec);
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_PATH_RECORD, sa_comp_mask(l, "NumbPath"), rec,
	    sizeof(rec));
	assert_int_equal(nrec(f), 25);
	/* by GIDs: the same path */
	memset(&want, 0, sizeof(want));
	memcpy(want.sgid, pr.sgid, 16);
	memcpy(want.dgid, pr.dgid, 16);
	sa_path_record_encode(&want, rec);
	ask(f, MAD_METHOD_GET, SA_ATTR_PATH_RECORD,
	    sa_comp_mask(l, "SGID") | sa_comp_mask(l, "DGID"), rec, sizeof(rec));
	assert_int_equal(status_of(f), 0);
	sa_path_record_decode(&want, f->msg + MAD_SA_HDR_SIZE);
	assert_int_equal(want.dlid, pr.dlid);
	/* only DLID: a path from each of the five end ports */
	memset(&want, 0, sizeof(want));
	want.dlid = f->ca_lid;
	sa_path_record_encode(&want, rec);
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_PATH_RECORD, sa_comp_mask(l, "DLID"), rec, sizeof(rec));
	assert_int_equal(nrec(f), 5);
	/* MTU exactly 256: no path of this fabric */
	want.mtu = MAD_MTU_256;
	want.mtu_selector = 2;
	sa_path_record_encode(&want, rec);
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_PATH_RECORD,
	    sa_comp_mask(l, "DLID") | sa_comp_mask(l, "MTU") | sa_comp_mask(l, "MTUSelector"), rec,
	    sizeof(rec));
	assert_int_equal(nrec(f), 0);
	/* MTU greater than 2048: all five again */
	want.mtu = MAD_MTU_2048;
	want.mtu_selector = 0;
	sa_path_record_encode(&want, rec);
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_PATH_RECORD,
	    sa_comp_mask(l, "DLID") | sa_comp_mask(l, "MTU") | sa_comp_mask(l, "MTUSelector"), rec,
	    sizeof(rec));
	assert_int_equal(nrec(f), 5);

	/* the link in the middle counts: the switch's port towards the CA at
	 * 2048 and 1x (QDR: 10 Gb/s) makes the path from the SM's switch to the
	 * CA 2048 / rate 3, the other way stays 4096 / 40 Gb/s */
	struct sib_fab_port *peer = f->ca->ports[1].peer;
	struct mad_port_info *spi = &peer->node->mgmt->port[peer->num].pi;

	spi->neighbor_mtu = MAD_MTU_2048;
	spi->link_width_active = 1;
	memset(&want, 0, sizeof(want));
	want.slid = SIB_SM_LID;
	want.dlid = f->ca_lid;
	sa_path_record_encode(&want, rec);
	ask(f, MAD_METHOD_GET, SA_ATTR_PATH_RECORD, sa_comp_mask(l, "SLID") | sa_comp_mask(l, "DLID"),
	    rec, sizeof(rec));
	assert_int_equal(status_of(f), 0);
	sa_path_record_decode(&pr, f->msg + MAD_SA_HDR_SIZE);
	assert_int_equal(pr.mtu, MAD_MTU_2048);
	assert_int_equal(pr.rate, 3);
	want.slid = f->ca_lid;
	want.dlid = SIB_SM_LID;
	sa_path_record_encode(&want, rec);
	ask(f, MAD_METHOD_GET, SA_ATTR_PATH_RECORD, sa_comp_mask(l, "SLID") | sa_comp_mask(l, "DLID"),
	    rec, sizeof(rec));
	sa_path_record_decode(&pr, f->msg + MAD_SA_HDR_SIZE);
	assert_int_equal(pr.mtu, MAD_MTU_4096);
	assert_int_equal(pr.rate, 7);
}

static void test_path_pkey_sl(void **state)
{
	struct fx *f = *state;
	const struct sa_layout *l = sa_layout_find(SA_ATTR_PATH_RECORD);
	uint64_t m = sa_comp_mask(l, "DLID") | sa_comp_mask(l, "SLID") | sa_comp_mask(l, "P_Key") |
		     sa_comp_mask(l, "SL");
	struct sib_fab_node *dn = NULL, *nd;
	struct sa_path_record pr, want;
	uint8_t rec[64];

	/* P_Key: the default partition as asked (limited 0x7FFF too), another
	 * one not at all; SL as asked */
	memset(&want, 0, sizeof(want));
	want.dlid = SIB_SM_LID;
	want.slid = f->ca_lid;
	want.pkey = 0x7FFF;
	want.sl = 3;
	sa_path_record_encode(&want, rec);
	ask(f, MAD_METHOD_GET, SA_ATTR_PATH_RECORD, m, rec, sizeof(rec));
	assert_int_equal(status_of(f), 0);
	sa_path_record_decode(&pr, f->msg + MAD_SA_HDR_SIZE);
	assert_int_equal(pr.pkey, 0x7FFF);
	assert_int_equal(pr.sl, 3);
	want.pkey = 0x8001;
	sa_path_record_encode(&want, rec);
	ask(f, MAD_METHOD_GET, SA_ATTR_PATH_RECORD, m, rec, sizeof(rec));
	assert_int_equal(status_of(f), MAD_SA_STATUS_NO_RECORDS);
	/* a partition both ends have (one limited): found; no one full: not */
	for (unsigned int i = 0; (nd = sib_subnet_node(f->sn, i)); i++)
		if (nd->type == SIB_NODE_CA && nd != f->ca)
			dn = nd;
	f->ca->mgmt->port[1].pkey[1] = 0x8001;
	dn->mgmt->port[1].pkey[1] = 0x0001;
	want.dlid = dn->mgmt->port[1].pi.lid;
	want.sl = 0;
	sa_path_record_encode(&want, rec);
	ask(f, MAD_METHOD_GET, SA_ATTR_PATH_RECORD, m, rec, sizeof(rec));
	assert_int_equal(status_of(f), 0);
	f->ca->mgmt->port[1].pkey[1] = 0x0001;
	ask(f, MAD_METHOD_GET, SA_ATTR_PATH_RECORD, m, rec, sizeof(rec));
	assert_int_equal(status_of(f), MAD_SA_STATUS_NO_RECORDS);
}

static void test_link_switch_guid_records(void **state)
{
	struct fx *f = *state;
	const struct sa_layout *gl = sa_layout_find(SA_ATTR_GUID_INFO_RECORD);
	struct sa_link_record lr;
	struct sa_switch_info_record sw;
	struct sa_guid_info_record gr, want;
	uint8_t rec[72];
	unsigned int to_ca = 0;

	/* four cabled CAs: eight LinkRecords, each link both ways */
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_LINK_RECORD, 0, NULL, 0);
	assert_int_equal(status_of(f), 0);
	assert_int_equal(nrec(f), 8);
	for (size_t i = 0; i < 8; i++) {
		sa_link_record_decode(&lr, f->msg + MAD_SA_HDR_SIZE + i * 8);
		to_ca += lr.to_lid == f->ca_lid && lr.to_port == 1;
	}
	assert_int_equal(to_ca, 1);
	/* the switch's SwitchInfoRecord: LID 1, its LFT top */
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_SWITCH_INFO_RECORD, 0, NULL, 0);
	assert_int_equal(nrec(f), 1);
	sa_switch_info_record_decode(&sw, f->msg + MAD_SA_HDR_SIZE);
	assert_int_equal(sw.lid, SIB_SM_LID);
	assert_true(sw.switch_info.linear_fdb_top >= 5);
	/* GUIDInfoRecords: one per end port; by LID the CA port's GUID */
	ask(f, MAD_METHOD_GETTABLE, SA_ATTR_GUID_INFO_RECORD, 0, NULL, 0);
	assert_int_equal(nrec(f), 5);
	memset(&want, 0, sizeof(want));
	want.lid = f->ca_lid;
	sa_guid_info_record_encode(&want, rec);
	ask(f, MAD_METHOD_GET, SA_ATTR_GUID_INFO_RECORD, sa_comp_mask(gl, "LID"), rec, sizeof(rec));
	assert_int_equal(status_of(f), 0);
	sa_guid_info_record_decode(&gr, f->msg + MAD_SA_HDR_SIZE);
	assert_true(gr.guid_info.guid[0] == f->ca->ports[1].guid);
}

static void test_statuses(void **state)
{
	struct fx *f = *state;
	struct mad_sa s;
	uint8_t wire[MAD_SIZE];
	const struct sib_sma_counters *c = sib_subnet_sma_counters(f->sn);
	uint64_t dropped = c->sa_dropped;

	/* an attribute the SA does not serve (yet: LFTRecord): 0x000C */
	assert_int_equal(ask(f, MAD_METHOD_GET, 0x0015, 0, NULL, 0), 1);
	assert_int_equal(status_of(f), MAD_STATUS_UNSUP_METHOD_ATTR);
	assert_int_equal(f->msg[3], MAD_METHOD_GET_RESP);
	/* Set of a NodeRecord: 0x000C in a GetResp */
	ask(f, MAD_METHOD_SET, SA_ATTR_NODE_RECORD, 0, NULL, 0);
	assert_int_equal(status_of(f), MAD_STATUS_UNSUP_METHOD_ATTR);
	assert_int_equal(f->msg[3], MAD_METHOD_GET_RESP);
	/* a method the SA has not: 0x0008 */
	ask(f, 0x10, SA_ATTR_NODE_RECORD, 0, NULL, 0);
	assert_int_equal(status_of(f), MAD_STATUS_UNSUP_METHOD);
	/* class version 1: 0x0004 */
	memset(&s, 0, sizeof(s));
	s.hdr = (struct mad_hdr){ .base_version = 1, .mgmt_class = MAD_MGMT_CLASS_SUBN_ADM,
				  .class_version = 1, .method = MAD_METHOD_GET,
				  .tid = (uint64_t)CHAN << MAI_TID_CHAN_SHIFT | 7,
				  .attr_id = SA_ATTR_NODE_RECORD };
	mad_sa_encode(&s, wire);
	ask_wire(f, wire);
	assert_int_equal(status_of(f), MAD_STATUS_BAD_VERSION);

	/* malformed: an RMPP-active request segment and a stray response are
	 * dropped and counted, nothing is answered */
	s.hdr.class_version = 2;
	s.rmpp = (struct mad_rmpp){ .rmpp_version = 1, .rmpp_type = MAD_RMPP_TYPE_DATA,
				    .rmpp_flags = MAD_RMPP_FLAG_ACTIVE | MAD_RMPP_FLAG_FIRST,
				    .seg_num = 1, .payload_len = 5000 };
	mad_sa_encode(&s, wire);
	assert_int_equal(ask_wire(f, wire), 0);
	assert_int_equal(c->sa_dropped, dropped + 1);
	/* a Send has no response: dropped too */
	assert_int_equal(ask(f, MAD_METHOD_SEND, SA_ATTR_NODE_RECORD, 0, NULL, 0), 0);
	assert_int_equal(c->sa_dropped, dropped + 2);
	/* random bytes with the SA class: answered or dropped, never a crash */
	srand(16);
	for (int i = 0; i < 2000; i++) {
		for (size_t b = 0; b < MAD_SIZE; b++)
			wire[b] = (uint8_t)rand();
		wire[0] = 1;
		wire[1] = MAD_MGMT_CLASS_SUBN_ADM;
		wire[3] &= 0x7F; /* a request */
		memcpy(wire + 8, "\0\0\x14\0\0\0\0\x01", 8); /* TID: CHAN */
		if (i % 2) { /* a served attribute, Get or GetTable, any mask and record */
			static const uint16_t attrs[] = { 0x01, 0x11, 0x12, 0x14, 0x20, 0x30, 0x35, 0x38 };

			wire[2] = MAD_SA_CLASS_VERSION;
			wire[3] = (uint8_t[]){ MAD_METHOD_GET, MAD_METHOD_GETTABLE, MAD_METHOD_SET,
					       MAD_METHOD_DELETE }[(unsigned int)rand() % 4];
			wire[16] = 0;
			wire[17] = (uint8_t)attrs[(unsigned int)rand() % 8];
			wire[26] &= (uint8_t)~MAD_RMPP_FLAG_ACTIVE;
		}
		ask_wire(f, wire);
	}
	assert_true(c->sa_dropped > dropped + 2);
	assert_true(c->sa_answers > 0);
}

/* ---- MCMemberRecord (15.2.5.17) ---- */

#define MC_MGID    0x0001u
#define MC_PORTGID 0x0002u
#define MC_QKEY    0x0004u
#define MC_MLID    0x0008u
#define MC_MTU     0x0030u	/* MTUSelector and MTU */
#define MC_TCLASS  0x0040u
#define MC_PKEY    0x0080u
#define MC_SL      0x1000u
#define MC_FLOW    0x2000u
#define MC_JOIN    0x10000u
#define MC_CREATE  (MC_MGID | MC_PORTGID | MC_QKEY | MC_TCLASS | MC_PKEY | MC_SL | MC_FLOW | MC_JOIN)

static const uint8_t bcast_mgid[16] = { 0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0,
					0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };

/* The GID of CA n's port 1. */
static void gid_of(const struct sib_fab_node *n, uint8_t gid[16])
{
	uint64_t pre = n->mgmt->port[1].pi.gid_prefix, guid = n->ports[1].guid;

	for (int i = 0; i < 8; i++) {
		gid[i] = (uint8_t)(pre >> (56 - 8 * i));
		gid[8 + i] = (uint8_t)(guid >> (56 - 8 * i));
	}
}

/* An MCMemberRecord request from CA `from`'s port 1. */
static uint16_t mc_ask(struct fx *f, struct sib_fab_node *from, uint8_t method, uint64_t mask,
		       const struct sa_mcmember_record *r, struct sa_mcmember_record *out)
{
	uint8_t rec[56];
	struct sib_fab_node *ca = f->ca;
	uint16_t lid = f->ca_lid;

	f->ca = from;
	f->ca_lid = from->mgmt->port[1].pi.lid;
	requester = from;
	sa_mcmember_record_encode(r, rec);
	assert_true(ask(f, method, SA_ATTR_MCMEMBER_RECORD, mask, rec, sizeof(rec)) >= 1);
	f->ca = ca;
	f->ca_lid = lid;
	requester = ca;
	if (out)
		sa_mcmember_record_decode(out, f->msg + MAD_SA_HDR_SIZE);
	return status_of(f);
}

/* The CAs of the fabric (port 1 cabled), at most 8. */
static unsigned int cas_of(struct fx *f, struct sib_fab_node **cas)
{
	struct sib_fab_node *n;
	unsigned int k = 0;

	for (unsigned int i = 0; (n = sib_subnet_node(f->sn, i)) && k < 8; i++)
		if (n->type == SIB_NODE_CA && n->ports[1].peer && n->mgmt->port[1].pi.lid)
			cas[k++] = n;
	return k;
}

static uint32_t reached;	/* bit per CA index, set by reach_ca */
static struct sib_fab_node *const *reach_cas;
static unsigned int reach_n;

static void reach_ca(void *ctx, const struct sib_fab_node *n, uint8_t port)
{
	(void)ctx;
	for (unsigned int i = 0; i < reach_n; i++)
		if (reach_cas[i] == n && port == 1)
			reached |= 1u << i;
}

/* Which CAs a packet from cas[src] to mlid reaches (the sender excepted). */
static uint32_t reach(struct fx *f, struct sib_fab_node **cas, unsigned int n, unsigned int src,
		      uint16_t mlid)
{
	reached = 0;
	reach_cas = cas;
	reach_n = n;
	assert_int_equal(sib_subnet_mcast_lookup(f->sn, cas[src], 1, mlid, reach_ca, NULL), 0);
	return reached & ~(1u << src);
}

static void test_mcmember(void **state)
{
	struct fx *f = *state;
	struct sib_fab_node *cas[8];
	unsigned int n = cas_of(f, cas);
	struct sa_mcmember_record r, got;
	uint8_t mgid[16] = { 0xff, 0x12, 0x60, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4 };
	uint16_t mlid;

	assert_true(n >= 3);
	/* the SM made the IPoIB broadcast group: one record, no members */
	memset(&r, 0, sizeof(r));
	assert_int_equal(mc_ask(f, cas[0], MAD_METHOD_GETTABLE, 0, &r, NULL), 0);
	assert_int_equal(nrec(f), 1);
	sa_mcmember_record_decode(&got, f->msg + MAD_SA_HDR_SIZE);
	assert_memory_equal(got.mgid, bcast_mgid, 16);
	assert_int_equal(got.qkey, 0x0B1B);
	assert_int_equal(got.mlid, 0xC000);
	assert_int_equal(got.mtu_selector << 6 | got.mtu, 0x84);
	assert_int_equal(got.rate_selector << 6 | got.rate, 0x83);
	assert_int_equal(got.pkey, 0xFFFF);
	assert_int_equal(got.scope, 2);
	assert_int_equal(got.join_state, 0);
	assert_int_equal(reach(f, cas, n, 0, 0xC000), 0);

	/* IPoIB's join (MGID, PortGID, P_Key, JoinState only): the group's
	 * Q_Key comes back, and packets reach the new member */
	memcpy(r.mgid, bcast_mgid, 16);
	gid_of(cas[1], r.port_gid);
	r.pkey = 0xFFFF;
	r.join_state = 1;
	assert_int_equal(mc_ask(f, cas[1], MAD_METHOD_SET, MC_MGID | MC_PORTGID | MC_PKEY | MC_JOIN,
				&r, &got), 0);
	assert_int_equal(f->msg[3], MAD_METHOD_GET_RESP);
	assert_int_equal(got.qkey, 0x0B1B);
	assert_int_equal(got.mlid, 0xC000);
	assert_int_equal(got.join_state, 1);
	assert_memory_equal(got.port_gid, r.port_gid, 16);
	assert_int_equal(reach(f, cas, n, 1, 0xC000), 0);

	/* a join for another port (a proxy join): refused */
	gid_of(cas[2], r.port_gid);
	assert_int_equal(mc_ask(f, cas[1], MAD_METHOD_SET, MC_MGID | MC_PORTGID | MC_PKEY | MC_JOIN,
				&r, NULL), MAD_SA_STATUS_REQ_INVALID);
	/* a join that contradicts the group (another Q_Key): refused */
	r.qkey = 0x1234;
	assert_int_equal(mc_ask(f, cas[2], MAD_METHOD_SET,
				MC_MGID | MC_PORTGID | MC_PKEY | MC_JOIN | MC_QKEY, &r, NULL),
			 MAD_SA_STATUS_REQ_INVALID);

	/* create: a new MGID without the components a create needs: 0x0700;
	 * with them, a new MLID; a send-only member does not receive */
	memset(&r, 0, sizeof(r));
	memcpy(r.mgid, mgid, 16);
	gid_of(cas[2], r.port_gid);
	r.qkey = 0x11111111;
	r.pkey = 0xFFFF;
	r.join_state = 1;
	assert_int_equal(mc_ask(f, cas[2], MAD_METHOD_SET, MC_MGID | MC_PORTGID | MC_JOIN, &r, NULL),
			 0x0700);
	assert_int_equal(mc_ask(f, cas[2], MAD_METHOD_SET, MC_CREATE, &r, &got), 0);
	mlid = got.mlid;
	assert_true(mlid > 0xC000);
	assert_int_equal(got.qkey, 0x11111111);
	gid_of(cas[0], r.port_gid);
	r.join_state = 8; /* SendOnlyFullMember */
	assert_int_equal(mc_ask(f, cas[0], MAD_METHOD_SET, MC_MGID | MC_PORTGID | MC_JOIN, &r, &got), 0);
	assert_int_equal(got.join_state, 8);
	assert_int_equal(reach(f, cas, n, 0, mlid), 1u << 2);
	assert_int_equal(reach(f, cas, n, 2, mlid), 0);
	/* a query by PortGID: that port's membership */
	assert_int_equal(mc_ask(f, cas[0], MAD_METHOD_GETTABLE, MC_PORTGID, &r, NULL), 0);
	assert_int_equal(nrec(f), 1);
	sa_mcmember_record_decode(&got, f->msg + MAD_SA_HDR_SIZE);
	assert_int_equal(got.mlid, mlid);
	assert_int_equal(got.join_state, 0); /* (only with the SM_Key) */
	/* the broadcast group's member receives from a send-only member */
	memcpy(r.mgid, bcast_mgid, 16);
	assert_int_equal(mc_ask(f, cas[0], MAD_METHOD_SET, MC_MGID | MC_PORTGID | MC_JOIN, &r, NULL), 0);
	assert_int_equal(reach(f, cas, n, 0, 0xC000), 1u << 1);
	memcpy(r.mgid, mgid, 16);

	/* leave: a bit the port does not hold is refused; the last member's
	 * leave deletes the group (its MLID reaches nobody, the table shows
	 * the broadcast group only) */
	r.join_state = 1;
	assert_int_equal(mc_ask(f, cas[0], MAD_METHOD_DELETE, MC_MGID | MC_PORTGID | MC_JOIN, &r, NULL),
			 MAD_SA_STATUS_REQ_INVALID);
	r.join_state = 8;
	assert_int_equal(mc_ask(f, cas[0], MAD_METHOD_DELETE, MC_MGID | MC_PORTGID | MC_JOIN, &r, NULL), 0);
	assert_int_equal(f->msg[3], MAD_METHOD_DELETE | 0x80);
	gid_of(cas[2], r.port_gid);
	r.join_state = 1;
	assert_int_equal(mc_ask(f, cas[2], MAD_METHOD_DELETE, MC_MGID | MC_PORTGID | MC_JOIN, &r, NULL), 0);
	memset(&r, 0, sizeof(r));
	assert_int_equal(mc_ask(f, cas[0], MAD_METHOD_GETTABLE, 0, &r, NULL), 0);
	assert_int_equal(nrec(f), 1);
	/* an MLID no group owns reaches every CA port (ibv_attach_mcast
	 * without a join still works in the default mode) */
	assert_int_equal(reach(f, cas, n, 0, mlid), ((1u << n) - 1) & ~1u);

	/* a zero MGID: the SA picks one (ff12:a01b:P_Key::...) */
	memset(&r, 0, sizeof(r));
	gid_of(cas[1], r.port_gid);
	r.qkey = 7;
	r.pkey = 0xFFFF;
	r.join_state = 1;
	assert_int_equal(mc_ask(f, cas[1], MAD_METHOD_SET, MC_CREATE, &r, &got), 0);
	assert_int_equal(got.mgid[0], 0xff);
	assert_int_equal(got.mgid[2] << 8 | got.mgid[3], 0xa01b);
	assert_int_equal(got.mgid[4] << 8 | got.mgid[5], 0xffff);
}

/* Joins and leaves of random ports with random JoinStates to a few groups,
 * checked after each against a model: the SA's answer, each port's
 * membership as a query shows it, and which CAs a packet from every CA
 * reaches through the MFTs (the receiving members but the sender). */
static void test_mcmember_random(void **state)
{
	struct fx *f = *state;
	struct sib_fab_node *cas[8];
	unsigned int n = cas_of(f, cas);
	uint8_t model[4][8] = { { 0 } };	/* JoinState per group, CA */
	uint16_t mlid[4] = { 0 };
	const char *env = getenv("SIB_SEED");
	unsigned int seed = env ? (unsigned int)strtoul(env, NULL, 0) : (unsigned int)time(NULL);

	print_message("test_mcmember_random: SIB_SEED=%u\n", seed);
	srand(seed);
	for (int step = 0; step < 400; step++) {
		unsigned int g = (unsigned int)rand() % 4, c = (unsigned int)rand() % n;
		uint8_t js = (uint8_t)(1u << (rand() % 4)), receivers = 0;
		bool set = rand() % 3 != 0;
		struct sa_mcmember_record r, got;
		uint16_t st, want;

		memset(&r, 0, sizeof(r));
		r.mgid[0] = 0xff;
		r.mgid[1] = 0x12;
		r.mgid[15] = (uint8_t)(g + 1);
		gid_of(cas[c], r.port_gid);
		r.qkey = 0x100 + g;
		r.pkey = 0xFFFF;
		r.join_state = js;
		st = mc_ask(f, cas[c], set ? MAD_METHOD_SET : MAD_METHOD_DELETE,
			    set ? MC_CREATE : MC_MGID | MC_PORTGID | MC_JOIN, &r, &got);
		if (set) {
			bool any = false;

			for (unsigned int k = 0; k < n; k++)
				any |= model[g][k] != 0;
			/* only a full member creates a group */
			want = !any && !(js & 1) ? MAD_SA_STATUS_REQ_INVALID : 0;
		} else {
			want = model[g][c] & js ? 0 : MAD_SA_STATUS_REQ_INVALID;
		}
		if (st != want)
			fail_msg("seed %u step %d: %s group %u CA %u JoinState %u: status 0x%x, want 0x%x",
				 seed, step, set ? "join" : "leave", g, c, js, st, want);
		if (!st) {
			bool full = false;

			model[g][c] = set ? model[g][c] | js : model[g][c] & (uint8_t)~js;
			mlid[g] = got.mlid;
			assert_int_equal(got.qkey, 0x100 + g);
			assert_int_equal(got.join_state, model[g][c]);
			/* the last full member (Full, SendOnlyFull) gone: every
			 * member goes with the group (OpenSM's osm_mgrp_cleanup) */
			for (unsigned int k = 0; k < n; k++)
				full |= (model[g][k] & 9) != 0;
			if (!full)
				memset(model[g], 0, sizeof(model[g]));
		}
		{ /* the groups a port is in, as a query by PortGID shows them */
			struct sa_mcmember_record qr = { .port_gid = { 0 } };
			unsigned int in = 0;

			gid_of(cas[c], qr.port_gid);
			for (unsigned int k = 0; k < 4; k++)
				in += model[k][c] != 0;
			assert_int_equal(mc_ask(f, cas[c], MAD_METHOD_GETTABLE, MC_PORTGID, &qr, NULL), 0);
			assert_int_equal(nrec(f), in);
		}
		for (unsigned int k = 0; k < n; k++)
			if (model[g][k] & 3)
				receivers |= (uint8_t)(1u << k);
		if (!mlid[g])
			continue;
		for (unsigned int s = 0; s < n; s++) {
			uint32_t want_r, got_r;

			/* a member sends (a non-member's switch may be off the tree) */
			if (!model[g][s])
				continue;
			got_r = reach(f, cas, n, s, mlid[g]);
			want_r = receivers & ~(1u << s);
			if (got_r != want_r)
				fail_msg("seed %u step %d: group %u (MLID 0x%x) from CA %u reaches 0x%x, want 0x%x",
					 seed, step, g, mlid[g], s, got_r, want_r);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_class_port_info, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_port_info_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_path_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_path_pkey_sl, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_switch_guid_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_statuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mcmember, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mcmember, setup_2sw, teardown),
		cmocka_unit_test_setup_teardown(test_mcmember_random, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mcmember_random, setup_2sw, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
