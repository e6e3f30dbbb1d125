/* SPDX-License-Identifier: MIT */
/*
 * Control-socket helpers shared by softibd, the verbs library and the tools:
 * the socket path rules, connect (with autostart of softibd), framed
 * send/recv of struct sib_ctl_msg with SCM_RIGHTS, and the client round trip.
 * Library-safe: no signal handlers, every fd CLOEXEC, no zombies; the only
 * global state is an atomic sequence counter.  Callers serialize per fd.
 */
#ifndef SIB_COMMON_CTL_H
#define SIB_COMMON_CTL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/sib_ctl.h"

/* Bounded wait of sib_ctl_open() for an autostarted daemon. */
#define SIB_CTL_AUTOSTART_MS 5000

/*
 * The control socket path: $SOFTIB_SOCKET if set and non-empty, else
 * $XDG_RUNTIME_DIR/softib.sock, else /tmp/softib-<uid>/softib.sock (uid: the
 * caller's outside its user namespace, from /proc/self/uid_map, so that
 * `unshare -r` finds the user's softibd).
 * Returns 0, or -ENAMETOOLONG if it does not fit buf or a sockaddr_un.
 */
int sib_ctl_default_path(char *buf, size_t len);

/* Connect a SOCK_SEQPACKET|SOCK_CLOEXEC socket to path.  Returns the fd or -errno. */
int sib_ctl_connect(const char *path);

/*
 * Connect to the default socket.  If nothing listens there (-ENOENT or
 * -ECONNREFUSED), allow_autostart is set and $SOFTIB_NO_AUTOSTART is not "1",
 * start `softibd --daemon --autostart --socket <path>` and retry for at most
 * SIB_CTL_AUTOSTART_MS.  softibd is $SOFTIBD, else ../bin/softibd or softibd
 * next to the object holding this code, else softibd from $PATH.
 * Returns the fd or -errno (-ETIMEDOUT, -EIO if softibd failed to start).
 */
int sib_ctl_open(bool allow_autostart);

/* Room for the reason sib_ctl_open_why() gives. */
#define SIB_CTL_WHY_MAX 512

/*
 * sib_ctl_open() that also says, on failure, why in one line without a
 * trailing newline (the path tried, the step that failed, its error), for
 * a caller to print: "no softibd listens on PATH and autostart is off
 * (SOFTIB_NO_AUTOSTART=1)", "could not start softibd (EXE): ...", "softibd
 * (EXE) failed to start for PATH; its message is above or in $SOFTIB_LOG",
 * ...  why may be NULL.  Same return values as sib_ctl_open().
 */
int sib_ctl_open_why(bool allow_autostart, char *why, size_t len);

/* Bytes of msg that carry meaning for its op (header + body; STATUS: + text.len). */
size_t sib_ctl_msg_len(const struct sib_ctl_msg *msg);

/*
 * Send one message of sib_ctl_msg_len(msg) bytes, with pass_fd as
 * SCM_RIGHTS unless it is -1.  Never raises SIGPIPE.  Returns 0 or -errno
 * (-EAGAIN on a full non-blocking socket).
 */
int sib_ctl_send(int fd, const struct sib_ctl_msg *msg, int pass_fd);

/*
 * Receive one message into *msg (zeroed first).  A passed fd goes to
 * *recv_fd (CLOEXEC; -1 if none); extra fds, or all fds if recv_fd is NULL,
 * are closed.  Returns the bytes received, 0 when the peer closed, or -errno;
 * -EMSGSIZE if the message was longer than *msg (its start is in *msg).
 */
int sib_ctl_recv(int fd, struct sib_ctl_msg *msg, int *recv_fd);

/*
 * Client round trip: sets magic, a fresh seq and flags/status 0, sends, and
 * receives the reply, which must echo seq and op.  Returns 0 or -errno for
 * the transport (-ECONNRESET if the daemon closed, -EPROTO for a bad reply);
 * the command's own result is msg->hdr.status.  *recv_fd (may be NULL) gets a
 * passed fd or -1.  STATUS replies may continue: see sib_ctl_status().
 */
int sib_ctl_call(int fd, struct sib_ctl_msg *msg, int *recv_fd);
/* The same, passing pass_fd (unless -1) as SCM_RIGHTS with the request. */
int sib_ctl_call_fd(int fd, struct sib_ctl_msg *msg, int pass_fd, int *recv_fd);

/*
 * Fetch the STATUS report: all chunks, reassembled into a malloc'd,
 * NUL-terminated *text (the caller frees it).  Returns 0 or -errno (the
 * daemon's status negated, or a transport error).
 */
int sib_ctl_status(int fd, char **text);

/*
 * Ask the daemon to exit (SHUTDOWN) and wait, at most SIB_CTL_AUTOSTART_MS,
 * until it closes the connection: by then its socket is gone.  Returns 0 or
 * -errno (the daemon's status negated, -ETIMEDOUT, or a transport error).
 */
int sib_ctl_stop(int fd);

/*
 * A command-line tool's connection to softibd: path (NULL: the default
 * socket, sib_ctl_default_path), never autostarts.  Returns the socket, or
 * -1 after a message on stderr: "softibd is not running (no daemon on
 * PATH)" if nothing listens there (ENOENT, ECONNREFUSED), else prefixed
 * with prog.  Used by `softib` and `softibd --status|--stop`.
 */
int sib_ctl_tool_connect(const char *path, const char *prog);

/*
 * The body of `softib status|stop` and `softibd --status|--stop`: connect to
 * path (NULL: the default socket; never autostarts), print the report on
 * stdout or stop the daemon; errors on stderr prefixed with prog, and
 * "softibd is not running" if nothing listens.  Returns an exit status, 0 or 1.
 */
int sib_ctl_tool(const char *path, bool stop, const char *prog);

/*
 * "ADDR[/PREFIX]" (IPv4 dotted or IPv6) into ia's family, addr and prefix
 * (IPADDR, sib_ctl.h).  Without /PREFIX: 32 or 128, as `ip addr add`; for
 * a delete (del) SIB_IPADDR_PREFIX_ANY, as `ip addr del`.  0 or -EINVAL.
 */
int sib_ctl_ipaddr_parse(const char *s, bool del, struct sib_ctl_ipaddr *ia);
/*
 * One IPADDR round trip on a fresh tool connection (sib_ctl_tool_connect:
 * path NULL is the default socket; 10 s reply timeout).  Returns 0 (ia
 * holds the reply), softibd's positive errno, or -1 after a message on
 * stderr prefixed with prog (no daemon, a transport error).
 */
int sib_ctl_ipaddr_call(const char *path, struct sib_ctl_ipaddr *ia, const char *prog);

#endif
