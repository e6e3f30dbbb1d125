/* SPDX-License-Identifier: MIT */
/*
 * Private to src/mai/: a bounded big-endian cursor over a byte buffer, the
 * one way the stream and wire code read and write (IBA byte order, 13.4).
 * A read past the end never touches memory: it sets `bad` and yields 0.
 * No locks, no allocation.
 */
#ifndef SIB_MAI_BE_H
#define SIB_MAI_BE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct mai_cur {
	uint8_t *w;		/* writer: destination, or NULL */
	const uint8_t *r;	/* reader: source, or NULL */
	size_t len;		/* bytes available */
	size_t pos;
	int bad;		/* set once an access would pass len */
};

static inline int mai_cur_room(struct mai_cur *c, size_t n)
{
	if (c->bad || n > c->len - c->pos) {
		c->bad = 1;
		return 0;
	}
	return 1;
}

/* Writes the low n bytes of v big-endian. */
static inline void mai_put(struct mai_cur *c, uint64_t v, unsigned n)
{
	if (!mai_cur_room(c, n))
		return;
	for (unsigned i = 0; i < n; i++)
		c->w[c->pos + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	c->pos += n;
}

/* Reads n (<= 8) bytes big-endian. */
static inline uint64_t mai_get(struct mai_cur *c, unsigned n)
{
	uint64_t v = 0;

	if (!mai_cur_room(c, n))
		return 0;
	for (unsigned i = 0; i < n; i++)
		v = v << 8 | c->r[c->pos + i];
	c->pos += n;
	return v;
}

static inline void mai_put_bytes(struct mai_cur *c, const void *p, size_t n)
{
	if (!mai_cur_room(c, n))
		return;
	memcpy(c->w + c->pos, p, n);
	c->pos += n;
}

static inline void mai_get_bytes(struct mai_cur *c, void *p, size_t n)
{
	if (!mai_cur_room(c, n))
		return;
	memcpy(p, c->r + c->pos, n);
	c->pos += n;
}

/* The common MAD header (IBA 13.4), 24 bytes; mai_stream.c. */
struct mai_mad;
void sib_mai_hdr_put(struct mai_cur *c, const struct mai_mad *m);
void sib_mai_hdr_get(struct mai_cur *c, struct mai_mad *m);

#endif
