// SPDX-License-Identifier: MIT
/*
 * Unit tests for src/hca/mr_check.c: ibv_reg_mr access-flag rules (kernel
 * ib_check_mr_access) and the PD / access / range key checks, one table row
 * per failure plus the range boundaries (STYLE 6.8). No I/O besides cmocka.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <cmocka.h>

#include "hca/mr_check.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define LW	IBV_ACCESS_LOCAL_WRITE
#define RW	IBV_ACCESS_REMOTE_WRITE
#define RR	IBV_ACCESS_REMOTE_READ
#define RA	IBV_ACCESS_REMOTE_ATOMIC
#define MWB	IBV_ACCESS_MW_BIND

static const struct {
	const char *name;
	unsigned int access;
	int err;
} access_rows[] = {
	{ "none", 0, 0 },
	{ "local write", LW, 0 },
	{ "remote read alone", RR, 0 },
	{ "mw bind alone", MWB, 0 },
	{ "remote write without local write", RW, EINVAL },
	{ "remote atomic without local write", RA, EINVAL },
	{ "remote write + read without local write", RW | RR, EINVAL },
	{ "remote write + atomic without local write", RW | RA, EINVAL },
	{ "remote write + mw bind without local write", RW | MWB, EINVAL },
	{ "remote write with local write", LW | RW, 0 },
	{ "remote atomic with local write", LW | RA, 0 },
	{ "every defined bit", LW | RW | RR | RA | MWB | IBV_ACCESS_ZERO_BASED |
	  IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB, 0 },
	{ "zero based", IBV_ACCESS_ZERO_BASED, 0 },
	{ "on demand", IBV_ACCESS_ON_DEMAND, 0 },
	{ "hugetlb", IBV_ACCESS_HUGETLB, 0 },
	{ "relaxed ordering", IBV_ACCESS_RELAXED_ORDERING, 0 },
	{ "whole optional range", IBV_ACCESS_OPTIONAL_RANGE, 0 },
	{ "optional bit 29", 1u << 29, 0 },
	{ "optional range does not excuse remote write", RW |
	  IBV_ACCESS_RELAXED_ORDERING, EINVAL },
	{ "bit 8 (FLUSH_GLOBAL in later rdma-core)", 1u << 8, EINVAL },
	{ "bit 9", LW | (1u << 9), EINVAL },
	{ "bit 19, just below the optional range", 1u << 19, EINVAL },
	{ "bit 30, just above the optional range", 1u << 30, EINVAL },
	{ "bit 31", 1u << 31, EINVAL },
	{ "all bits", ~0u, EINVAL },
};

static void test_access_rows(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(access_rows); i++) {
		int err = sib_mr_access_check(access_rows[i].access);

		if (err != access_rows[i].err)
			fail_msg("row \"%s\" (0x%x): got %d, want %d",
				 access_rows[i].name, access_rows[i].access,
				 err, access_rows[i].err);
	}
}

/* Every bit alone, and every combination of the eight defined bits. */
static void test_access_exhaustive(void **state)
{
	unsigned int b, a;

	(void)state;
	for (b = 0; b < 32; b++) {
		unsigned int bit = 1u << b;
		int want = 0;

		if (bit == RW || bit == RA ||
		    !(bit & (0xffu | IBV_ACCESS_OPTIONAL_RANGE)))
			want = EINVAL;
		assert_int_equal(sib_mr_access_check(bit), want);
	}
	for (a = 0; a < 256; a++) {
		int want = (a & (RW | RA)) && !(a & LW) ? EINVAL : 0;

		assert_int_equal(sib_mr_access_check(a), want);
		assert_int_equal(sib_mr_access_check(a | IBV_ACCESS_OPTIONAL_RANGE),
				 want);
		assert_int_equal(sib_mr_access_check(a | (1u << 12)), EINVAL);
	}
}

static const struct sib_mr_range mr_mid = {
	.pd = 7, .iova = 0x1000, .length = 0x1000, .access = LW | RR | RW,
};
static const struct sib_mr_range mr_top = {	/* last byte is UINT64_MAX */
	.pd = 7, .iova = UINT64_MAX - 0xfff, .length = 0x1000, .access = RR,
};
static const struct sib_mr_range mr_all = {	/* [0, UINT64_MAX) */
	.pd = 7, .iova = 0, .length = UINT64_MAX, .access = LW,
};
static const struct sib_mr_range mr_wrap = {	/* malformed: iova + length wraps */
	.pd = 7, .iova = UINT64_MAX, .length = 2, .access = LW,
};
static const struct sib_mr_range mr_empty = {
	.pd = 7, .iova = 0x1000, .length = 0, .access = LW | RW | RR | RA,
};

static const struct {
	const char *name;
	const struct sib_mr_range *mr;
	uint32_t pd;
	uint64_t va, len;
	unsigned int need;
	enum sib_key_result want;
} key_rows[] = {
	/* one row per failure */
	{ "ok", &mr_mid, 7, 0x1000, 0x1000, RR, SIB_KEY_OK },
	{ "(3) other PD", &mr_mid, 8, 0x1000, 16, RR, SIB_KEY_PD },
	{ "(4) access not granted", &mr_mid, 7, 0x1000, 16, RA, SIB_KEY_ACCESS },
	{ "(4) one of two bits missing", &mr_mid, 7, 0x1000, 16, RR | RA,
	  SIB_KEY_ACCESS },
	{ "(6) starts below iova", &mr_mid, 7, 0xfff, 1, RR, SIB_KEY_RANGE },
	{ "(6) ends past iova+length", &mr_mid, 7, 0x1ff1, 16, RR, SIB_KEY_RANGE },
	{ "(6) longer than the MR", &mr_mid, 7, 0x1000, 0x1001, RR, SIB_KEY_RANGE },
	{ "(6) starts at iova+length", &mr_mid, 7, 0x2000, 1, RR, SIB_KEY_RANGE },
	/* order: first failure wins */
	{ "PD before access", &mr_mid, 8, 0x1000, 16, RA, SIB_KEY_PD },
	{ "PD before range", &mr_mid, 8, 0, 16, RR, SIB_KEY_PD },
	{ "access before range", &mr_mid, 7, 0, 16, RA, SIB_KEY_ACCESS },
	{ "need 0 passes (4)", &mr_mid, 7, 0x1000, 16, 0, SIB_KEY_OK },
	/* boundaries */
	{ "va = iova + length - len", &mr_mid, 7, 0x2000 - 16, 16, RR, SIB_KEY_OK },
	{ "va = iova + length - len + 1", &mr_mid, 7, 0x2000 - 15, 16, RR,
	  SIB_KEY_RANGE },
	{ "last byte", &mr_mid, 7, 0x1fff, 1, RR, SIB_KEY_OK },
	{ "first byte", &mr_mid, 7, 0x1000, 1, RR, SIB_KEY_OK },
	{ "len 0 at iova", &mr_mid, 7, 0x1000, 0, RR, SIB_KEY_OK },
	{ "len 0 at iova+length", &mr_mid, 7, 0x2000, 0, RR, SIB_KEY_OK },
	{ "len 0 far below", &mr_mid, 7, 0, 0, RR, SIB_KEY_OK },
	{ "len 0 at UINT64_MAX", &mr_mid, 7, UINT64_MAX, 0, RR, SIB_KEY_OK },
	{ "len 0 still checks PD", &mr_mid, 8, 0x1000, 0, RR, SIB_KEY_PD },
	{ "len 0 still checks access", &mr_mid, 7, 0x1000, 0, RA, SIB_KEY_ACCESS },
	{ "len UINT64_MAX, va+len wraps to iova", &mr_mid, 7, 0x1001, UINT64_MAX,
	  RR, SIB_KEY_RANGE },
	{ "huge va, va+len wraps below iova+length", &mr_mid, 7,
	  UINT64_MAX - 0xf, 0x20, RR, SIB_KEY_RANGE },
	/* va near UINT64_MAX */
	{ "top: whole MR", &mr_top, 7, UINT64_MAX - 0xfff, 0x1000, RR, SIB_KEY_OK },
	{ "top: byte UINT64_MAX", &mr_top, 7, UINT64_MAX, 1, RR, SIB_KEY_OK },
	{ "top: 2 bytes at UINT64_MAX", &mr_top, 7, UINT64_MAX, 2, RR,
	  SIB_KEY_RANGE },
	{ "top: last 16 bytes", &mr_top, 7, UINT64_MAX - 0xf, 0x10, RR, SIB_KEY_OK },
	{ "top: last 16 bytes + 1", &mr_top, 7, UINT64_MAX - 0xf, 0x11, RR,
	  SIB_KEY_RANGE },
	{ "top: len UINT64_MAX", &mr_top, 7, UINT64_MAX - 0xfff, UINT64_MAX, RR,
	  SIB_KEY_RANGE },
	{ "top: one below iova", &mr_top, 7, UINT64_MAX - 0x1000, 1, RR,
	  SIB_KEY_RANGE },
	/* an MR covering [0, UINT64_MAX) */
	{ "all: whole", &mr_all, 7, 0, UINT64_MAX, LW, SIB_KEY_OK },
	{ "all: shifted by one", &mr_all, 7, 1, UINT64_MAX, LW, SIB_KEY_RANGE },
	{ "all: byte UINT64_MAX is outside", &mr_all, 7, UINT64_MAX, 1, LW,
	  SIB_KEY_RANGE },
	{ "all: byte UINT64_MAX - 1", &mr_all, 7, UINT64_MAX - 1, 1, LW,
	  SIB_KEY_OK },
	/* an MR whose end wraps still covers nothing below iova */
	{ "wrap: byte 0 is outside", &mr_wrap, 7, 0, 1, LW, SIB_KEY_RANGE },
	{ "wrap: byte UINT64_MAX", &mr_wrap, 7, UINT64_MAX, 1, LW, SIB_KEY_OK },
	/* zero-length MR */
	{ "empty: len 1", &mr_empty, 7, 0x1000, 1, RW, SIB_KEY_RANGE },
	{ "empty: len 0", &mr_empty, 7, 0x1000, 0, RW, SIB_KEY_OK },
};

static void test_key_rows(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(key_rows); i++) {
		enum sib_key_result got =
			sib_mr_check(key_rows[i].mr, key_rows[i].pd,
				     key_rows[i].va, key_rows[i].len,
				     key_rows[i].need);

		if (got != key_rows[i].want)
			fail_msg("row \"%s\": got %d, want %d",
				 key_rows[i].name, got, key_rows[i].want);
	}
}

/* Every (va, len) over a small MR, against a reference in wide arithmetic. */
static void test_range_sweep(void **state)
{
	static const uint64_t bases[] = { 0, 0x1000, UINT64_MAX - 63 };
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bases); i++) {
		struct sib_mr_range mr = {
			.pd = 1, .iova = bases[i], .length = 64, .access = LW,
		};
		uint64_t off, len;

		for (off = 0; off < 80; off++) {
			for (len = 0; len < 80; len++) {
				uint64_t va = mr.iova + off - 8;
				unsigned __int128 end = (unsigned __int128)va + len;
				unsigned __int128 mend =
					(unsigned __int128)mr.iova + mr.length;
				bool in = len == 0 ||
					  (va >= mr.iova && end <= mend);

				if (mr.iova < 8 && off < 8)
					continue;	/* va would wrap below 0 */
				assert_int_equal(sib_mr_check(&mr, 1, va, len, LW),
						 in ? SIB_KEY_OK : SIB_KEY_RANGE);
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_access_rows),
		cmocka_unit_test(test_access_exhaustive),
		cmocka_unit_test(test_key_rows),
		cmocka_unit_test(test_range_sweep),
	};

	print_message("%zu access rows, %zu key rows\n", ARRAY_SIZE(access_rows),
		      ARRAY_SIZE(key_rows));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
