/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The ljprof command line: subcommands and what they share.
*/
#ifndef LJPROF_CLI_H
#define LJPROF_CLI_H

#include <stddef.h>

/* Exit statuses. */
#define EXIT_OK 0
#define EXIT_FAILED 1 /* a damaged stream (the report is still written), an
                         unreadable file, a failed write */
#define EXIT_USAGE 2  /* bad command line */

/* How messages name the program: "ljprof", or for the -t tools the name
** it was run as (`luajit`, which hands them its command line). */
extern const char *program_name;

/* Each subcommand gets its own argv: argv[0] is the subcommand's name. */
int cmd_report(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_heap(int argc, char **argv);
/* argv[0] is the tool's flag, "-tm" or "-ts" (anything else lists them). */
int cmd_tool(int argc, char **argv);

/* "PROGRAM CMD: <message> (see 'PROGRAM CMD --help')" on stderr;
** EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
** The single FILE operand after the options (argv[optind]) into *file.
** Returns -1, or EXIT_USAGE (none or several; the error written).
*/
int single_file(const char *cmd, int argc, char **argv, const char **file);

/* Files given together: one side of a comparison. */
struct file_list {
  const char *const *files;
  size_t n;
};

/*
** A comparison's sides, each a file or several: `OLD NEW`, or `OLD... --
** NEW...`. sides_separator() is where the lone "--" is in argv, or argc:
** the options are parsed up to it (getopt would take it). two_sides()
** then takes the files after the options (argv[optind ..]) into sides;
** returns -1, or EXIT_USAGE (said: two files wanted, `what`, or a side
** empty).
*/
int sides_separator(int argc, char **argv);
int two_sides(const char *cmd, int argc, char **argv, int sep,
              struct file_list sides[2], const char *what);

#endif
