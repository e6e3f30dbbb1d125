/* SPDX-License-Identifier: MIT */
/*
 * The device registry subcommands of the softib command (softib_dev.c).
 */
#ifndef SIB_TOOLS_SOFTIB_DEV_H
#define SIB_TOOLS_SOFTIB_DEV_H

/*
 * Run `device add|remove NAME` or `port DEV PORT down|up|lid N|smlid N` (argv[0] is
 * "device" or "port") against the daemon on path (NULL: the default socket).
 * Messages on stdout/stderr prefixed with prog.  Returns the exit status:
 * 0 done, 1 the daemon refused or is not running, 2 usage.
 */
int sib_tool_admin(const char *path, int argc, const char *const *argv, const char *prog);

/*
 * Run `ipoib DEV PORT add|del ADDR[/PREFIX]` or `ipoib DEV PORT addrs` (argv:
 * the words after "ipoib"): a CA port's IP addresses in softibd's rdma_cm
 * table (IPADDR; addrs prints one ADDR/PREFIX per line, the defaults
 * first).  Same exit statuses as sib_tool_admin.
 */
int sib_tool_ipaddr(const char *path, int argc, char *const *argv, const char *prog);

#endif
