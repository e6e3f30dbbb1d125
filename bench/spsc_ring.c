/* SPDX-License-Identifier: MIT */
/*
 * The shared-memory ring floors (issue 8, ../shared/research/limits.md):
 * two processes (fork), one producer and one consumer, over one
 * single-producer single-consumer ring in a MAP_SHARED mapping, pinned to
 * two CPUs when the process may use two (as limits.md measured; -u: not).
 *  - `msgs`: 8-byte messages (a sequence number the consumer checks) through
 *    a ring of 4096 slots; each side publishes its index every BATCH
 *    messages (-b, default 1: unbatched).  Prints M msg/s.
 *  - `flags`: the same messages in 16-byte slots whose turn word says
 *    whose the slot is (softib's inbox protocol): no shared index at all.
 *  - `copy`: MSG-byte messages (-m, default 64 KiB) through a RING-byte
 *    ring (-r, default 2 MiB): a memcpy in from the producer's buffer and
 *    a memcpy out to the consumer's, the floor of any two-copy transport.
 *    Prints GB/s (10^9 message bytes per second).
 * The consumer runs for SECONDS (-t, default 1) and counts.  Not softib
 * code: a probe of the machine, built by bench/CMakeLists.txt, printed by
 * bench/floors.sh.  Lock-free: each index has one writer.
 * Usage: spsc_ring [-b BATCH] [-m MSG] [-r RING] [-t SECONDS] [-u] [msgs|flags|copy]
 */
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CACHELINE 64
#define MSG_SLOTS 4096u /* 8-byte slots in `msgs` mode: 32 KiB, L1-resident */

struct shared {
	_Alignas(CACHELINE) _Atomic uint64_t tail; /* producer's published index */
	_Alignas(CACHELINE) _Atomic uint64_t head; /* consumer's published index */
	_Alignas(CACHELINE) _Atomic int stop;      /* consumer: time is up */
	_Atomic int ready;                         /* producer: pinned and waiting */
	_Alignas(CACHELINE) unsigned char data[];  /* the ring */
};

struct opts {
	int copy, flags;
	uint64_t batch;
	size_t msg, ring;
	double secs;
	int pin;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause(); /* spin-wait hint: the loop runs at the line's pace */
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* How many CPUs the process may run on (0: unknown). */
static int cpus_allowed(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) ? 0 : CPU_COUNT(&set);
}

/* Pin the caller to the nth CPU it may run on (n = 0, 1). */
static void pin(int n)
{
	cpu_set_t set, one;
	int seen = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set) || seen++ != n)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		sched_setaffinity(0, sizeof(one), &one);
		return;
	}
}

/* ---- msgs: 8-byte messages, indices published every `batch` ---- */

static void msgs_producer(struct shared *sh, uint64_t batch)
{
	uint64_t *slot = (uint64_t *)sh->data;
	uint64_t tail = 0, head = 0;

	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		for (uint64_t i = 0; i < batch; i++) {
			while (tail - head == MSG_SLOTS) {
				head = atomic_load_explicit(&sh->head, memory_order_acquire);
				if (tail - head == MSG_SLOTS) {
					if (atomic_load_explicit(&sh->stop, memory_order_relaxed))
						return;
					cpu_relax();
				}
			}
			slot[tail % MSG_SLOTS] = tail;
			tail++;
		}
		atomic_store_explicit(&sh->tail, tail, memory_order_release);
	}
}

/* Returns messages consumed in `secs`, or UINT64_MAX on a wrong message. */
static uint64_t msgs_consumer(struct shared *sh, uint64_t batch, double secs, double *elapsed)
{
	const uint64_t *slot = (const uint64_t *)sh->data;
	uint64_t head = 0, tail = 0;
	double start = now(), t = start;

	for (;;) {
		for (uint64_t i = 0; i < batch; i++) {
			while (head == tail) {
				tail = atomic_load_explicit(&sh->tail, memory_order_acquire);
				if (head == tail)
					cpu_relax();
			}
			if (slot[head % MSG_SLOTS] != head)
				return UINT64_MAX;
			head++;
		}
		atomic_store_explicit(&sh->head, head, memory_order_release);
		if (head % 65536 < batch && (t = now()) - start >= secs)
			break;
	}
	*elapsed = t - start;
	return head;
}

/* ---- flags: 8-byte messages in 16-byte slots that carry their own turn ---- */

struct flag_slot {
	_Atomic uint64_t turn; /* 2*lap: free for the producer; 2*lap+1: full */
	uint64_t msg;
};

/* As softib's inbox: no shared index, each slot says whose it is (limits.md's
 * "slot-flag ring"); a line moves once per 4 messages. */
static void flags_producer(struct shared *sh)
{
	struct flag_slot *slot = (struct flag_slot *)sh->data;

	for (uint64_t tail = 0;; tail++) {
		struct flag_slot *s = &slot[tail % MSG_SLOTS];
		uint64_t lap = tail / MSG_SLOTS;

		while (atomic_load_explicit(&s->turn, memory_order_acquire) != 2 * lap) {
			if (atomic_load_explicit(&sh->stop, memory_order_relaxed))
				return;
			cpu_relax();
		}
		s->msg = tail;
		atomic_store_explicit(&s->turn, 2 * lap + 1, memory_order_release);
	}
}

static uint64_t flags_consumer(struct shared *sh, double secs, double *elapsed)
{
	struct flag_slot *slot = (struct flag_slot *)sh->data;
	uint64_t head = 0;
	double start = now(), t = start;

	for (;;) {
		struct flag_slot *s = &slot[head % MSG_SLOTS];
		uint64_t lap = head / MSG_SLOTS;

		while (atomic_load_explicit(&s->turn, memory_order_acquire) != 2 * lap + 1)
			cpu_relax();
		if (s->msg != head)
			return UINT64_MAX;
		atomic_store_explicit(&s->turn, 2 * lap + 2, memory_order_release);
		if (++head % 65536 == 0 && (t = now()) - start >= secs)
			break;
	}
	*elapsed = t - start;
	return head;
}

/* ---- copy: MSG-byte messages through a RING-byte ring, memcpy in and out ---- */

static void copy_producer(struct shared *sh, size_t msg, uint64_t nslots)
{
	unsigned char *src = aligned_alloc(4096, msg);
	uint64_t tail = 0, head = 0;

	if (!src)
		return;
	memset(src, 0x5a, msg);
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		while (tail - head == nslots) {
			head = atomic_load_explicit(&sh->head, memory_order_acquire);
			if (tail - head == nslots) {
				if (atomic_load_explicit(&sh->stop, memory_order_relaxed))
					goto out;
				cpu_relax();
			}
		}
		memcpy(src, &tail, sizeof(tail)); /* the consumer checks it */
		memcpy(sh->data + (tail % nslots) * msg, src, msg);
		atomic_store_explicit(&sh->tail, ++tail, memory_order_release);
	}
out:
	free(src);
}

static uint64_t copy_consumer(struct shared *sh, size_t msg, uint64_t nslots, double secs,
			      double *elapsed)
{
	unsigned char *dst = aligned_alloc(4096, msg);
	uint64_t head = 0, tail = 0, seq;
	double start = now(), t = start;

	if (!dst)
		return UINT64_MAX;
	memset(dst, 0, msg);
	for (;;) {
		while (head == tail) {
			tail = atomic_load_explicit(&sh->tail, memory_order_acquire);
			if (head == tail)
				cpu_relax();
		}
		memcpy(dst, sh->data + (head % nslots) * msg, msg);
		__asm__ volatile("" : : "r"(dst) : "memory"); /* the copy is used */
		memcpy(&seq, dst, sizeof(seq));
		if (seq != head) {
			head = UINT64_MAX;
			break;
		}
		atomic_store_explicit(&sh->head, ++head, memory_order_release);
		if (head % 16 == 0 && (t = now()) - start >= secs)
			break;
	}
	free(dst);
	*elapsed = t - start;
	return head;
}

static int usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-b BATCH] [-m MSG_BYTES] [-r RING_BYTES] [-t SECONDS] [-u] [msgs|flags|copy]\n"
		"  msgs (default): 8-byte messages between two processes, M msg/s;\n"
		"                  -b: publish indices every BATCH messages (1..4096, default 1)\n"
		"  flags: 8-byte messages in slots that carry their own turn (no shared index), M msg/s\n"
		"  copy: MSG_BYTES messages (default 65536) through a RING_BYTES shared ring\n"
		"        (default 2097152), memcpy in and memcpy out, GB/s\n"
		"  -t: seconds to measure (default 1); -u: do not pin the two processes\n",
		argv0);
	return 2;
}

int main(int argc, char **argv)
{
	struct opts o = { .batch = 1, .msg = 65536, .ring = 2u << 20, .secs = 1.0, .pin = 1 };
	struct shared *sh;
	size_t bytes;
	uint64_t nslots = 0, count;
	double elapsed = 0;
	int c, pinned, status;
	pid_t child;

	while ((c = getopt(argc, argv, "b:m:r:t:uh")) != -1) {
		switch (c) {
		case 'b': o.batch = strtoull(optarg, NULL, 0); break;
		case 'm': o.msg = strtoull(optarg, NULL, 0); break;
		case 'r': o.ring = strtoull(optarg, NULL, 0); break;
		case 't': o.secs = atof(optarg); break;
		case 'u': o.pin = 0; break;
		default: return usage(argv[0]);
		}
	}
	if (optind < argc) {
		if (!strcmp(argv[optind], "copy"))
			o.copy = 1;
		else if (!strcmp(argv[optind], "flags"))
			o.flags = 1;
		else if (strcmp(argv[optind], "msgs"))
			return usage(argv[0]);
	}
	if (o.batch < 1 || o.batch > MSG_SLOTS || o.secs <= 0 || o.msg < 8 || o.msg % 8 ||
	    o.ring < o.msg)
		return usage(argv[0]);
	if (o.copy)
		nslots = o.ring / o.msg;
	bytes = sizeof(*sh) + (o.copy    ? nslots * o.msg
			       : o.flags ? MSG_SLOTS * sizeof(struct flag_slot)
					 : MSG_SLOTS * sizeof(uint64_t));
	sh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(sh->data, 0, bytes - sizeof(*sh)); /* fault the ring in before timing */
	pinned = o.pin && cpus_allowed() >= 2;
	child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0) { /* the producer */
		if (pinned)
			pin(1);
		atomic_store(&sh->ready, 1);
		if (o.copy)
			copy_producer(sh, o.msg, nslots);
		else if (o.flags)
			flags_producer(sh);
		else
			msgs_producer(sh, o.batch);
		_exit(0);
	}
	if (pinned)
		pin(0);
	while (!atomic_load(&sh->ready))
		sched_yield();
	if (o.copy)
		count = copy_consumer(sh, o.msg, nslots, o.secs, &elapsed);
	else if (o.flags)
		count = flags_consumer(sh, o.secs, &elapsed);
	else
		count = msgs_consumer(sh, o.batch, o.secs, &elapsed);
	atomic_store(&sh->stop, 1);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "spsc_ring: the producer failed\n");
		return 1;
	}
	if (count == UINT64_MAX || elapsed <= 0) {
		fprintf(stderr, "spsc_ring: the consumer saw a wrong message\n");
		return 1;
	}
	if (o.copy)
		printf("%.1f GB/s: %zu-byte messages through a %zu-byte shared ring, memcpy in and out, "
		       "two processes%s\n",
		       (double)count * (double)o.msg / elapsed / 1e9, o.msg, (size_t)nslots * o.msg,
		       pinned ? " (pinned to two CPUs)" : " (not pinned)");
	else if (o.flags)
		printf("%.1f M msg/s: 8-byte messages in %u 16-byte slots that carry their own turn, "
		       "two processes%s\n",
		       (double)count / elapsed / 1e6, MSG_SLOTS, pinned ? " (pinned to two CPUs)" : " (not pinned)");
	else
		printf("%.1f M msg/s: 8-byte messages, indices published every %llu, %u-slot ring, "
		       "two processes%s\n",
		       (double)count / elapsed / 1e6, (unsigned long long)o.batch, MSG_SLOTS,
		       pinned ? " (pinned to two CPUs)" : " (not pinned)");
	return 0;
}
