/* C++ names, demangled (base layer): one look-up of the C++ runtime's
 * demangler for the symbols (names.c) and the filters' patterns
 * (filter.c). */
#ifndef CG_DEMANGLE_H
#define CG_DEMANGLE_H

/* The demangled form of a mangled C++ name ("_Z..."), malloc'd, or NULL
 * (not a mangled name, or no demangler, or out of memory). Never from a
 * hook or a signal handler: the first call may load libstdc++. Takes at most
 * about 20 kB of the caller's stack, whatever the name's length (a long
 * name is demangled on a stack of its own). */
char *cg_demangle(const char *name);

#endif
