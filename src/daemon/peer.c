// SPDX-License-Identifier: MIT
/*
 * Who is at the other end of a control connection (docs/threat-model.md
 * "Privilege"): softibd plays the kernel, so the privileges it grants are
 * the peer process's own, read by softibd, never what a client says.  The
 * uid and pid come from SO_PEERCRED (fixed at connect), the capabilities
 * from /proc/<pid>/status (CapEff) at the moment of the question, as the
 * kernel's capable() looks at the caller when it asks.
 *
 * A pid can be reused once its process is gone: the process is held by a
 * pidfd (SO_PEERPIDFD on Linux >= 6.5, else pidfd_open of the SO_PEERCRED
 * pid) and the answer counts only if that process is still alive after
 * /proc was read, so the capabilities read were its own.  A peer whose
 * connecting process has exited (its socket inherited or passed on) has
 * none.  Capabilities held in another user namespace than softibd's are
 * not capabilities here (capable() checks the initial namespace; softibd
 * stands for the kernel of its own).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/softibd.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77	/* asm-generic/socket.h, Linux 6.5 */
#endif

/* The process the connection was made by, held: a pidfd, or -1. */
static int peer_pidfd(int fd, pid_t pid)
{
	int pidfd = -1;
	socklen_t len = sizeof(pidfd);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0)
		return pidfd;
#ifdef SYS_pidfd_open
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd >= 0)
		return pidfd;
#endif
	return -1;
}

/* Is the process behind pidfd still running (its pid not reusable)? */
static bool pidfd_alive(int pidfd)
{
#ifdef SYS_pidfd_send_signal
	/* signal 0 checks only; EPERM (a root peer of a user's softibd)
	 * still means it exists */
	return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0 || errno == EPERM;
#else
	(void)pidfd;
	return false;
#endif
}

/* CapEff of pid from /proc, or 0 when it cannot be read. */
static uint64_t read_cap_eff(pid_t pid)
{
	char path[64], line[256];
	unsigned long long caps = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	fclose(f);
	return caps;
}

/* The first bytes of a small /proc file into buf (NUL-terminated), or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (ssize_t)n;
}

/*
 * Does pid live in softibd's user namespace?  Its uid_map (readable by
 * anyone, unlike /proc/<pid>/ns/user, which a process holding capabilities
 * softibd lacks does not let it stat) reads as softibd's own exactly when
 * both share the namespace's mapping; a child namespace maps a range of
 * softibd's uids, and reads differently.
 */
static bool same_user_ns(pid_t pid)
{
	char path[64], a[512], b[512];

	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	if (read_small(path, a, sizeof(a)) < 0 || read_small("/proc/self/uid_map", b, sizeof(b)) < 0)
		return false;
	return strcmp(a, b) == 0;
}

int sibd_peer_cred(int fd, struct sibd_peer_cred *pc)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	uint64_t caps;
	bool ns_ok;
	int pidfd;

	memset(pc, 0, sizeof(*pc));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	pc->uid = cred.uid;
	pc->pid = cred.pid;
	pidfd = peer_pidfd(fd, cred.pid);
	if (pidfd < 0)
		return 0; /* no way to know the capabilities were its own: none */
	caps = read_cap_eff(cred.pid);
	ns_ok = same_user_ns(cred.pid);
	if (pidfd_alive(pidfd) && ns_ok)
		pc->cap_eff = caps;
	close(pidfd);
	return 0;
}

bool sibd_peer_capable(int fd, unsigned int cap)
{
	struct sibd_peer_cred pc;

	if (cap > 63 || sibd_peer_cred(fd, &pc))
		return false;
	return (pc.cap_eff >> cap) & 1;
}
