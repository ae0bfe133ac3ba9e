/* Dump triggers and files: snapshot each thread, symbolise, write one
 * Callgrind file per thread under a temporary name, rename it into place. */
#ifndef CG_DUMP_H
#define CG_DUMP_H

/* The dump at process exit: every thread, trigger in "desc: Trigger:". */
void cg_dump_final(const char *trigger);

#endif
