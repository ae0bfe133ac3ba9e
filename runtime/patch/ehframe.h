/* The machine function an address is in, from an object's unwind tables
 * (data layer): the frame description entry (FDE) of .eh_frame that covers
 * it, found through the binary search table of .eh_frame_hdr (the
 * PT_GNU_EH_FRAME segment, which glibc's _dl_find_object gives without a
 * lock). A range is a whole function, or a clone or a cold part of one
 * (fn.constprop.0, fn.cold): what the compiler emitted as one piece of code.
 *
 * Pure: reads the tables in memory, no allocation, no system call, so that
 * a hook's slow path may call it (docs/internals/takeback.md); cg_fde_range_loaded
 * asks glibc where they are, which takes no lock either. Tables it does not
 * know (no search table, an encoding other than those gcc, clang and the
 * linkers write) give no answer rather than a guess. */
#ifndef CG_EHFRAME_H
#define CG_EHFRAME_H

#include <stddef.h>
#include <stdint.h>

/* The binary search table of the .eh_frame_hdr at hdr (hdr_size as
 * below): *count entries at *table, each two sdata4 relative to hdr (the
 * initial location, the FDE), sorted by location. 0, or -1 for a header
 * without one or in a form not known (the only one linkers write is
 * known). libunwind's dwarf_search_unwind_table takes the same table
 * (samplering.c). */
int cg_fde_table(const unsigned char *hdr, size_t hdr_size, const unsigned char **table, size_t *count);
/* The range [*begin, *end) of the FDE that covers pc, in the object whose
 * .eh_frame_hdr is at hdr (NULL: none); hdr_size: the bytes readable at hdr
 * (0: unknown; the table's own count bounds it then). 0 when found, -1
 * when not (no entry covers pc, or the tables cannot be read). */
int cg_fde_range(const unsigned char *hdr, size_t hdr_size, uintptr_t pc, uintptr_t *begin, uintptr_t *end);
/* The same in the loaded object that holds pc, its tables found by
 * glibc's _dl_find_object (no lock, no allocation, async-signal-safe). */
int cg_fde_range_loaded(uintptr_t pc, uintptr_t *begin, uintptr_t *end);

#endif
