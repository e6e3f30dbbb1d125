/* SPDX-License-Identifier: MIT */
/*
 * Private to src/link: the wrappers' state (capture.c, fault.c) and how
 * link.c drives them.  Not IBA.  Everything here runs under the owning
 * context's progress lock, except the capture sink, which has its own mutex
 * (several contexts of one process share one file).
 */
#ifndef SIB_LINK_WRAP_H
#define SIB_LINK_WRAP_H

#include <stdio.h>
#include <time.h>

#include "link/link.h"

/* ---- capture (capture.c) ---- */

struct sib_capture;

/* Capture selection: which device and port of this process. */
struct sib_capture_sel {
	char dev[SIB_DEV_NAME_MAX];    /* "" = every device */
	uint8_t port;                  /* 0 = every port */
};

/*
 * The process's capture file named by $SOFTIB_CAPTURE ("%p" becomes the
 * PID), opened on first use and shared by every link of the process
 * (reference counted).  *sel gets $SOFTIB_CAPTURE_DEV / _PORT.  Returns
 * NULL with *err = 0 if the variable is unset, or with a positive errno
 * (reported on stderr) if the file cannot be written.
 */
struct sib_capture *sib_capture_from_env(struct sib_capture_sel *sel, int *err);
void sib_capture_put(struct sib_capture *c);
/* Write one packet (LRH..ICRC, then 2 VCRC bytes) as an ERF type 21
 * record, with the ICRC and the VCRC computed into the record unless the
 * slot flags say they are (SIB_SLOT_F_ICRC, SIB_SLOT_F_VCRC): a capture
 * shows the packet as a wire would carry it.  False if it could not be
 * written. */
bool sib_capture_packet(struct sib_capture *c, const uint8_t *pkt, uint32_t len, uint32_t flags);
/* Push buffered records to the file (a system call: not per packet). */
void sib_capture_flush(struct sib_capture *c);

/* ---- faults (fault.c) ---- */

struct sib_faults_cfg {
	uint64_t seed;
	double loss, dup, reorder, corrupt; /* probabilities per packet, 0..1 */
	uint32_t delay_us;                 /* every packet, microseconds */
	bool down;                         /* drop everything */
	char dev[SIB_DEV_NAME_MAX];        /* "" = every device */
	uint8_t port;                      /* 0 = every port */
};

/* Parse "key=value,..." (docs/link.md).  0 or EINVAL (the bad key in *bad). */
int sib_faults_parse(const char *spec, struct sib_faults_cfg *cfg, const char **bad);

struct sib_faults;
/* NULL with ENOMEM in errno. */
struct sib_faults *sib_faults_new(const struct sib_faults_cfg *cfg, uint64_t salt);
void sib_faults_free(struct sib_faults *f);
/* Nothing queued or held back. */
bool sib_faults_idle(const struct sib_faults *f);
/* Move what `from` queues and holds back to the end of `to`'s queue (due
 * times kept), as far as it has room: replacing faults loses no packet. */
void sib_faults_adopt(struct sib_faults *to, struct sib_faults *from);
/* The staging buffer a faulted packet is built in. */
uint8_t *sib_faults_stage(struct sib_faults *f);
/* Room for one more packet (and its duplicate)?  False: flow control;
 * the refusal is remembered, and the first sib_faults_flush that finds
 * room again returns `now` so that the refused sender tries at once. */
bool sib_faults_room(struct sib_faults *f);
/* Decide the packet's fate and queue its copies; sends what is due. */
void sib_faults_send(struct sib_link *l, struct sib_faults *f, void *dest, uint32_t len, uint32_t flags,
		     uint8_t port, uint64_t now);
/* Send what is due; a destination with a full inbox holds back only its
 * own packets.  Returns the next time it needs a call (0: none): the
 * earliest due time, 50 us on while a destination is full, or `now` if a
 * refused reserve (sib_faults_room) would find room now. */
uint64_t sib_faults_flush(struct sib_link *l, struct sib_faults *f, uint64_t now, bool all);

/* ---- the wrapper ---- */

struct sib_link_wrap {
	/* from the environment ($SOFTIB_CAPTURE, $SOFTIB_FAULTS) */
	struct sib_capture *cap;       /* NULL: no capture file */
	struct sib_capture_sel cap_sel;
	bool cap_dev;                  /* this device is selected */
	bool cap_dirty;
	bool env_faults;               /* faults[] came from $SOFTIB_FAULTS */
	struct sib_faults_cfg env_cfg;
	/* per port (index port - 1) */
	struct sib_faults *faults[SIB_MAX_PORTS]; /* NULL: none on that port */
	bool pushed[SIB_MAX_PORTS];                /* faults[p] came from softibd */
	bool draining[SIB_MAX_PORTS];              /* faults[p] has no faults, only held
						    * packets to send (then it goes) */
	/* pushed by softibd through the fabric map (sib_shm_link_port) */
	void *cap_base[SIB_MAX_PORTS];             /* its mapping, NULL if unmapped */
	struct sib_ring cap_ring[SIB_MAX_PORTS];
};

/* Open a capture file (libpcap, ERF records); NULL with *err set. */
struct sib_capture *sib_capture_open(const char *path, int *err);
/* Like sib_capture_packet, with the capture time given (CLOCK_REALTIME). */
bool sib_capture_packet_at(struct sib_capture *c, const uint8_t *pkt, uint32_t len, uint32_t flags,
			   const struct timespec *ts);

/* Put one packet on the base link now: reserve, copy, capture, publish,
 * wake.  -EAGAIN if the destination is full (nothing sent). (link.c) */
int sib_link_put(struct sib_link *l, void *dest, const uint8_t *pkt, uint32_t len, uint32_t flags,
		 uint8_t port);
/* Capture a packet crossing `port` (0: unknown) if selected. (link.c) */
void sib_link_capture(struct sib_link *l, const uint8_t *pkt, uint32_t len, uint32_t flags, uint8_t port);

uint64_t sib_link_now_ns(void);

/*
 * A packet leaves memory (a capture copy, the fault wrapper's staged
 * packet): len bytes, LRH..ICRC then the 2 VCRC bytes, with the slot flags
 * it was sent with.  Computes the ICRC into it unless SIB_SLOT_F_ICRC says
 * it is (IBA 7.8.1), then the VCRC again if it is flagged as computed (it
 * covers the ICRC).  Returns the flags with SIB_SLOT_F_ICRC set.  Bounded
 * by len; any bytes (they may be a hostile peer's). (link.c)
 */
uint32_t sib_link_fill_icrc(uint8_t *pkt, uint32_t len, uint32_t flags);

#endif
