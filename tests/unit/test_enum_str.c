// SPDX-License-Identifier: MIT
/*
 * Unit tests for src/verbs/enum_str.c, compiled straight into this program:
 * every enum value's string and every static-rate mapping, as printed by the
 * system's rdma-core 44 libibverbs, plus out-of-range inputs. No I/O besides
 * cmocka's report.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <cmocka.h>

#include <infiniband/verbs.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static void test_wc_status(void **state)
{
	static const char *const want[] = {
		"success", "local length error", "local QP operation error",
		"local EE context operation error", "local protection error",
		"Work Request Flushed Error", "memory management operation error",
		"bad response error", "local access error",
		"remote invalid request error", "remote access error",
		"remote operation error", "transport retry counter exceeded",
		"RNR retry counter exceeded", "local RDD violation error",
		"remote invalid RD request", "aborted error",
		"invalid EE context number", "invalid EE context state",
		"fatal error", "response timeout error", "general error",
		"TM error", "TM software rendezvous",
	};
	int i;

	(void)state;
	assert_int_equal(ARRAY_SIZE(want), IBV_WC_TM_RNDV_INCOMPLETE + 1);
	for (i = 0; i < (int)ARRAY_SIZE(want); i++)
		assert_string_equal(ibv_wc_status_str(i), want[i]);
	assert_string_equal(ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR),
			    "transport retry counter exceeded");
	assert_string_equal(ibv_wc_status_str(IBV_WC_TM_RNDV_INCOMPLETE + 1),
			    "unknown");
	assert_string_equal(ibv_wc_status_str(1000), "unknown");
	assert_string_equal(ibv_wc_status_str(-1), "unknown");
	assert_string_equal(ibv_wc_status_str(INT_MIN), "unknown");
	assert_string_equal(ibv_wc_status_str(INT_MAX), "unknown");
}

static void test_node_type(void **state)
{
	(void)state;
	assert_string_equal(ibv_node_type_str(IBV_NODE_CA),
			    "InfiniBand channel adapter");
	assert_string_equal(ibv_node_type_str(IBV_NODE_SWITCH), "InfiniBand switch");
	assert_string_equal(ibv_node_type_str(IBV_NODE_ROUTER), "InfiniBand router");
	assert_string_equal(ibv_node_type_str(IBV_NODE_RNIC), "iWARP NIC");
	assert_string_equal(ibv_node_type_str(IBV_NODE_USNIC), "usNIC");
	assert_string_equal(ibv_node_type_str(IBV_NODE_USNIC_UDP), "usNIC UDP");
	assert_string_equal(ibv_node_type_str(IBV_NODE_UNSPECIFIED), "unspecified");
	assert_string_equal(ibv_node_type_str(IBV_NODE_UNKNOWN), "unknown");
	assert_string_equal(ibv_node_type_str(0), "unknown");
	assert_string_equal(ibv_node_type_str(IBV_NODE_UNSPECIFIED + 1), "unknown");
	assert_string_equal(ibv_node_type_str(INT_MIN), "unknown");
	assert_string_equal(ibv_node_type_str(INT_MAX), "unknown");
}

static void test_port_state(void **state)
{
	(void)state;
	assert_string_equal(ibv_port_state_str(IBV_PORT_NOP), "no state change (NOP)");
	assert_string_equal(ibv_port_state_str(IBV_PORT_DOWN), "down");
	assert_string_equal(ibv_port_state_str(IBV_PORT_INIT), "init");
	assert_string_equal(ibv_port_state_str(IBV_PORT_ARMED), "armed");
	assert_string_equal(ibv_port_state_str(IBV_PORT_ACTIVE), "active");
	assert_string_equal(ibv_port_state_str(IBV_PORT_ACTIVE_DEFER), "active defer");
	assert_string_equal(ibv_port_state_str(IBV_PORT_ACTIVE_DEFER + 1), "unknown");
	assert_string_equal(ibv_port_state_str(-1), "unknown");
	assert_string_equal(ibv_port_state_str(INT_MIN), "unknown");
	assert_string_equal(ibv_port_state_str(INT_MAX), "unknown");
}

static void test_event_type(void **state)
{
	static const char *const want[] = {
		"CQ error", "local work queue catastrophic error",
		"invalid request local work queue error",
		"local access violation work queue error",
		"communication established", "send queue drained",
		"path migrated", "path migration request error",
		"local catastrophic error", "port active", "port error",
		"LID change", "P_Key change", "SM change",
		"SRQ catastrophic error", "SRQ limit reached",
		"last WQE reached", "client reregistration",
		"GID table change", "WQ fatal",
	};
	int i;

	(void)state;
	assert_int_equal(ARRAY_SIZE(want), IBV_EVENT_WQ_FATAL + 1);
	for (i = 0; i < (int)ARRAY_SIZE(want); i++)
		assert_string_equal(ibv_event_type_str(i), want[i]);
	assert_string_equal(ibv_event_type_str(IBV_EVENT_WQ_FATAL + 1), "unknown");
	assert_string_equal(ibv_event_type_str(-1), "unknown");
	assert_string_equal(ibv_event_type_str(INT_MIN), "unknown");
	assert_string_equal(ibv_event_type_str(INT_MAX), "unknown");
}

/* rate, multiple of 2.5 Gb/s (-1: none), Mb/s; as rdma-core 44 returns them */
static const struct {
	enum ibv_rate rate;
	int mult;
	int mbps;
} rate_rows[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },
	{ IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },
	{ IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },
	{ IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },
	{ IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },
	{ IBV_RATE_14_GBPS, -1, 14062 },
	{ IBV_RATE_56_GBPS, -1, 56250 },
	{ IBV_RATE_112_GBPS, -1, 112500 },
	{ IBV_RATE_168_GBPS, -1, 168750 },
	{ IBV_RATE_25_GBPS, -1, 25781 },
	{ IBV_RATE_100_GBPS, -1, 103125 },
	{ IBV_RATE_200_GBPS, -1, 206250 },
	{ IBV_RATE_300_GBPS, -1, 309375 },
	{ IBV_RATE_28_GBPS, 11, 28125 },
	{ IBV_RATE_50_GBPS, 20, 53125 },
	{ IBV_RATE_400_GBPS, 160, 425000 },
	{ IBV_RATE_600_GBPS, 240, 637500 },
	{ IBV_RATE_800_GBPS, 320, 850000 },
	{ IBV_RATE_1200_GBPS, 480, 1275000 },
};

static void test_rate_rows(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(rate_rows); i++) {
		assert_int_equal(ibv_rate_to_mult(rate_rows[i].rate), rate_rows[i].mult);
		assert_int_equal(ibv_rate_to_mbps(rate_rows[i].rate), rate_rows[i].mbps);
		assert_int_equal(mbps_to_ibv_rate(rate_rows[i].mbps), rate_rows[i].rate);
		if (rate_rows[i].mult > 0)
			assert_int_equal(mult_to_ibv_rate(rate_rows[i].mult),
					 rate_rows[i].rate);
	}
	/* spot checks from verbs.h's comments */
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_5_GBPS), 5000);
	assert_int_equal(ibv_rate_to_mult(IBV_RATE_10_GBPS), 4);
}

static void test_rate_out_of_range(void **state)
{
	static const int bad_rates[] = { IBV_RATE_MAX, 1, 25, 26, 100, -1,
					 INT_MIN, INT_MAX };
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad_rates); i++) {
		assert_int_equal(ibv_rate_to_mult(bad_rates[i]), -1);
		assert_int_equal(ibv_rate_to_mbps(bad_rates[i]), -1);
	}
	assert_int_equal(mult_to_ibv_rate(0), IBV_RATE_MAX);
	assert_int_equal(mult_to_ibv_rate(-1), IBV_RATE_MAX);
	assert_int_equal(mult_to_ibv_rate(3), IBV_RATE_MAX);
	assert_int_equal(mult_to_ibv_rate(INT_MIN), IBV_RATE_MAX);
	assert_int_equal(mult_to_ibv_rate(INT_MAX), IBV_RATE_MAX);
	assert_int_equal(mbps_to_ibv_rate(0), IBV_RATE_MAX);
	assert_int_equal(mbps_to_ibv_rate(-1), IBV_RATE_MAX);
	assert_int_equal(mbps_to_ibv_rate(2499), IBV_RATE_MAX);
	assert_int_equal(mbps_to_ibv_rate(2501), IBV_RATE_MAX);
	assert_int_equal(mbps_to_ibv_rate(14000), IBV_RATE_MAX);	/* not 14062 */
	assert_int_equal(mbps_to_ibv_rate(INT_MIN), IBV_RATE_MAX);
	assert_int_equal(mbps_to_ibv_rate(INT_MAX), IBV_RATE_MAX);
}

/* Only the listed values map back: sweep every multiple and every Mb/s. */
static void test_rate_sweep(void **state)
{
	int v, hits;

	(void)state;
	for (hits = 0, v = -16; v <= 1000; v++)
		if (mult_to_ibv_rate(v) != IBV_RATE_MAX)
			hits++;
	assert_int_equal(hits, 15);
	for (hits = 0, v = -16; v <= 1300000; v++)
		if (mbps_to_ibv_rate(v) != IBV_RATE_MAX)
			hits++;
	assert_int_equal(hits, (int)ARRAY_SIZE(rate_rows));
	for (hits = 0, v = -16; v <= 64; v++)
		if (ibv_rate_to_mbps(v) != -1)
			hits++;
	assert_int_equal(hits, (int)ARRAY_SIZE(rate_rows));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wc_status),
		cmocka_unit_test(test_node_type),
		cmocka_unit_test(test_port_state),
		cmocka_unit_test(test_event_type),
		cmocka_unit_test(test_rate_rows),
		cmocka_unit_test(test_rate_out_of_range),
		cmocka_unit_test(test_rate_sweep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
