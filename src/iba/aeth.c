// SPDX-License-Identifier: MIT
/*
 * softib AETH code tables: RNR NAK timer codes and end-to-end credit codes
 * (IBA 9.7.5.1), written out from the published values
 * (code 25 is 61.44 ms; rxe's 61410 is a typo).
 * No I/O, no state.
 */
#include "iba/iba.h"

/* RNR NAK timer field -> microseconds. */
static const uint32_t rnr_timer_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120,
	160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/* ACK credit field -> number of credits (code 31 = invalid, see below). */
static const uint32_t credit_count[31] = {
	0, 1, 2, 3, 4, 6, 8, 12,
	16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072,
	4096, 6144, 8192, 12288, 16384, 24576, 32768,
};

uint32_t iba_rnr_timer_us(uint8_t code)
{
	return rnr_timer_us[code & 0x1F];
}

uint32_t iba_aeth_credits(uint8_t code)
{
	code &= 0x1F;
	return code == IBA_AETH_CREDIT_INVALID ? UINT32_MAX : credit_count[code];
}

uint8_t iba_aeth_credit_code(uint32_t free_rwqes)
{
	unsigned lo = 0, hi = 30;

	/* Binary search for the largest code with credit_count[code] <= free. */
	while (lo < hi) {
		unsigned mid = (lo + hi + 1) / 2;

		if (credit_count[mid] <= free_rwqes)
			lo = mid;
		else
			hi = mid - 1;
	}
	return (uint8_t)lo;
}
