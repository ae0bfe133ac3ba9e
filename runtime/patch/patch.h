/* Hook call sites in machine code, and the change of one instruction that
 * takes one back (data layer; docs/internals/takeback.md, "The sites"):
 * x86-64's first byte (arch/x86_64/sites.c), aarch64's one 4-byte word
 * (arch/aarch64/a64sites.c); the store itself is patch.c's. Functions of
 * their arguments: what is a hook is asked of a callback (registry.c reads
 * the PLT entries and GOT slots; the unit tests give code buffers of their
 * own), and a change is made at the address given. No allocation, no lock:
 * a hook's slow path calls these. On any other architecture nothing is
 * ever recognised, so nothing is changed. */
#ifndef CG_PATCH_H
#define CG_PATCH_H

#include <stddef.h>
#include <stdint.h>

/* The forms of a hook call (docs/internals/takeback.md's table). */
enum cg_site_form {
    CG_SITE_NONE,
    CG_SITE_CALL,     /* e8 rel32 -> 3d rel32 (cmp $imm32, %eax); aarch64: BL -> NOP */
    CG_SITE_CALL_GOT, /* ff 15 disp32 -> 8d 15 disp32 (lea disp32(%rip), %edx); aarch64: BLR, kept */
    CG_SITE_TAIL,     /* e9 rel32 -> c3 (ret); aarch64: B hook -> B to a RET */
    CG_SITE_TAIL_GOT, /* ff 25 disp32 -> c3 (ret); aarch64: BR, kept */
};

/* CG_HOOK_PROLOGUE: not a hook, a function that other instrumentation
 * calls in a function's entry before its enter hook (ThreadSanitizer's
 * __tsan_func_entry, -pg's mcount, __fentry__): the enter hook that comes
 * after it is still the function's own first call (issue 39: with TSan
 * every function's enter was taken for an inlined copy's and folded). */
enum { CG_HOOK_EXIT = 0, CG_HOOK_ENTER = 1, CG_HOOK_NOT = -1, CG_HOOK_PROLOGUE = -2 };

/* What is a hook: the hook (enter or exit) that a direct call or jump to
 * `to` reaches (got 0: `to` is the target, the hook itself or a PLT entry
 * of it), or that an indirect one through the pointer at `to` reaches
 * (got 1: `to` is a GOT slot); CG_HOOK_NOT otherwise, or when the memory
 * cannot be read. */
typedef int (*cg_hook_of_fn)(void *ctx, uintptr_t to, int got);

struct cg_site {
    uintptr_t addr;       /* the instruction's first byte */
    uint8_t form;         /* enum cg_site_form */
    uint8_t hook;         /* CG_HOOK_ENTER or CG_HOOK_EXIT */
    uint32_t old, patched; /* what the change replaces (CG_CPU_SITE_BYTES of
                              it, cpu.h: x86-64's first byte, aarch64's
                              word), and what takes the call back; patched
                              == old: no change the architecture lets a
                              running thread see whole (aarch64's BLR and
                              BR, a tail B with no RET in reach), and
                              cg_site_write refuses it */
};

/* The hook call that returns to ret, whose bytes [lo, ret) are readable:
 * 1 and *out when the instruction that ends at ret is a call of a hook
 * (e8 or ff 15, as hook_of says), 0 when it is not (a tail-called hook's
 * return address is its function's caller's: the call before it is the
 * caller's call of that function). A call preceded by an operand-size
 * prefix byte (66), which would change the length of what replaces it, is
 * refused (0). */
int cg_site_at_return(uintptr_t ret, uintptr_t lo, cg_hook_of_fn hook_of, void *ctx, struct cg_site *out);

/* The hook sites of one machine function, [begin, end): its bytes decoded
 * in order (x86insn.h) from begin. */
struct cg_range_scan {
    uintptr_t own_enter; /* its first call instruction, reached before an
                            unconditional jump or return, when that is a
                            call of the enter hook (the function's own
                            enter: docs/internals/takeback.md); 0 otherwise */
    size_t nsites;       /* sites found, in address order (the first max
                            kept in sites[]) */
    int ok;              /* the decoding ended exactly at end */
};

/* What both architectures' cg_range_scan do with one decoded instruction
 * (at site, the call's or jump's own address; form and hook as its
 * decoding found them; is_call: a call of any form; ends: a jump or a
 * return, after which no call is the function's own enter): a tail jump to
 * the enter hook is no form the compiler writes, and another tool's entry
 * call is neither a site nor the first call; the first call, before any
 * jump or return, is the function's own enter when it calls the enter
 * hook. Returns the hook to record the site with, CG_HOOK_NOT for none. */
static inline int cg_scan_judge(struct cg_range_scan *scan, int *first_call, int *stopped, uintptr_t site, int form,
                                int hook, int is_call, int ends)
{
    if ((form == CG_SITE_TAIL || form == CG_SITE_TAIL_GOT) && hook == CG_HOOK_ENTER)
        hook = CG_HOOK_NOT;
    if (hook == CG_HOOK_PROLOGUE) {
        hook = CG_HOOK_NOT;
        is_call = 0;
    }
    if (is_call && *first_call) {
        *first_call = 0;
        if (!*stopped && hook == CG_HOOK_ENTER)
            scan->own_enter = site;
    }
    if (ends)
        *stopped = 1;
    return hook;
}

/* Decodes [begin, end) and lists its hook sites into sites[max]: the bytes
 * read at begin itself, or, with copy not NULL, from copy (end - begin
 * bytes: the range as it was before some of its sites were changed).
 * Returns 0; scan->ok says whether the range can be trusted. */
int cg_range_scan(uintptr_t begin, uintptr_t end, const unsigned char *copy, cg_hook_of_fn hook_of, void *ctx,
                  struct cg_site *sites, size_t max, struct cg_range_scan *scan);

/* A tail site's change where it needs an instruction elsewhere (aarch64:
 * the B to the exit hook becomes a B to a RET, which cg_range_scan looks
 * for in the function's own range first): a RET looked for in [lo, hi),
 * the loaded segment that holds the site, read in place, within a B's
 * reach. 1 when s->patched is set (or needed nothing: x86-64's tail jump
 * becomes the ret itself), 0 when no RET is in reach (patched stays old:
 * the site is refused). */
int cg_site_tail_reach(struct cg_site *s, uintptr_t lo, uintptr_t hi);

/* Writes `to` at addr if it holds `from` (CG_CPU_SITE_BYTES, cpu.h: one
 * byte on x86-64, one aligned word on aarch64; one atomic store, so that a
 * thread running the instruction sees it whole, old or new; on aarch64 the
 * instruction cache made coherent for the word after), making its page
 * writable for the store only: prot is the page's protection, given back
 * after. 0 when written (or already `to`), or an errno value: EAGAIN (it
 * holds neither: not ours to change), ENOTSUP (to == from: no change this
 * architecture allows for the form), EINVAL (a misaligned word), ENOSYS
 * (no change written for this architecture), or mprotect's. errno
 * preserved. */
int cg_site_write(uintptr_t addr, uint32_t from, uint32_t to, int prot);

#endif
