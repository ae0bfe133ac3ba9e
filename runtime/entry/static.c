/* Only in libcgprof.a, the runtime linked into static programs (entry
 * layer; runtime/meson.build makes the archive, docs/install.md "Static programs"):
 *
 *  - the mark the launcher reads to tell a static program that has the
 *    runtime linked in from one that has not: an ELF note, name "cgprof",
 *    type 1, the version as its text. A note, not a symbol: strip keeps it
 *    (it is in the program's PT_NOTE segment), and the launcher reads it
 *    from the program headers alone. library.c's constructor refers to it,
 *    so that --gc-sections keeps it too.
 *
 *  - dlopen for the elfutils code the archive carries: its debuginfod
 *    client loads libdebuginfod.so when DEBUGINFOD_URLS is set. The static
 *    runtime never loads a library (glibc's static dlopen would need, at
 *    run time, the shared libraries of the glibc it was linked with, and
 *    linking it prints that warning at every link of a profiled program),
 *    and never asks a debuginfod server (see debuginfo.c): this dlopen finds
 *    nothing. It is local to the archive's object (runtime/meson.build
 *    keeps only the runtime's own names global), so the program's own
 *    dlopen, if it has one, is the C library's. */
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

#define NOTE_NAME "cgprof"
#define NOTE_DESC CG_VERSION

__attribute__((used, section(".note.cgprof"), aligned(4))) const struct {
    uint32_t namesz, descsz, type;
    char name[(sizeof NOTE_NAME + 3) & ~3u];
    char desc[(sizeof NOTE_DESC + 3) & ~3u];
} cg_static_note = { sizeof NOTE_NAME, sizeof NOTE_DESC, 1, NOTE_NAME, NOTE_DESC };

void *dlopen(const char *file, int mode);
void *dlopen(const char *file, int mode)
{
    (void)file;
    (void)mode;
    return NULL;
}
