/* The site registry (thread layer): the process-wide record of the
 * program's hook call sites and of the machine functions (ranges, from the
 * unwind tables) they were decoded from, found by address, with the byte
 * each one had and whether it is changed. It records; what to take back
 * and when is takeback.c's (the policy), the decoding of a range patch.h's,
 * the ranges ehframe.h's (docs/internals/takeback.md).
 *
 * Everything here is read and changed under the registry's one lock, which
 * a hook only tries (cg_reg_trylock): the hooks run in signal handlers,
 * which may interrupt the holder on its own thread. The tables are arrays
 * in anonymous mappings (the hooks run inside malloc), grown under the lock
 * (util.h's CG_GROW_MAPPED). No malloc, errno left to the callers (who
 * save it around their calls). */
#ifndef CG_REGISTRY_H
#define CG_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

/* Why a site was taken back (each part's header counts them). */
/* CG_TB_COUNTING: an exit hook call, which the counting hooks never need
 * (CGPROF_STACKS=unwind, counting.h): taken back at its first call. */
enum cg_tb_reason { CG_TB_INLINED, CG_TB_FILTERED, CG_TB_PAUSED, CG_TB_COUNTING, CG_TB_NREASONS };

/* A hook call site met or decoded. */
struct cg_reg_site {
    uintptr_t addr;
    uintptr_t fn;        /* the function a hook named from here (0: none seen) */
    uint64_t next_check; /* a frameless exit's: the next quiescence check (ns) */
    uint32_t range;      /* its range's index + 1; 0 without one */
    uint32_t wait;       /* the next delay between checks, in 0.1 ms */
    uint32_t old, patched; /* patch.h's struct cg_site's */
    uint8_t form, hook;
    uint8_t taken;   /* reason + 1 while taken back, 0 when not */
    uint8_t folded;  /* an enter judged inlined (CG_TB_INLINED) */
    uint8_t refused; /* its change failed for good */
    uint8_t dead;    /* its object was unloaded */
    int8_t prot;     /* its page's protection (a site without a range) */
};

/* A machine function decoded, and its sites. */
struct cg_reg_range {
    uintptr_t begin, end, own_enter;
    uint32_t first, n; /* its sites, cg_reg_sites[first, first + n), by address */
    uint8_t ok;        /* the decoding can be trusted */
    uint8_t stale;     /* decoded while a PLT entry it calls was not bound
                          yet: a hook's entry may have been missed */
    uint8_t dead;
    int8_t prot;       /* its pages' protection (cg_reg_segment_of) */
};

/* Every site and range recorded, in the order they were (a range's sites
 * are one run; a site decoded again is a new record, the old one dead). */
extern struct cg_reg_site *cg_reg_sites;
extern size_t cg_reg_nsites;
extern struct cg_reg_range *cg_reg_ranges;
extern size_t cg_reg_nranges;

/* The registry's lock: tried (1: got), waited for (not from a hook),
 * released; tried a while (a thousand yields, not waited for: 1 got). A
 * caller that must not guess (the counting hooks) waits out another
 * thread's short work under the lock this way; the lock is never held
 * across a blocking call, and a handler that interrupted its holder on
 * this thread gives up. */
int cg_reg_trylock(void);
void cg_reg_lock_wait(void);
void cg_reg_unlock(void);
int cg_reg_trylock_a_while(void);
/* In a forked child: the lock let go; 1 when it was held (by a thread that
 * is not in the child, which may have been changing the tables). */
int cg_reg_forked(void);

struct cg_takeback_stats {
    unsigned long sites[CG_TB_NREASONS];       /* taken back now, by reason */
    unsigned long tails[CG_TB_NREASONS];       /* of which tail jumps */
    unsigned long restored;                    /* put back (resumptions) */
    unsigned long refused;                     /* changes the system refused */
    int refused_errno;                         /* the first refusal's errno */
    uintptr_t refused_at;                      /* and its address */
    unsigned long ranges, untrusted;           /* machine functions decoded, not trusted */
};
/* Changed only under the lock, each counter as a whole word (relaxed
 * atomics): a reader that could not get the lock (a dump that interrupted
 * the thread holding it) reads whole values, only maybe not a consistent
 * set of them. */
extern struct cg_takeback_stats cg_reg_stats;
#define CG_TB_STAT_ADD(f, n) __atomic_store_n(&(f), __atomic_load_n(&(f), __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)
#define CG_TB_STAT_GET(f) __atomic_load_n(&(f), __ATOMIC_RELAXED)

/* Changes whenever an answer of cg_takeback_own may change: an unload
 * (cg_takeback_unload: an address may then hold other code), a range found
 * untrusted (its answers become "not known"), a forked child that no longer
 * trusts the tables. An answer kept by a thread (fold.c) holds while this
 * is the same. cg_reg_new_epoch moves it on. */
extern unsigned cg_takeback_epoch;
void cg_reg_new_epoch(void);

/* The hooks' own entry points (the targets a site must reach) and the
 * runtime's own object (never changed), set once before any hook is taken
 * back; the functions other instrumentation calls before the enter hook
 * looked up. */
void cg_reg_init(uintptr_t hook_enter, uintptr_t hook_exit);
/* Whether `to` is a function that other instrumentation calls in a
 * function's entry before its enter hook (patch.h, CG_HOOK_PROLOGUE). */
int cg_takeback_prologue_fn(uintptr_t to);

/* The loaded segment that holds an address (cg_reg_segment_of). */
struct cg_reg_seg {
    uintptr_t lo, hi; /* the PT_LOAD segment holding the address */
    int prot;
    const unsigned char *eh; /* the object's .eh_frame_hdr, or NULL */
    int own;                 /* the runtime's own object */
};
/* From its object's program headers (found with _dl_find_object, which
 * takes no lock and is async-signal-safe): 0, or -1 when not known; prot
 * -1 when the page is shared with a segment of other permissions. */
int cg_reg_segment_of(uintptr_t addr, struct cg_reg_seg *s);

/* The live site at addr, or NULL. */
struct cg_reg_site *cg_reg_site_find(uintptr_t addr);
/* The live range that begins at begin, or NULL. */
struct cg_reg_range *cg_reg_range_find(uintptr_t begin);
/* The range that holds addr (its machine function, in segment s),
 * decoded the first time it is asked for; NULL when there is none (no
 * unwind tables) or no memory. */
struct cg_reg_range *cg_reg_range_of(uintptr_t addr, const struct cg_reg_seg *s);
/* A range decoded before all the PLT entries it calls were bound, decoded
 * again (NULL, or a range not stale: nothing). */
void cg_reg_refresh(struct cg_reg_range *r);
/* The record of the hook call that returns to code (made when new); its
 * segment in *s (for a site met before, only its prot) and its range in
 * *rp. In a trusted range the site must be one the decoding found (else
 * the range is not trusted any more: the decoder disagreed with the CPU);
 * out of any range it is recognised from its bytes alone. NULL when code
 * follows no hook call (or the runtime's own). */
struct cg_reg_site *cg_reg_site_of_return(uintptr_t code, struct cg_reg_seg *s, struct cg_reg_range **rp);
/* An object [lo, hi) is about to be unloaded: its sites and ranges are
 * dead (not restored: its code goes; their counts taken off the stats),
 * and what was known of PLT entries and GOT slots forgotten. */
void cg_reg_forget(uintptr_t lo, uintptr_t hi);

#endif
