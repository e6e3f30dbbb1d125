/* SPDX-License-Identifier: MIT */
/*
 * The link subcommands of the softib tool (tools/linkcmd.c, docs/link.md).
 * Each returns an exit status: 0, 1 (error, reported on stderr), 2 (usage).
 */
#ifndef SIB_TOOLS_LINKCMD_H
#define SIB_TOOLS_LINKCMD_H

/* softib capture -w FILE [-d DEV] [-p PORT] [-c COUNT]; argv: the options. */
int sib_tool_capture(const char *sock, int argc, char **argv);
/* softib fault DEV|all PORT|all SPEC|off; argv: those three words. */
int sib_tool_fault(const char *sock, int argc, char **argv);

#endif
