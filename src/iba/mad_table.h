/* SPDX-License-Identifier: MIT */
/*
 * Initialisers of struct mad_field (mad.h) for the field tables of mad.c
 * and sa.c: one definition of how a table row names its struct member.
 * Private to src/iba.
 */
#ifndef SIB_IBA_MAD_TABLE_H
#define SIB_IBA_MAD_TABLE_H

#include <stddef.h>

#include "iba/mad.h"

#define MSIZE(T, m) ((uint8_t)sizeof(((T *)0)->m))
/* scalar field: F(struct, "IBA name", member, byte, container bytes, shift, mask) */
#define F(T, name, m, off, bytes, shift, mask) \
	{ name, off, bytes, shift, mask, offsetof(T, m), MSIZE(T, m), 1, 0 }
/* n equal fields stride bytes apart into the array member m[] */
#define FA(T, name, m, off, bytes, shift, mask, n, stride) \
	{ name, off, bytes, shift, mask, offsetof(T, m), MSIZE(T, m[0]), n, stride }

#endif
