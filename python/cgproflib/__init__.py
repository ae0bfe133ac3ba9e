"""cgprof's Python side, one package (named apart from the `cgprof` command,
so that neither shadows the other on a path or in a traceback):

    reader    the Callgrind format reader and strict checker (callgrind_check)
    launcher  the `cgprof` command
    control   the `cgprof-control` command
    options   the runtime's options: runtime/base/options.inc's table, generated
              at build time into _generated (read by optable), and the
              runtime's verdicts on their values
    naming    the names of the profile files
    report    `cgprof report`, and the launcher's summary
    paths     the path files (docs/internals/paths-format.md): `cgprof flame`,
              `cgprof report --paths`
    signals   signals by name
    rules     the runtime's own rules, asked from its own code (cgprof-rules)

The rules that are the runtime's are never typed again here: they are
generated from runtime/base/options.inc or asked from runtime/base/options.c (see
rules); the two that naming must invert are checked against the runtime by
tests. Standard library only. Importing the package imports none of its
modules.
"""
