"""The commands' command lines, parsed by argparse (standard library):
Parser is argparse.ArgumentParser with the commands' own ways: their help
texts are their own (written for the man pages and the docs, printed by
the command on -h/--help), and a usage error raises the command's
UsageError, which the command prints behind its name (cgproflib.messages)
and answers with exit status 2, as before argparse. argparse's words are
kept but for an unknown option (which says where the options are listed)
and a missing value ("option --out needs a value", as before)."""

import argparse
import re


class Parser(argparse.ArgumentParser):
    def __init__(self, prog, usage_error, **kw):
        """prog: the command as the user types it ("cgprof flame");
        usage_error: the exception class raised on a usage error."""
        super().__init__(prog=prog, add_help=False, allow_abbrev=False, **kw)
        self.usage_error = usage_error
        self.add_argument("-h", "--help", action="store_true")

    def error(self, message):
        head, colon, rest = message.partition(": ")
        if head == "unrecognized arguments" and colon:
            words = rest.split(" ")
            raise self.usage_error("unknown option %r (%s --help lists them)" % (words[0], self.prog))
        m = re.fullmatch(r"argument (\S+): expected one argument", message)
        if m:
            raise self.usage_error("option %s needs a value" % m.group(1))
        raise self.usage_error(message)

    def parse(self, argv, operands="whats"):
        """The namespace of argv, options and operands in any order (as
        the commands always took them); after '--', operands only, added
        to the list named operands (argparse's intermixed parsing alone
        takes an option after '--' for one)."""
        argv = list(argv)
        rest = []
        if "--" in argv:
            i = argv.index("--")
            argv, rest = argv[:i], argv[i + 1:]
        ns = self.parse_intermixed_args(argv)
        setattr(ns, operands, list(getattr(ns, operands) or []) + rest)
        return ns
