// SPDX-License-Identifier: MIT
/*
 * The filters of the subnet's internal agents (docs/mai.md "Channels"):
 * what the SMA and the PMA take from the MAD router, matched by the same
 * engine (mai_match) as the host's channels' filters.  A constant table.
 */
#include "iba/mad.h"
#include "subnet/subnet_int.h"

/* The SMA's attributes (IBA 14.2.5; research mgmt.md 3.4): what it
 * implements, and what it must answer 0x000C for rather than let a
 * manager's broad filter swallow (Notice, RandomFT, VendorDiag, LedInfo,
 * CableInfo, PortInfoExtended; plus every vendor attribute 0xFF00-0xFFFF,
 * e.g. MlnxExtPortInfo, by a quantifier on the attribute's high byte).
 * Internal agents' filters are tried before any client's (mai_match),
 * and each names base version, class, class version, method and
 * attribute (or the quantifier), so SMInfo, which the SMA does not
 * claim, still reaches the SM.  The PMA takes class 0x04
 * Get/Set by base version, class, class version and method. */
static const uint16_t sma_attrs[] = {
	MAD_ATTR_NOTICE, MAD_ATTR_NODE_DESC, MAD_ATTR_NODE_INFO, MAD_ATTR_SWITCH_INFO,
	MAD_ATTR_GUID_INFO, MAD_ATTR_PORT_INFO, MAD_ATTR_P_KEY_TABLE, MAD_ATTR_SLVL_TABLE,
	MAD_ATTR_VL_ARBITRATION, MAD_ATTR_LIN_FWD_TBL, 0x001A /* RandomForwardingTable */,
	MAD_ATTR_MCAST_FWD_TBL, 0x0030 /* VendorDiag */, 0x0031 /* LedInfo */,
	0x0032 /* CableInfo */, 0x0033 /* PortInfoExtended */,
	0xFF00 /* stands for the vendor range: see agents_build */,
};
#define N_SMA_ATTRS (sizeof(sma_attrs) / sizeof(sma_attrs[0]))
#define N_PMA_FILTERS 2	/* the last entries of agent[] */
#define N_AGENT (N_SMA_ATTRS * 2 * 2 + N_PMA_FILTERS)

static mai_filter_t agent_f[N_AGENT];
static struct mai_filter_ent agent[N_AGENT];
static size_t nagent; /* 0 until agents_build() ran */

/* The table, built once (its content never changes). */
static void agents_build(void)
{
	static const uint8_t smp_classes[] = {
		MAD_MGMT_CLASS_SUBN_LID_ROUTED, MAD_MGMT_CLASS_SUBN_DIRECTED_ROUTE,
	};
	static const uint8_t methods[] = { MAD_METHOD_GET, MAD_METHOD_SET };
	size_t i = 0;

	if (nagent)
		return;
	for (size_t c = 0; c < 2; c++)
		for (size_t a = 0; a < N_SMA_ATTRS; a++)
			for (size_t me = 0; me < 2; me++) {
				mai_filter_t *f = &agent_f[i];

				f->flags = MAI_F_CONSUME;
				f->match = MAI_M_BASE_VER | MAI_M_CLASS | MAI_M_CLASS_VER |
					   MAI_M_METHOD | MAI_M_ATTR;
				f->base_version = MAD_BASE_VERSION;
				f->mgmt_class = smp_classes[c];
				f->class_version = MAD_SMP_CLASS_VERSION;
				f->method = methods[me];
				f->attr_id = sma_attrs[a];
				if (sma_attrs[a] == 0xFF00) { /* AttributeID byte 16 = 0xFF */
					f->match &= ~(uint32_t)MAI_M_ATTR;
					f->nquant = 1;
					f->quant[0] = (struct mai_quant){ .offset = 16, .length = 1,
									  .value = 0xFF };
				}
				agent[i] = (struct mai_filter_ent){ .chan = SIB_MAD_CHAN_SMA,
									 .f = f, .internal = 1 };
				i++;
			}
	for (size_t me = 0; me < 2; me++) {
		mai_filter_t *f = &agent_f[i];

		f->flags = MAI_F_CONSUME;
		f->match = MAI_M_BASE_VER | MAI_M_CLASS | MAI_M_CLASS_VER | MAI_M_METHOD;
		f->base_version = MAD_BASE_VERSION;
		f->mgmt_class = MAD_MGMT_CLASS_PERF_MGMT;
		f->class_version = MAD_PMA_CLASS_VERSION;
		f->method = methods[me];
		agent[i] = (struct mai_filter_ent){ .chan = SIB_MAD_CHAN_PMA, .f = f,
							 .internal = 1 };
		i++;
	}
	nagent = i;
}

const struct mai_filter_ent *sib_mad_agents(uint8_t qp, size_t *n)
{
	agents_build();
	*n = qp == 0 ? nagent - N_PMA_FILTERS : N_PMA_FILTERS;
	return qp == 0 ? agent : agent + nagent - N_PMA_FILTERS;
}

size_t sib_mad_agent_filters(void)
{
	agents_build();
	return nagent;
}
