/* SPDX-License-Identifier: MIT */
/*
 * The test's private softibd (daemon_fixture.h) as a client speaks to it:
 * a raw control connection, `softib status` and one number of it, for
 * tests that check what softibd does and counts.
 */
#ifndef SIB_TESTS_STATUS_TEXT_H
#define SIB_TESTS_STATUS_TEXT_H


/* The whole report (free it), or a failed test. */
char *status_text(void);
/* The number after " key=" on the first line that starts with prefix
 * (prefix found anywhere in text); -1 if there is none. */
long field(const char *text, const char *prefix, const char *key);
/* A control connection that said HELLO (10 s receive timeout), or a
 * failed test. */
int hello_conn(void);

#endif
