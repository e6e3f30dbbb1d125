// SPDX-License-Identifier: MIT
/*
 * The STATUS report of softibd: one key=value line per daemon, device, port,
 * client, then totals and counters.  The line shapes are an interface
 * (tests and scripts parse them; docs/daemon.md): add keys or lines, never
 * rename or reorder existing ones.  Reads daemon state only; single-threaded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/linkcfg.h"
#include "daemon/mai_chan.h"
#include "daemon/softibd.h"
#include "daemon/ucma.h"
#include "iba/cm.h"
#include "subnet/cm.h"

static const char *const port_state_str[] = {
	[0] = "NOP", [1] = "DOWN", [2] = "INIT", [3] = "ARMED", [4] = "ACTIVE",
	[5] = "ACTIVE_DEFER",
};

/* PortPhysicalState, IBA 14.2.5.6 */
static const char *const phys_state_str[] = {
	[0] = "NoChange", [1] = "Sleep", [2] = "Polling", [3] = "Disabled",
	[4] = "PortConfigurationTraining", [5] = "LinkUp", [6] = "LinkErrorRecovery",
	[7] = "PhyTest",
};

#define STR(tbl, i) ((size_t)(i) < sizeof(tbl) / sizeof(tbl[0]) && tbl[i] ? tbl[i] : "unknown")

static const char *width_str(uint8_t w)
{
	switch (w) {
	case 1: return "1X";
	case 2: return "4X";
	case 4: return "8X";
	case 8: return "12X";
	case 16: return "2X";
	default: return "unknown";
	}
}

static const char *speed_str(uint8_t s)
{
	switch (s) {
	case 1: return "SDR";
	case 2: return "DDR";
	case 4: return "QDR";
	case 8: return "FDR10";
	case 16: return "FDR";
	case 32: return "EDR";
	case 64: return "HDR";
	case 128: return "NDR";
	default: return "unknown";
	}
}

static const char *guid_str(uint64_t g, char buf[20])
{
	snprintf(buf, 20, "%04x:%04x:%04x:%04x", (unsigned int)(g >> 48) & 0xffff,
		 (unsigned int)(g >> 32) & 0xffff, (unsigned int)(g >> 16) & 0xffff,
		 (unsigned int)g & 0xffff);
	return buf;
}

static void print_port(FILE *f, const struct sib_shm_port *p, const struct sib_fab_port *fp,
		       unsigned int num)
{
	char g[20];

	fprintf(f, "  port num=%u state=%s phys=%s lid=%u sm_lid=%u lmc=%u mtu=%u width=%s"
		" speed=%s guid=%s peer=",
		num, STR(port_state_str, p->state), STR(phys_state_str, p->phys_state),
		p->lid, p->sm_lid, p->lmc, p->active_mtu ? 128u << p->active_mtu : 0,
		width_str(p->active_width), speed_str(p->active_speed), guid_str(p->port_guid, g));
	if (fp->peer)
		fprintf(f, "%s[%u]\n", fp->peer->node->id, fp->peer->num);
	else
		fprintf(f, "-\n");
}

static void print_counts(FILE *f, const uint32_t *n)
{
	fprintf(f, "devices=%u pd=%u mr=%u cq=%u qp=%u srq=%u ah=%u channel=%u xrcd=%u\n",
		n[SIBD_OBJ_DEVICE], n[SIB_OBJ_PD], n[SIB_OBJ_MR], n[SIB_OBJ_CQ], n[SIB_OBJ_QP],
		n[SIB_OBJ_SRQ], n[SIB_OBJ_AH], n[SIB_OBJ_COMP_CHANNEL], n[SIB_OBJ_XRCD]);
}

/* The report as a malloc'd text of *len bytes.  0 or -ENOMEM. */
/* The IB CM agent's counters (subnet/cm.h): live ids, retries, *_ERROR
 * timeouts, MADs dropped, and per message sent/received. */
static void cm_status(struct sibd *d, FILE *f)
{
	const struct sib_cm_counters *c = sib_cm_counters(d->sn);

	fprintf(f, "cm ids=%llu resent=%llu timeouts=%llu dropped=%llu", (unsigned long long)c->ids,
		(unsigned long long)c->resent, (unsigned long long)c->timeouts,
		(unsigned long long)c->dropped);
	for (uint16_t a = CM_ATTR_REQ; a <= CM_ATTR_SIDR_REP; a++)
		fprintf(f, " %s=%llu/%llu", cm_attr_str(a),
			(unsigned long long)c->sent[a - CM_ATTR_FIRST],
			(unsigned long long)c->received[a - CM_ATTR_FIRST]);
	fputc('\n', f);
}

/* The built-in SA's ServiceRecords, subscriptions and Reports. */
static void sa_status(struct sibd *d, FILE *f)
{
	struct sib_sa_status s;

	sib_sa_status(d->sn, &s);
	fprintf(f, "sa services=%u subscriptions=%u reports_pending=%u reports_sent=%llu "
		"reports_resent=%llu reports_lost=%llu reports_acked=%llu report_resp_dropped=%llu "
		"leases_expired=%llu subs_dropped=%llu traps_forwarded=%llu traps_suppressed=%llu "
		"traps_dropped=%llu\n", s.services, s.subscriptions,
		s.reports_pending, (unsigned long long)s.ctr.reports_sent,
		(unsigned long long)s.ctr.reports_resent, (unsigned long long)s.ctr.reports_lost,
		(unsigned long long)s.ctr.reports_acked, (unsigned long long)s.ctr.report_resp_dropped,
		(unsigned long long)s.ctr.leases_expired, (unsigned long long)s.ctr.subs_dropped,
		(unsigned long long)s.ctr.traps_forwarded, (unsigned long long)s.ctr.traps_suppressed,
		(unsigned long long)s.ctr.traps_dropped);
}

int sibd_status_text(struct sibd *d, char **text, size_t *len)
{
	const struct sib_sma_counters *sma = sib_subnet_sma_counters(d->sn);
	uint32_t total[SIB_OBJ_TYPE_MAX] = { 0 };
	const struct sib_shm_device *dev;
	const struct sibd_client *c;
	unsigned int i, pn, t;
	char g[20];
	FILE *f;

	f = open_memstream(text, len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "softibd pid=%d abi=%u socket=%s topology=%s clients=%u uptime=%lld\n",
		(int)getpid(), SIB_ABI_VERSION, d->sock_path, d->topology ? d->topology : "default",
		d->nclients, (sibd_now_ms() - d->start_ms) / 1000);
	for (i = 0; i < d->num_devices; i++) {
		if (!sibd_dev_present(d, i))
			continue; /* unregistered */
		dev = &d->devs[i];
		fprintf(f, "device name=%s node_guid=%s ports=%u\n", dev->name,
			guid_str(dev->node_guid, g), dev->num_ports);
		for (pn = 1; pn <= dev->num_ports; pn++)
			print_port(f, &dev->ports[pn - 1], &d->dev_node[i]->ports[pn], pn);
	}
	for (c = d->clients; c; c = c->next) {
		fprintf(f, "client pid=%d ", (int)c->pid);
		print_counts(f, c->count);
		if (c->ev.on)
			fprintf(f, "subscriber pid=%d queued=%u events=%u dropped=%llu\n",
				(int)c->pid, c->out_len, c->ev.seq,
				(unsigned long long)c->ev.dropped);
		for (t = 0; t < SIB_OBJ_TYPE_MAX; t++)
			total[t] += c->count[t];
	}
	fprintf(f, "totals ");
	print_counts(f, total);
	fprintf(f, "resources inboxes=%u max_inboxes=%u qpns=%u max_qpns=%u\n",
		d->inboxes_used, SIB_MAX_INBOXES, d->qpns_used, SIB_MAX_QPN - 2);
	{
		uint32_t att, grp = sibd_mcast_groups(d, &att);

		fprintf(f, "multicast groups=%u max_groups=%u attachments=%u quota_refused=%llu\n", grp,
			SIB_MAX_MCAST_GRP, att, (unsigned long long)d->ctr.mcast_quota);
	}
	sibd_link_status(d, f);
	sibd_mai_status(d, f);
	sibd_ucma_status(d, f);
	fprintf(f, "counters bad_commands=%llu commands=%llu connections=%llu refused=%llu\n",
		(unsigned long long)d->ctr.bad_commands, (unsigned long long)d->ctr.commands,
		(unsigned long long)d->ctr.connections, (unsigned long long)d->ctr.refused);
	fprintf(f, "direct dx_fds=%u dx_given=%llu dx_refused=%llu\n", d->dx_fds,
		(unsigned long long)d->ctr.dx_given, (unsigned long long)d->ctr.dx_refused);
	fprintf(f, "pairs made=%llu waiting=%u refused=%llu\n", (unsigned long long)d->pairs_made,
		d->pairs_fds, (unsigned long long)d->pairs_refused);
	fprintf(f, "events queued=%llu dropped=%llu devices_added=%llu devices_removed=%llu"
		" port_changes=%llu\n",
		(unsigned long long)d->ctr.events, (unsigned long long)d->ctr.events_dropped,
		(unsigned long long)d->ctr.devices_added, (unsigned long long)d->ctr.devices_removed,
		(unsigned long long)d->ctr.port_changes);
	fprintf(f, "subnet sm=%s smps=%llu gmps=%llu dropped=%llu bad_version=%llu unsupported=%llu"
		" invalid_field=%llu m_key_violations=%llu traps_sent=%llu traps_unsent=%llu"
		" trap_represses=%llu train_failed=%llu sm_traps=%llu sa_answers=%llu sa_errors=%llu"
		" sa_dropped=%llu\n",
		sib_subnet_sm_external(d->sn) ? "external" : "builtin",
		(unsigned long long)sma->smps, (unsigned long long)sma->gmps,
		(unsigned long long)sma->dropped, (unsigned long long)sma->bad_version,
		(unsigned long long)sma->unsupported, (unsigned long long)sma->invalid_field,
		(unsigned long long)sma->m_key_violations, (unsigned long long)sma->traps_sent,
		(unsigned long long)sma->traps_unsent, (unsigned long long)sma->trap_represses,
		(unsigned long long)sma->train_failed, (unsigned long long)sma->sm_traps,
		(unsigned long long)sma->sa_answers, (unsigned long long)sma->sa_errors,
		(unsigned long long)sma->sa_dropped);
	cm_status(d, f);
	sa_status(d, f);
	sibd_budget_status(d, f);
	if (fclose(f) != 0) {
		free(*text);
		*text = NULL;
		return -ENOMEM;
	}
	return 0;
}
