// SPDX-License-Identifier: MIT
/*
 * Standalone driver for the libFuzzer-style harnesses in tests/fuzz/, for
 * builds without libFuzzer (plain gcc; the ctest run). Compiled once per
 * harness with FUZZ_TARGET_IBA or FUZZ_TARGET_TOPOLOGY, which selects the
 * seed inputs and the format-aware mutations.
 *
 *   fuzz_X [N] [--seed S]        run N generated inputs (default 20000)
 *   fuzz_X FILE|DIR...           replay inputs (a crash file, a corpus)
 *   fuzz_X --dump I FILE         write generated input I to FILE
 *   fuzz_X --write-seeds DIR     write the seed inputs (a libFuzzer corpus)
 *   fuzz_X --write-dict FILE     write a libFuzzer dictionary (topology)
 *
 * Input I depends only on (S, I): each input has its own random stream. It
 * is either random bytes (or random text), or a seed input with a few
 * stacked mutations: bit flips, interesting bytes and words, truncation,
 * extension, erased and inserted chunks, splices with another seed, and
 * per format, header field overwrites and length/CRC fix-ups (IBA) or
 * tokens and line edits (topology). When the harness aborts or a sanitizer
 * reports, the input is saved as crash-<target>-<S>-<I> in $FUZZ_CRASH_DIR
 * (default: the current directory). docs/fuzzing.md has the details.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_print_stats(FILE *out);

#if defined(FUZZ_TARGET_IBA)
#include "iba/iba.h"
#define TARGET "fuzz_iba_decode"
#define FUZZ_MAX_INPUT 8448		/* > the largest packet, 8188 + VCRC */
#define TEXT_TARGET 0
#elif defined(FUZZ_TARGET_TOPOLOGY)
#include "subnet/fabric.h"
#define TARGET "fuzz_topology"
#define FUZZ_MAX_INPUT (96 * 1024)	/* room for > SIB_FAB_MAX_TOTAL_PORTS in switches */
#define TEXT_TARGET 1
#else
#error "define FUZZ_TARGET_IBA or FUZZ_TARGET_TOPOLOGY"
#endif

#define DEFAULT_RUNS 20000
#define DEFAULT_SEED 0x50f71bULL

/* ---- random numbers: splitmix64, one stream per input ----------------------- */

struct rng {
	uint64_t s;
};

static uint64_t next64(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 if n == 0. */
static size_t rnd(struct rng *r, size_t n)
{
	return n ? (size_t)(next64(r) % n) : 0;
}

static bool chance(struct rng *r, unsigned one_in)
{
	return rnd(r, one_in) == 0;
}

static void rng_for_input(struct rng *r, uint64_t seed, uint64_t index)
{
	r->s = seed * 0xd1342543de82ef95ULL + index;
	(void)next64(r);
	r->s ^= index * 0x2545f4914f6cdd1dULL;
	(void)next64(r);
}

/* ---- seed inputs ------------------------------------------------------------ */

struct blob {
	uint8_t *data;
	size_t len;
	char name[64];
};

static struct blob *seeds;
static size_t n_seeds, cap_seeds;

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, TARGET ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void add_seed(const void *data, size_t len, const char *name)
{
	struct blob *b;

	if (len > FUZZ_MAX_INPUT)
		len = FUZZ_MAX_INPUT;
	if (n_seeds == cap_seeds) {
		cap_seeds = cap_seeds ? 2 * cap_seeds : 256;
		seeds = realloc(seeds, cap_seeds * sizeof(*seeds));
		if (!seeds)
			die("out of memory");
	}
	b = &seeds[n_seeds++];
	b->data = malloc(len ? len : 1);
	if (!b->data)
		die("out of memory");
	memcpy(b->data, data, len);
	b->len = len;
	snprintf(b->name, sizeof(b->name), "%s", name);
}

/* Whole file into a malloc'd buffer (NUL-terminated for convenience). */
static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0, got;

	if (!fp)
		return NULL;
	do {
		if (n == cap) {
			uint8_t *nb;

			cap = cap ? 2 * cap : 65536;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				fclose(fp);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, fp);
		n += got;
	} while (got);
	if (ferror(fp)) {
		free(buf);
		fclose(fp);
		errno = EIO;
		return NULL;
	}
	fclose(fp);
	buf[n] = 0;
	*len = n;
	return buf;
}

/* ---- crash capture ------------------------------------------------------------ */

static const uint8_t *cur_data;
static size_t cur_len;
static uint64_t cur_seed, cur_index;
static bool cur_generated;
static const char *crash_dir;	/* $FUZZ_CRASH_DIR, read at start */

static void put_str(const char *s)
{
	ssize_t r = write(2, s, strlen(s));

	(void)r;
}

/* Async-signal-safe: save the current input and say where. */
static void save_current(void)
{
	static volatile sig_atomic_t saved;
	char path[512], num[32];
	const char *dir = crash_dir;
	size_t off = 0, i;
	uint64_t v;
	int fd, k;

	if (saved || !cur_generated)
		return;
	saved = 1;
	path[0] = 0;
	if (dir && *dir && strlen(dir) < 300) {
		strcpy(path, dir);
		strcat(path, "/");
	}
	strcat(path, "crash-" TARGET "-");
	for (k = 0; k < 2; k++) {
		v = k ? cur_index : cur_seed;
		i = sizeof(num) - 1;
		num[i] = 0;
		do {
			num[--i] = (char)('0' + v % 10);
			v /= 10;
		} while (v);
		strcat(path, num + i);
		if (!k)
			strcat(path, "-");
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		put_str(TARGET ": could not save the crashing input\n");
		return;
	}
	while (off < cur_len) {
		ssize_t w = write(fd, cur_data + off, cur_len - off);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(fd);
	put_str(TARGET ": crashing input saved as ");
	put_str(path);
	put_str("\n" TARGET ": replay with: " TARGET " ");
	put_str(path);
	put_str("\n");
}

static void on_signal(int sig)
{
	save_current();
	signal(sig, SIG_DFL);
	raise(sig);
}

#if defined(__SANITIZE_ADDRESS__)
/* ASan (and LSan) call this before they exit. */
static void on_sanitizer_death(void)
{
	save_current();
}
#endif

/*
 * UBSan's hook, called on every report (a weak no-op in its runtime). With
 * -fno-sanitize-recover the process dies right after it; with recovery the
 * first report is saved and the run goes on. Unused without UBSan.
 */
void __ubsan_on_report(void);
void __ubsan_on_report(void)
{
	save_current();
}

static void install_crash_handlers(void)
{
#if defined(__SANITIZE_ADDRESS__)
	/* ASan reports SEGV/BUS/FPE itself, with a stack; keep its handlers. */
	static const int sigs[] = { SIGABRT, SIGILL };
#else
	static const int sigs[] = { SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL };
#endif
	struct sigaction sa;
	size_t i;

	crash_dir = getenv("FUZZ_CRASH_DIR");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
#if defined(__SANITIZE_ADDRESS__)
	__sanitizer_set_death_callback(on_sanitizer_death);
#endif
}

/* ---- generic mutations --------------------------------------------------------- */

static const uint8_t interesting8[] = { 0, 1, 2, 3, 4, 0x0F, 0x10, 0x1B, 0x20, 0x3F, 0x40,
					0x60, 0x7F, 0x80, 0x81, 0xA0, 0xC0, 0xE0, 0xFE, 0xFF };
static const uint32_t interesting32[] = { 0, 1, 2, 3, 4, 0x7F, 0x80, 0xFF, 0x100, 0x7FF,
					  0x800, 0x1000, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
					  0xFFFFFF, 0x1000000, 0x7FFFFFFF, 0x80000000,
					  0xFFFFFFFE, 0xFFFFFFFF };

/* Position to mutate; binary inputs favour the headers. */
static size_t pick_pos(struct rng *r, size_t len)
{
	if (!TEXT_TARGET && len > 64 && chance(r, 2))
		return rnd(r, 64);
	return rnd(r, len);
}

static const struct blob *other_seed(struct rng *r)
{
	return &seeds[rnd(r, n_seeds)];
}

static size_t target_mutate(struct rng *r, uint8_t *b, size_t len, size_t cap);
static size_t target_fixup(struct rng *r, uint8_t *b, size_t len, size_t cap);
static size_t target_random(struct rng *r, uint8_t *b, size_t cap);

/* Byte-level mutations 0..4 that keep the length: bit flips, interesting values, arithmetic. */
static void mutate_in_place(struct rng *r, uint8_t *b, size_t len, unsigned op)
{
	size_t pos, n, i;
	uint32_t v;
	bool big_endian;
	int delta;

	switch (op) {
	case 0:		/* flip 1..4 bits */
		for (i = 1 + rnd(r, 4); len && i--;) {
			pos = pick_pos(r, len);
			b[pos] ^= (uint8_t)(1u << rnd(r, 8));
		}
		break;
	case 1:		/* interesting byte */
		if (len)
			b[pick_pos(r, len)] = interesting8[rnd(r, sizeof(interesting8))];
		break;
	case 2:		/* interesting 16/32-bit word, either byte order */
		n = chance(r, 2) ? 2 : 4;
		if (len < n)
			break;
		pos = rnd(r, len - n + 1);
		if (!TEXT_TARGET && pos > 64 && chance(r, 2))
			pos = rnd(r, (len - n + 1) < 64 ? len - n + 1 : 64);
		v = interesting32[rnd(r, sizeof(interesting32) / 4)];
		if (chance(r, 4))
			v = ~v;
		big_endian = chance(r, 2);
		for (i = 0; i < n; i++)
			b[pos + i] = (uint8_t)(v >> (big_endian ? 8 * (n - 1 - i) : 8 * i));
		break;
	case 3:		/* random byte */
		if (len)
			b[pick_pos(r, len)] = (uint8_t)next64(r);
		break;
	case 4:		/* small add/subtract */
		if (len) {
			pos = pick_pos(r, len);
			delta = 1 + (int)rnd(r, 16);
			if (chance(r, 2))
				delta = -delta;
			b[pos] = (uint8_t)(b[pos] + delta);
		}
		break;
	}
}

/* Mutations 5..8 that change the length: truncate, extend, erase or insert a chunk. */
static size_t mutate_resize(struct rng *r, uint8_t *b, size_t len, size_t cap, unsigned op)
{
	size_t pos, n, i;

	switch (op) {
	case 5:		/* truncate */
		if (len)
			len = chance(r, 2) ? rnd(r, len + 1) : len - 1 - rnd(r, len < 8 ? len : 8);
		break;
	case 6:		/* extend with zero or random bytes */
		n = 1 + rnd(r, chance(r, 8) ? 512 : 16);
		if (n > cap - len)
			n = cap - len;
		if (chance(r, 2))
			memset(b + len, 0, n);
		else
			for (i = 0; i < n; i++)
				b[len + i] = (uint8_t)next64(r);
		len += n;
		break;
	case 7:		/* erase a chunk */
		if (len) {
			pos = rnd(r, len);
			n = 1 + rnd(r, (len - pos) < 64 ? len - pos : 64);
			memmove(b + pos, b + pos + n, len - pos - n);
			len -= n;
		}
		break;
	case 8:		/* insert a chunk: random, or a copy from the input */
		n = 1 + rnd(r, 32);
		if (n > cap - len)
			n = cap - len;
		pos = rnd(r, len + 1);
		memmove(b + pos + n, b + pos, len - pos);
		if (len > n && chance(r, 2)) {
			size_t from = rnd(r, len - n);

			/* the input before the insertion point is unchanged */
			for (i = 0; i < n; i++)
				b[pos + i] = b[from + i < pos ? from + i : from + i + n];
		} else {
			for (i = 0; i < n; i++)
				b[pos + i] = (uint8_t)next64(r);
		}
		len += n;
		break;
	}
	return len;
}

/* Mutations 9..10 that take bytes from another seed: splice, crossover. */
static size_t mutate_from_seed(struct rng *r, uint8_t *b, size_t len, size_t cap, unsigned op)
{
	const struct blob *o;
	size_t pos, n, i;

	switch (op) {
	case 9:		/* splice: our head, another seed's tail */
		o = other_seed(r);
		pos = rnd(r, len + 1);
		i = rnd(r, o->len + 1);
		n = o->len - i;
		if (n > cap - pos)
			n = cap - pos;
		memcpy(b + pos, o->data + i, n);
		len = pos + n;
		break;
	case 10:	/* crossover: another seed's bytes at the same offset */
		o = other_seed(r);
		if (!o->len || !len)
			break;
		pos = rnd(r, len < o->len ? len : o->len);
		n = 1 + rnd(r, 64);
		if (n > o->len - pos)
			n = o->len - pos;
		if (n > len - pos)
			n = len - pos;
		memcpy(b + pos, o->data + pos, n);
		break;
	}
	return len;
}

static size_t mutate_once(struct rng *r, uint8_t *b, size_t len, size_t cap)
{
	unsigned op;

	if (len > cap || cap > FUZZ_MAX_INPUT)
		return len;
	op = (unsigned)rnd(r, 16);
	if (op <= 4)
		mutate_in_place(r, b, len, op);
	else if (op <= 8)
		len = mutate_resize(r, b, len, cap, op);
	else if (op <= 10)
		len = mutate_from_seed(r, b, len, cap, op);
	else	/* format-aware, 5 times in 16 */
		len = target_mutate(r, b, len, cap);
	return len;
}

/* Input `index` of the run into b (FUZZ_MAX_INPUT bytes); returns its length. */
static size_t generate(uint64_t seed, uint64_t index, uint8_t *b)
{
	struct rng r;
	size_t len, k;
	const struct blob *s;

	rng_for_input(&r, seed, index);
	if (chance(&r, 16))
		return target_random(&r, b, FUZZ_MAX_INPUT);
	s = other_seed(&r);
	memcpy(b, s->data, s->len);
	len = s->len;
	if (chance(&r, 32))
		return len;		/* the seed as it is */
	/* 1, 2, 4 or 8 stacked mutations, fewer more often. */
	k = (size_t)1 << rnd(&r, 4);
	k = 1 + rnd(&r, k);
	while (k--)
		len = mutate_once(&r, b, len, FUZZ_MAX_INPUT);
	if (chance(&r, 2))
		len = target_fixup(&r, b, len, FUZZ_MAX_INPUT);
	return len;
}

/* ============================================================================ */
#if defined(FUZZ_TARGET_IBA)
/* ---- IBA packets: seeds, field overwrites, length and CRC fix-ups ------------ */

static const struct iba_field *fields;
static size_t n_fields;

static const struct iba_field *field_named(const char *name)
{
	size_t i;

	for (i = 0; i < n_fields; i++)
		if (!strcmp(fields[i].name, name))
			return &fields[i];
	die("no field %s in iba_fields()", name);
}

static void member_set(struct iba_pkt *p, const struct iba_field *f, uint64_t v)
{
	unsigned char *m = (unsigned char *)p + f->pkt_off;
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	switch (f->pkt_size) {
	case 1:
		memcpy(m, &v8, 1);
		break;
	case 2:
		memcpy(m, &v16, 2);
		break;
	case 4:
		memcpy(m, &v32, 4);
		break;
	default:
		memcpy(m, &v, 8);
		break;
	}
}

/* A value for field mask m: the edges more often than their share. */
static uint64_t field_value(struct rng *r, uint64_t m)
{
	switch (rnd(r, 8)) {
	case 0:
		return 0;
	case 1:
		return m;
	case 2:
		return 1;
	case 3:
		return m - 1;
	case 4:
		return (m >> 1) + 1;	/* top bit only */
	default:
		return next64(r) & m;
	}
}

static void store_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/*
 * Valid packets: every defined opcode, LNH 2 and 3, with and without a
 * VCRC, no payload, a short one and a longer one, all fields random. Each
 * must decode with both CRCs checked, or the builder and the decoder
 * disagree: that is a bug, reported at once.
 */
static void make_seeds(void)
{
	struct rng r = { 0x1ba5eed5 };
	uint8_t buf[8192 + 16];
	unsigned op, global, vc, k, i;
	struct iba_pkt p, q;
	char name[64];

	fields = iba_fields(&n_fields);
	for (op = 0; op < 256; op++) {
		const struct iba_opcode_info *oi = iba_opcode_info((uint8_t)op);

		if (!oi->name)
			continue;
		for (global = 0; global < 2; global++)
			for (vc = 0; vc < 2; vc++)
				for (k = 0; k < 4; k++) {
					size_t paylen, hl, n;
					int rc;

					if (!(oi->flags & IBA_OP_PAYLOAD) && k)
						break;
					/* Large payloads on SEND_ONLY: 256, 4096, and the
					 * largest packet PktLen allows (8188 bytes). */
					if (k == 3 && (op & IBA_OPC_MASK) != IBA_OPC_SEND_ONLY)
						break;
					paylen = k == 0 ? 0 : k == 1 ? 1 + rnd(&r, 7) :
						 k == 2 ? 8 + rnd(&r, 120) :
						 (op >> 5) % 3 == 0 ? 256 : (op >> 5) % 3 == 1 ? 4096 :
						 (size_t)(8188 - IBA_ICRC_BYTES - IBA_LRH_BYTES -
							  IBA_BTH_BYTES - (global ? IBA_GRH_BYTES : 0) -
							  oi->eth_len);
					if ((oi->flags & IBA_OP_ATOMIC_WRITE) && k)
						paylen = 8;
					memset(&p, 0, sizeof(p));
					for (i = 0; i < n_fields; i++)
						member_set(&p, &fields[i],
							   field_value(&r, fields[i].mask));
					for (i = 0; i < 16; i++) {
						p.grh.sgid[i] = (uint8_t)next64(&r);
						p.grh.dgid[i] = (uint8_t)next64(&r);
					}
					p.lrh.lnh = global ? IBA_LNH_GLOBAL : IBA_LNH_LOCAL;
					p.grh.ipver = IBA_GRH_IPVER;
					p.grh.nxthdr = IBA_GRH_NXTHDR_IBA;
					p.bth.tver = 0;
					p.bth.opcode = (uint8_t)op;
					hl = iba_build_headers(buf, &p);
					for (i = 0; i < paylen; i++)
						buf[hl + i] = (uint8_t)next64(&r);
					n = iba_finish(buf, hl, paylen, vc ? IBA_HAS_VCRC : 0);
					rc = iba_decode(buf, n, IBA_CHECK_ICRC |
							(vc ? IBA_CHECK_VCRC : 0), &q);
					if (rc != IBA_OK)
						die("seed %s (LNH %u, VCRC %u, %zu payload bytes) built "
						    "by iba_build_headers/iba_finish does not decode: %s",
						    oi->name, p.lrh.lnh, vc, paylen, iba_strerror(rc));
					snprintf(name, sizeof(name), "%s-%s%s-%zu", oi->name,
						 global ? "grh" : "lrh", vc ? "-vcrc" : "", paylen);
					add_seed(buf, n, name);
				}
	}
}

/* Header `hid` of the (possibly mangled) packet b: offset, or -1. */
static long hdr_at(const uint8_t *b, size_t len, unsigned hid)
{
	long bth;
	unsigned off;

	if (len < IBA_LRH_BYTES)
		return -1;
	bth = IBA_LRH_BYTES + ((b[1] & 3) == IBA_LNH_GLOBAL ? IBA_GRH_BYTES : 0);
	switch (hid) {
	case IBA_HID_LRH:
		return 0;
	case IBA_HID_GRH:
		return bth > IBA_LRH_BYTES ? IBA_LRH_BYTES : -1;
	case IBA_HID_BTH:
		return bth;
	default:
		if ((size_t)bth >= len)
			return -1;
		off = iba_eth_offset(b[bth], 1u << (hid - IBA_HID_RDETH));
		return off == IBA_ETH_NONE ? -1 : bth + IBA_BTH_BYTES + (long)off;
	}
}

/* Overwrite one header field where the packet's own LNH/opcode put it. */
static size_t target_mutate(struct rng *r, uint8_t *b, size_t len, size_t cap)
{
	const struct iba_field *f = &fields[rnd(r, n_fields)];
	long off = hdr_at(b, len, f->hid);
	uint64_t v;

	if (off < 0 || (size_t)off + f->off + f->bytes > len)
		return len;
	if (!strcmp(f->name, "bth.opcode") && chance(r, 2)) {
		do
			v = rnd(r, 256);
		while (!iba_opcode_info((uint8_t)v)->name && !chance(r, 8));
	} else if (!strcmp(f->name, "lrh.pktlen") && chance(r, 2)) {
		v = len / 4 + rnd(r, 3) - 1;
	} else if (!strcmp(f->name, "grh.paylen") && chance(r, 2)) {
		v = len - 48 + rnd(r, 9) - 4;
	} else {
		v = field_value(r, f->mask);
	}
	iba_field_put(f, b + off, v);
	(void)cap;
	return len;
}

/* Make the lengths agree again (PktLen, GRH PayLen; the buffer a multiple
 * of 4 plus maybe a VCRC) and recompute the CRCs, mostly. */
static size_t target_fixup(struct rng *r, uint8_t *b, size_t len, size_t cap)
{
	static const struct iba_field *pktlen, *paylen;
	size_t vc, body;

	if (!pktlen) {
		pktlen = field_named("lrh.pktlen");
		paylen = field_named("grh.paylen");
	}
	if (len < IBA_LRH_BYTES + 4)
		return len;
	vc = (len & 3) == 2 ? 2 : (len & 3) == 0 ? 0 : 2 * rnd(r, 2);
	body = (len - vc) & ~(size_t)3;
	if (body > 2047 * 4)
		body = 2047 * 4;
	len = body + vc;
	if (len > cap)
		return cap;
	iba_field_put(pktlen, b, body / 4);
	if ((b[1] & 3) == IBA_LNH_GLOBAL && body >= IBA_LRH_BYTES + IBA_GRH_BYTES)
		iba_field_put(paylen, b + IBA_LRH_BYTES, body - IBA_LRH_BYTES - IBA_GRH_BYTES);
	if (!chance(r, 8))
		store_le32(b + body - 4, iba_icrc(b, body - 4));
	if (vc && !chance(r, 8)) {
		uint16_t v = iba_vcrc(b, body);

		b[body] = (uint8_t)v;
		b[body + 1] = (uint8_t)(v >> 8);
	}
	return len;
}

/* Random bytes; half the time with a plausible LRH/BTH and fixed lengths. */
static size_t target_random(struct rng *r, uint8_t *b, size_t cap)
{
	size_t len = rnd(r, chance(r, 4) ? 1024 : 160), i;

	if (len > cap)
		len = cap;
	for (i = 0; i < len; i++)
		b[i] = (uint8_t)next64(r);
	if (chance(r, 2) && len >= 64) {
		b[1] = (uint8_t)((b[1] & ~3) | (chance(r, 2) ? IBA_LNH_GLOBAL : IBA_LNH_LOCAL));
		if ((b[1] & 3) == IBA_LNH_GLOBAL) {
			b[8] = (uint8_t)(IBA_GRH_IPVER << 4 | (b[8] & 0x0F));
			b[14] = IBA_GRH_NXTHDR_IBA;
		}
		i = (b[1] & 3) == IBA_LNH_GLOBAL ? 48 : 8;
		b[i + 1] &= 0xF0;	/* TVer 0 */
		len = target_fixup(r, b, len, cap);
	}
	return len;
}

static void write_dict(FILE *out)
{
	fprintf(out, "# no dictionary for " TARGET ": its seeds are valid packets\n");
}

/* ============================================================================ */
#elif defined(FUZZ_TARGET_TOPOLOGY)
/* ---- topology text: seeds, tokens, line edits, generated fabrics ------------- */

static const char *const tokens[] = {
	"Switch", "Ca", "Hca", "Rt", "vendid=", "devid=", "sysimgguid=", "switchguid=",
	"caguid=", "rtguid=", "0x", "[", "]", "(", ")", "\"", "#", "# \"", "\n", "\r\n",
	"\n\n", " ", "\t", "[ext 1]", "[ext ", "S-", "H-", "0", "1", "2", "8", "36", "254",
	"255", "256", "4096", "65535", "0xffffff", "0x1000000", "0xffff", "0x10000",
	"0xffffffffffffffff", "0x10000000000000000", "00000000000000001",
	"18446744073709551615", "18446744073709551616", "Chassis ", "Hostname:",
	"Non-Chassis Nodes", "@", "+", "=", "include", "lid", "\x7f", "\x01", "\xff",
	"\"S-5eed000000000100\"", "\"H-5eed000000000010\"", "[1]", "[2]", "[254]",
	"[255]", "(5eed000000000011)", "(0)", "( 0x1 )",
};

static const char *const hand_seeds[] = {
	/* every directive, [ext N], Hca, CRLF, trailing blanks, -g lines */
	"vendid=0x2c9\ndevid=4115\nsysimgguid=0x100\nswitchguid=0x10(0x11)\n"
	"Switch\t2 \"sw\"\t# \"the switch\" enhanced port 0 lid 1 lmc 0\n"
	"[1][ext 3]\t\"H-20\"[1][ext 1](21)   # ignored\n"
	"[2]  \"H-20\"[2] \r\n"
	"\n"
	"Chassis 1 (guid)\nHostname: node\nNon-Chassis Nodes\n"
	"caguid=0x20\n"
	"Hca 2 \"H-20\"\t\t# \"node HCA\"\n"
	"[1](21) \"sw\"[1](11)\n"
	"[2](0x22)\t\"sw\"[2]\t\t# lid 2 lmc 0\n",
	/* ibsim style names, derived GUIDs, one-sided links */
	"Switch 4 \"Switch1\"\n[1] \"Hca1\"[1]\n[2] \"Hca2\"[1]\n[4] \"Switch2\"[4]\n\n"
	"Switch 4 \"Switch2\"\n[3] \"Hca3\"[2]\n\n"
	"Hca 1 \"Hca1\"\n[1] \"Switch1\"[1]\n\nCa 1 \"Hca2\"\n\nCa 2 \"Hca3\"\n",
	/* CA to CA, port GUID equal to the node GUID, no final newline */
	"caguid=0x1000\nCa 1 \"H-1000\"\n[1](1000) \"H-2000\"[1]\n"
	"caguid=0x2000\nCa 1 \"H-2000\"\n[1](2000) \"H-1000\"[1](1000)",
	/* the smallest */
	"Ca 1 \"x\"\n",
};

static void add_written(const char *text, const char *name)
{
	struct sib_fabric f = { 0 };
	char err[256], *out = NULL;
	size_t len = 0;
	FILE *fp;

	if (sib_fabric_parse(&f, text, name, err, sizeof(err)))
		return;
	sib_fabric_assign_lids(&f);
	fp = open_memstream(&out, &len);
	if (fp && !sib_fabric_write(&f, fp) && !fclose(fp)) {
		char nm[80];

		snprintf(nm, sizeof(nm), "written-%.48s", name);
		add_seed(out, len, nm);
	} else if (fp) {
		fclose(fp);
	}
	free(out);
	sib_fabric_free(&f);
}

/* The *.topo files of tests/data, the default topology, hand-written ones, and each of
 * them as sib_fabric_write() prints it. */
static void make_seeds(void)
{
	size_t i, first;
	char name[64];
	DIR *d = opendir(SIB_FUZZ_DATA_DIR);
	struct dirent *e;
	struct sib_fabric f = { 0 };
	char err[256];
	unsigned parsed = 0;

	if (!d)
		die("%s: %s", SIB_FUZZ_DATA_DIR, strerror(errno));
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name), len;
		char path[4096];
		uint8_t *text;

		if (l < 6 || strcmp(e->d_name + l - 5, ".topo"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", SIB_FUZZ_DATA_DIR, e->d_name);
		text = read_file(path, &len);
		if (!text)
			die("%s: %s", path, strerror(errno));
		add_seed(text, len, e->d_name);
		free(text);
	}
	closedir(d);
	/* readdir order is the file system's: sort for a deterministic run. */
	for (i = 1; i < n_seeds; i++) {
		size_t j;

		for (j = i; j > 0 && strcmp(seeds[j - 1].name, seeds[j].name) > 0; j--) {
			struct blob t = seeds[j];

			seeds[j] = seeds[j - 1];
			seeds[j - 1] = t;
		}
	}
	add_seed(sib_fabric_default_topology(), strlen(sib_fabric_default_topology()),
		 "default");
	for (i = 0; i < sizeof(hand_seeds) / sizeof(hand_seeds[0]); i++) {
		snprintf(name, sizeof(name), "hand-%zu", i);
		add_seed(hand_seeds[i], strlen(hand_seeds[i]), name);
	}
	first = n_seeds;
	for (i = 0; i < first; i++) {
		char *t = malloc(seeds[i].len + 1);

		if (!t)
			die("out of memory");
		memcpy(t, seeds[i].data, seeds[i].len);
		t[seeds[i].len] = 0;
		if (!sib_fabric_parse(&f, t, seeds[i].name, err, sizeof(err))) {
			parsed++;
			sib_fabric_free(&f);
		} else {
			fprintf(stderr, TARGET ": note: seed %s does not parse: %s\n",
				seeds[i].name, err);
		}
		add_written(t, seeds[i].name);
		free(t);
	}
	if (!parsed)
		die("none of the seed topologies parses");
}

static size_t put_text(uint8_t *b, size_t len, size_t cap, const char *s)
{
	size_t n = strlen(s);

	if (n > cap - len)
		n = cap - len;
	memcpy(b + len, s, n);
	return len + n;
}

/* [start, end) of the line containing pos (end includes the '\n'). */
static void line_at(const uint8_t *b, size_t len, size_t pos, size_t *start, size_t *end)
{
	size_t s = pos, e = pos;

	while (s > 0 && b[s - 1] != '\n')
		s--;
	while (e < len && b[e] != '\n')
		e++;
	if (e < len)
		e++;
	*start = s;
	*end = e;
}

/* Insert n bytes from src at pos (src must not point into b). */
static size_t insert_bytes(uint8_t *b, size_t len, size_t cap, size_t pos,
			   const uint8_t *src, size_t n)
{
	if (n > cap - len)
		n = cap - len;
	memmove(b + pos + n, b + pos, len - pos);
	memcpy(b + pos, src, n);
	return len + n;
}

/* Sets the quoted string after pos to a boundary length (ids 79, descs 64). */
static size_t mut_quoted_boundary(struct rng *r, uint8_t *b, size_t len, size_t cap, size_t pos)
{
	uint8_t tmp[SIB_FAB_MAX_LINE + 16];
	size_t e, n;

	while (pos < len && b[pos] != '"')
		pos++;
	for (e = pos + 1; e < len && b[e] != '"' && b[e] != '\n'; e++)
		;
	if (e >= len || b[e] != '"')
		return len;
	n = chance(r, 2) ? 62 + rnd(r, 5) : 77 + rnd(r, 5);
	if (len - (e - pos - 1) + n > cap)
		return len;
	memset(tmp, chance(r, 2) ? 'x' : '0', n);
	if (chance(r, 2) && n > 3) {	/* "H-000...1": still a GUID id */
		tmp[0] = chance(r, 2) ? 'H' : 'S';
		tmp[1] = '-';
		tmp[n - 1] = '1';
	}
	memmove(b + pos + 1, b + e, len - e);
	len -= e - pos - 1;
	return insert_bytes(b, len, cap, pos + 1, tmp, n);
}

/* Replaces the number at or after pos with another, decimal or hex. */
static size_t mut_replace_number(struct rng *r, uint8_t *b, size_t len, size_t cap, size_t pos)
{
	char num[32];
	uint64_t v;
	size_t s;

	while (pos < len && !(b[pos] >= '0' && b[pos] <= '9'))
		pos++;
	s = pos;
	while (pos < len && ((b[pos] >= '0' && b[pos] <= '9') ||
			     (b[pos] >= 'a' && b[pos] <= 'f')))
		pos++;
	if (s == pos)
		return len;
	memmove(b + s, b + pos, len - pos);
	len -= pos - s;
	/* One random call per statement: argument order is unspecified. */
	v = chance(r, 2) ? (uint64_t)rnd(r, 300) : next64(r);
	if (v >= 300)
		v >>= rnd(r, 64);
	if (chance(r, 2))
		snprintf(num, sizeof(num), "%" PRIu64, v);
	else
		snprintf(num, sizeof(num), "%" PRIx64, v);
	return insert_bytes(b, len, cap, s, (const uint8_t *)num, strlen(num));
}

/* Inserts at pos's line a copy of a line of this input or of another seed. */
static size_t mut_copy_line(struct rng *r, uint8_t *b, size_t len, size_t cap, size_t pos)
{
	uint8_t tmp[SIB_FAB_MAX_LINE + 16];
	size_t s, e, s2, e2, n;

	if (rnd(r, 2) && len) {
		line_at(b, len, rnd(r, len), &s, &e);
		n = e - s;
		if (n > sizeof(tmp))
			return len;
		memcpy(tmp, b + s, n);
	} else {
		const struct blob *o = other_seed(r);

		if (!o->len)
			return len;
		line_at(o->data, o->len, rnd(r, o->len), &s, &e);
		n = e - s;
		if (n > sizeof(tmp))
			return len;
		memcpy(tmp, o->data + s, n);
	}
	line_at(b, len, pos < len ? pos : len, &s2, &e2);
	return insert_bytes(b, len, cap, s2, tmp, n);
}

static size_t target_mutate(struct rng *r, uint8_t *b, size_t len, size_t cap)
{
	const char *tok = tokens[rnd(r, sizeof(tokens) / sizeof(tokens[0]))];
	size_t pos = rnd(r, len + 1), s, e, s2, e2, n;
	uint8_t tmp[SIB_FAB_MAX_LINE + 16];

	switch (rnd(r, 9)) {
	case 8:		/* a quoted string at a boundary length (ids 79, descs 64) */
		return mut_quoted_boundary(r, b, len, cap, pos);
	case 0:		/* insert a token */
		return insert_bytes(b, len, cap, pos, (const uint8_t *)tok, strlen(tok));
	case 1:		/* overwrite with a token */
		n = strlen(tok);
		if (pos + n > len)
			return len;
		memcpy(b + pos, tok, n);
		return len;
	case 2:		/* replace a number with another */
		return mut_replace_number(r, b, len, cap, pos);
	case 3:		/* delete a line */
		if (!len)
			return len;
		line_at(b, len, rnd(r, len), &s, &e);
		memmove(b + s, b + e, len - e);
		return len - (e - s);
	case 4:		/* duplicate a line */
	case 5:		/* copy a line from another seed */
		return mut_copy_line(r, b, len, cap, pos);
	case 6:		/* swap two adjacent lines */
		if (!len)
			return len;
		line_at(b, len, rnd(r, len), &s, &e);
		if (e >= len)
			return len;
		line_at(b, len, e, &s2, &e2);
		if (e2 - s > sizeof(tmp))
			return len;
		memcpy(tmp, b + s2, e2 - s2);
		memcpy(tmp + (e2 - s2), b + s, e - s);
		memcpy(b + s, tmp, e2 - s);
		return len;
	default:	/* a line near the length limit */
		n = SIB_FAB_MAX_LINE - 4 + rnd(r, 9);
		if (len + n + 1 > cap)
			return len;
		memset(tmp, chance(r, 2) ? ' ' : 'a', n);
		tmp[0] = '#';
		tmp[n] = '\n';
		return insert_bytes(b, len, cap, pos, tmp, n + 1);
	}
}

static size_t target_fixup(struct rng *r, uint8_t *b, size_t len, size_t cap)
{
	(void)r;
	(void)b;
	(void)cap;
	return len;
}

/* A generated fabric: node records over a small pool of ids, so that links
 * resolve, collide and dangle; now and then a large one near the limits. */
static size_t target_random(struct rng *r, uint8_t *b, size_t cap)
{
	static const char *const ids[] = { "S-1", "S-2", "H-10", "H-20", "H-30", "a", "b",
					   "S-5eed000000000100", "H-ffffffffffffffff" };
	const size_t n_ids = sizeof(ids) / sizeof(ids[0]);
	char line[256];
	size_t len = 0, nodes, i, k;

	if (chance(r, 64)) {
		/* Many nodes: past SIB_FAB_MAX_TOTAL_PORTS (254-port switches),
		 * or as many small CAs as fit (the node limit, 65536, needs
		 * more than this buffer: test_fabric checks it). */
		unsigned ports = chance(r, 2) ? 1 : 254;

		nodes = ports == 1 ? SIB_FAB_MAX_NODES - 2 + rnd(r, 4)
				   : SIB_FAB_MAX_TOTAL_PORTS / 255 + rnd(r, 4);
		for (i = 0; i < nodes && len + 64 < cap; i++) {
			snprintf(line, sizeof(line), "%s %u \"n%zu\"\n%s\n",
				 ports == 1 ? "Ca" : "Switch", ports, i,
				 i == 1 ? "[1] \"n0\"[1]" : "");
			len = put_text(b, len, cap, line);
		}
		return len;
	}
	if (chance(r, 16)) {
		/* Plain random text. */
		static const char alphabet[] = "SwitchCaH[]()\"#=x0123456789abcdef \t\n\n-";

		len = rnd(r, 512);
		for (i = 0; i < len; i++)
			b[i] = chance(r, 64) ? (uint8_t)next64(r) :
			       (uint8_t)alphabet[rnd(r, sizeof(alphabet) - 1)];
		return len;
	}
	nodes = 1 + rnd(r, 6);
	for (i = 0; i < nodes; i++) {
		bool sw = chance(r, 2);
		unsigned np = chance(r, 4) ? (unsigned)rnd(r, 256) : 1 + (unsigned)rnd(r, 4);
		const char *id = ids[rnd(r, n_ids)];

		if (chance(r, 4)) {
			snprintf(line, sizeof(line), "vendid=0x%x\n", (unsigned)rnd(r, 0x1000000));
			len = put_text(b, len, cap, line);
		}
		/* One random call per statement: argument order is unspecified. */
		if (chance(r, 3)) {
			const char *what = chance(r, 4) ? "sysimgguid" : sw ? "switchguid" : "caguid";
			uint64_t guid = chance(r, 2) ? (uint64_t)(1 + rnd(r, 0x40)) : next64(r);

			snprintf(line, sizeof(line), "%s=0x%" PRIx64 "\n", what, guid);
			len = put_text(b, len, cap, line);
		}
		{
			const char *type = sw ? "Switch" : chance(r, 2) ? "Ca" : "Hca";
			const char *desc = chance(r, 2) ? " # \"desc\"" : "";

			snprintf(line, sizeof(line), "%s %u \"%s\"%s\n", type, np, id, desc);
			len = put_text(b, len, cap, line);
		}
		for (k = rnd(r, 4); k > 0; k--) {
			unsigned p = 1 + (unsigned)rnd(r, np ? np : 1);
			bool own_guid = !sw && chance(r, 2);
			uint64_t guid = 1 + rnd(r, 0x40);
			const char *rid = ids[rnd(r, n_ids)];
			unsigned rp = 1 + (unsigned)rnd(r, 4);
			const char *rguid = chance(r, 4) ? "(11)" : "";

			if (own_guid)
				snprintf(line, sizeof(line), "[%u](%" PRIx64 ") \"%s\"[%u]%s\n", p,
					 guid, rid, rp, rguid);
			else
				snprintf(line, sizeof(line), "[%u] \"%s\"[%u]%s\n", p, rid, rp,
					 rguid);
			len = put_text(b, len, cap, line);
		}
		if (chance(r, 2))
			len = put_text(b, len, cap, "\n");
	}
	return len;
}

static void write_dict(FILE *out)
{
	size_t i;
	const char *c;

	for (i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
		fputc('"', out);
		for (c = tokens[i]; *c; c++) {
			unsigned char u = (unsigned char)*c;

			if (u < 0x20 || u >= 0x7f || u == '"' || u == '\\')
				fprintf(out, "\\x%02X", u);
			else
				fputc(u, out);
		}
		fputs("\"\n", out);
	}
}
#endif

/* ---- main ------------------------------------------------------------------------ */

/* The harnesses copy the input into an exact-size buffer themselves. */
static int run_one(const uint8_t *data, size_t len)
{
	int rc;

	cur_data = data;
	cur_len = len;
	rc = LLVMFuzzerTestOneInput(data, len);
	cur_data = NULL;
	return rc;
}

static void replay_path(const char *path, unsigned long *count)
{
	struct stat st;
	uint8_t *data;
	size_t len;

	if (stat(path, &st))
		die("%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *e;
		char sub[4096];

		if (!d)
			die("%s: %s", path, strerror(errno));
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			replay_path(sub, count);
		}
		closedir(d);
		return;
	}
	data = read_file(path, &len);
	if (!data)
		die("%s: %s", path, strerror(errno));
	fprintf(stderr, TARGET ": replaying %s (%zu bytes)\n", path, len);
	cur_generated = false;
	run_one(data, len);
	free(data);
	(*count)++;
}

static void write_seeds(const char *dir)
{
	char path[4096];
	size_t i;

	if (mkdir(dir, 0755) && errno != EEXIST)
		die("%s: %s", dir, strerror(errno));
	for (i = 0; i < n_seeds; i++) {
		FILE *fp;

		snprintf(path, sizeof(path), "%s/seed-%04zu-%s", dir, i, seeds[i].name);
		fp = fopen(path, "wb");
		if (!fp || fwrite(seeds[i].data, 1, seeds[i].len, fp) != seeds[i].len ||
		    fclose(fp))
			die("%s: %s", path, strerror(errno));
	}
	fprintf(stderr, TARGET ": %zu seeds written to %s\n", n_seeds, dir);
}

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		die("bad %s \"%s\"", what, s);
	return v;
}

static bool is_number(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: " TARGET " [N] [--seed S]      run N generated inputs (default %d)\n"
		"       " TARGET " FILE|DIR...         replay inputs\n"
		"       " TARGET " --dump I FILE       write generated input I to FILE\n"
		"       " TARGET " --write-seeds DIR   write the seed inputs\n"
		"       " TARGET " --write-dict FILE   write a libFuzzer dictionary\n",
		DEFAULT_RUNS);
	exit(2);
}

/* The command line of the driver. */
struct driver_args {
	uint64_t runs, seed, dump_index;
	const char *dump_path, *seeds_dir, *dict_path;
	const char **paths;	/* inputs to replay, n_paths of them */
	size_t n_paths;
};

/* Parses argv into a (paths allocated); exits through usage() on a bad one. */
static void parse_args(int argc, char **argv, struct driver_args *a)
{
	int i;

	a->paths = calloc((size_t)argc, sizeof(*a->paths));
	if (!a->paths)
		die("out of memory");
	for (i = 1; i < argc; i++) {
		const char *s = argv[i];

		if (!strcmp(s, "--seed") || !strcmp(s, "-s")) {
			if (++i == argc)
				usage();
			a->seed = parse_u64(argv[i], "seed");
		} else if (!strcmp(s, "--dump")) {
			if (i + 2 >= argc)
				usage();
			a->dump_index = parse_u64(argv[++i], "input index");
			a->dump_path = argv[++i];
		} else if (!strcmp(s, "--write-seeds")) {
			if (++i == argc)
				usage();
			a->seeds_dir = argv[i];
		} else if (!strcmp(s, "--write-dict")) {
			if (++i == argc)
				usage();
			a->dict_path = argv[i];
		} else if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
			usage();
		} else if (is_number(s)) {
			a->runs = parse_u64(s, "count");
		} else if (s[0] == '-' && s[1]) {
			usage();
		} else {
			a->paths[a->n_paths++] = s;
		}
	}
}

/* Writes the libFuzzer dictionary to path. */
static void write_dict_file(const char *path)
{
	FILE *fp = fopen(path, "w");

	if (!fp)
		die("%s: %s", path, strerror(errno));
	write_dict(fp);
	if (fclose(fp))
		die("%s: %s", path, strerror(errno));
}

/* Writes generated input `index` of `seed` to path. */
static void dump_input(uint64_t seed, uint64_t index, const char *path, uint8_t *buf)
{
	size_t len = generate(seed, index, buf);
	FILE *fp = fopen(path, "wb");

	if (!fp || fwrite(buf, 1, len, fp) != len || fclose(fp))
		die("%s: %s", path, strerror(errno));
	fprintf(stderr, TARGET ": input %" PRIu64 " of seed %" PRIu64
		" (%zu bytes) written to %s\n", index, seed, len, path);
}

/* Runs `runs` generated inputs of `seed` through the target and prints the summary. */
static void run_generated(uint64_t seed, uint64_t runs, uint8_t *buf)
{
	struct timespec t0, t1;
	uint64_t i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	cur_seed = seed;
	cur_generated = true;
	for (i = 0; i < runs; i++) {
		size_t len = generate(seed, i, buf);

		cur_index = i;
		run_one(buf, len);
		if (runs >= 1000000 && i && i % 1000000 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			fprintf(stderr, TARGET ": %" PRIu64 " inputs, %.1f s\n", i,
				(double)(t1.tv_sec - t0.tv_sec) +
				(double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf(TARGET ": %" PRIu64 " inputs (seed %" PRIu64 ", %zu seed inputs) in %.2f s, "
	       "no invariant violated\n", runs, seed, n_seeds,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	fuzz_print_stats(stdout);
}

int main(int argc, char **argv)
{
	struct driver_args a = { .runs = DEFAULT_RUNS, .seed = DEFAULT_SEED };
	unsigned long replayed = 0;
	uint8_t *buf;
	size_t i;

	parse_args(argc, argv, &a);
	install_crash_handlers();
	make_seeds();
	if (!n_seeds)
		die("no seed inputs");

	if (a.dict_path)
		write_dict_file(a.dict_path);
	if (a.seeds_dir)
		write_seeds(a.seeds_dir);
	if (a.seeds_dir || a.dict_path) {
		free(a.paths);
		return 0;
	}

	buf = malloc(FUZZ_MAX_INPUT);
	if (!buf)
		die("out of memory");
	if (a.dump_path) {
		dump_input(a.seed, a.dump_index, a.dump_path, buf);
	} else if (a.n_paths) {
		for (i = 0; i < a.n_paths; i++)
			replay_path(a.paths[i], &replayed);
		fprintf(stderr, TARGET ": %lu inputs replayed, no invariant violated\n", replayed);
	} else {
		run_generated(a.seed, a.runs, buf);
	}
	free(buf);
	free(a.paths);
	return 0;
}
