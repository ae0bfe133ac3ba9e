/* The merge of snapshots (CGPROF_THREAD_EXIT=merge, and the process total
 * of CGPROF_TOTAL, total.c): one snapshot whose entries of the same key add
 * up. Works on snapshots only, never on live tables. */
#ifndef CG_MERGE_H
#define CG_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

struct cg_merged {
    struct cg_snapshot snap; /* depth 0; continued: arcs with no call */
    size_t arc_cap, self_cap, node_cap, lat_cap; /* lat_cap: rows of snap.lat */
    uint32_t *arc_index, *self_index, *node_index; /* open addressing: entry + 1 */
    size_t arc_mask, self_mask, node_mask;
    unsigned threads;               /* parts added */
    int paths;                      /* sum the parts' call paths too */
};

int cg_merged_add(struct cg_merged *m, const struct cg_snapshot *part);
/* The same, taking part's entries instead of copying them when m is empty
 * (part's arrays are then m's, and part has none). */
int cg_merged_take(struct cg_merged *m, struct cg_snapshot *part);
void cg_merged_free(struct cg_merged *m);

#endif
