/* SPDX-License-Identifier: MIT */
/*
 * `softib ipoib DEV PORT up|down` (ipoibcmd.c; docs/ipoib.md).
 */
#ifndef SIB_TOOLS_IPOIBCMD_H
#define SIB_TOOLS_IPOIBCMD_H

/* argv: the words after "ipoib"; path: the control socket (NULL: default),
 * exported as SOFTIB_SOCKET for the verbs and umad libraries.  Returns the
 * exit status: 0, 1 errors, 2 usage. */
int sib_tool_ipoib(const char *path, int argc, char **argv);

#endif
