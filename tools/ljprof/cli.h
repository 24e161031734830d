/*
** The ljprof command line: subcommands and what they share.
*/
#ifndef LJPROF_CLI_H
#define LJPROF_CLI_H

/* Exit statuses. */
#define EXIT_OK 0
#define EXIT_FAILED 1 /* a damaged stream (the report is still written), an
                         unreadable file, a failed write */
#define EXIT_USAGE 2  /* bad command line */

/* Each subcommand gets its own argv: argv[0] is the subcommand's name. */
int cmd_report(int argc, char **argv);
int cmd_record(int argc, char **argv);

/* "ljprof CMD: <message> (see 'ljprof CMD --help')" on stderr; EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
