"""The commands' command lines, parsed by argparse (standard library):
Parser is argparse.ArgumentParser with the commands' own ways: their help
texts are their own (written for the man pages and the docs, printed by
the command on -h/--help), and a usage error raises the command's
UsageError, which the command prints behind its name (cgproflib.messages)
and answers with exit status 2, as before argparse. argparse's words are
kept but for an unknown option (which says where the options are listed),
a missing value ("option --out needs a value", as before) and a value
given to an option that takes none ("--paths takes no value"). A value
that starts with '-' goes as --name=VALUE (argparse takes it for an
option otherwise)."""

import argparse
import re


class Stop(Exception):
    """Raised by StopAction: the scan ends at this option (-h, --version),
    whatever follows; .action is the option's dest ("help", "version")."""

    def __init__(self, action):
        super().__init__(action)
        self.action = action


class StopAction(argparse.Action):
    """An option that ends the scan where it stands (Stop), as -h and
    --version did in the commands' own parsers: what follows is not
    looked at, and no error of it is raised."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, **kw)

    def __call__(self, parser, ns, values, option_string=None):
        raise Stop(self.dest)


class Parser(argparse.ArgumentParser):
    def __init__(self, prog, usage_error, stop_at_help=False, **kw):
        """prog: the command as the user types it ("cgprof flame");
        usage_error: the exception class raised on a usage error;
        stop_at_help: -h/--help raises Stop("help") where it stands
        (else it is a flag, ns.help)."""
        super().__init__(prog=prog, add_help=False, allow_abbrev=False, **kw)
        self.usage_error = usage_error
        if stop_at_help:
            self.add_argument("-h", "--help", action=StopAction)
        else:
            self.add_argument("-h", "--help", action="store_true")

    def error(self, message):
        head, colon, rest = message.partition(": ")
        if head == "unrecognized arguments" and colon:
            words = rest.split(" ")
            raise self.usage_error("unknown option %r (%s --help lists them)" % (words[0], self.prog))
        m = re.fullmatch(r"argument (\S+): expected one argument", message)
        if m:
            raise self.usage_error("option %s needs a value" % m.group(1))
        m = re.fullmatch(r"argument (\S+): ignored explicit argument .*", message)
        if m:
            raise self.usage_error("%s takes no value" % m.group(1).split("/")[-1])
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
