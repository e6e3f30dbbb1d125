/* SPDX-License-Identifier: MIT */
/*
 * Test data: the bytes of message `seq`, a stream that sender and receiver
 * both recompute (the first 4 bytes are seq itself), so that a receiver can
 * tell a lost, repeated or reordered message from a damaged one.  Used by
 * test_faults.c and test_hca_loopback.c.  Not IBA; no state.
 */
#ifndef SIB_TESTS_STREAM_FILL_H
#define SIB_TESTS_STREAM_FILL_H

#include <stdint.h>
#include <string.h>

static inline void stream_fill(uint8_t *p, uint32_t len, uint32_t seq)
{
	uint32_t x = seq * 2654435761u + 1;

	memcpy(p, &seq, len < sizeof(seq) ? len : sizeof(seq));
	for (uint32_t i = sizeof(seq); i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

#endif
