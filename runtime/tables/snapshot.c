#include "snapshot.h"

#include <stdlib.h>

void cg_snapshot_free(struct cg_snapshot *s)
{
    free(s->lat);
    s->lat = NULL;
    free(s->arcs);
    free(s->selfs);
    free(s->nodes);
    s->arcs = NULL;
    s->selfs = NULL;
    s->nodes = NULL;
    s->narcs = s->nselfs = s->nnodes = 0;
}

