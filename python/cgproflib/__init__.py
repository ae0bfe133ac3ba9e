"""cgprof's Python side, one package (named apart from the `cgprof` command,
so that neither shadows the other on a path or in a traceback):

    reader    the Callgrind format reader and strict checker (callgrind_check)

Standard library only. Importing the package imports none of its modules.
"""
