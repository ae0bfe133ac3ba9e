/* The shape of SQLite's sqlite3LeaveMutexAndCloseZombie (issue 27): a
 * function whose head is a cheap test with an early return and whose tail
 * is long, which gcc's IPA function splitting (-fipa-split, -O2) cuts in
 * two: the tail becomes close_zombie.part.0, the head is inlined into the
 * callers (close_db, close_all), calling the part when the test fails.
 * The function's enter hook is in the head (in its callers' code), its
 * exit hook in the part too; small static helpers (sqlite3DbFree,
 * sqlite3HashClear) are inlined into the part, where their hooks are
 * called with the part's return address (into the caller that inlined the
 * head) as their call site, in the part's frame, and make real calls
 * (sqlite3DbFreeNN, sqlite3_free) from the part's code.
 *
 * gcc -O2 splits close_zombie (close_zombie.part.0), gcc -O3 finalize
 * (finalize.part.0): see each. Expected, whatever the compiler split or
 * inlined: close_db -> close_zombie 64, close_all -> close_zombie 16, of
 * which 40 zombies: close_zombie -> db_free 600 (15 each), close_zombie ->
 * hash_clear 120, hash_clear -> mem_free 480, db_free -> db_free_nn 600;
 * finalize_db -> finalize 32, finalize_all -> finalize 16, of which 24
 * zombies: finalize -> db_free 192, db_free -> db_free_nn 192,
 * finalize -> hash_clear 72, hash_clear -> mem_free 288. */
#include <stdio.h>
#include <stdlib.h>

struct elem {
    struct elem *next;
    void *data;
};

struct hash {
    struct elem *first;
    void *ht;
    int count;
};

#define NITEMS 3
#define NBT 3

struct db {
    int state; /* 1: a zombie */
    int busy;
    int mutex;
    struct hash funcs, colls, mods;
    void *items[NITEMS];
    void *bt[NBT];
    void *err;
    void *schema;
};

static long freed;

__attribute__((noinline)) void mem_free(void *p) /* sqlite3_free */
{
    freed += p != NULL;
    free(p);
}

__attribute__((noinline)) void db_free_nn(struct db *db, void *p) /* sqlite3DbFreeNN */
{
    db->busy += 0;
    mem_free(p);
}

static void db_free(struct db *db, void *p) /* sqlite3DbFree */
{
    if (p)
        db_free_nn(db, p);
}

static void hash_clear(struct hash *h) /* sqlite3HashClear */
{
    struct elem *e = h->first;
    h->first = 0;
    mem_free(h->ht);
    h->ht = 0;
    while (e) {
        struct elem *next = e->next;
        mem_free(e);
        e = next;
    }
    h->count = 0;
}

__attribute__((noinline)) void mutex_leave(struct db *db)
{
    db->mutex = 0;
}

__attribute__((noinline)) int connection_busy(struct db *db)
{
    return db->busy;
}

__attribute__((noinline)) void rollback(struct db *db)
{
    db->state |= 4;
}

__attribute__((noinline)) void btree_close(struct db *db, int j) /* sqlite3BtreeClose */
{
    db->bt[j] = 0;
}

__attribute__((noinline)) void func_destroy(struct db *db, void *p) /* functionDestroy */
{
    db->busy += p == NULL;
}

/* the head: a test and an early return; the tail: the zombie's freeing
 * (sqlite3LeaveMutexAndCloseZombie). Shaped for gcc -O2 to split it (nm
 * shows close_zombie.part.0): declared inline, so that its head is within
 * the inliner's limit for its callers (max-inline-insns-single; without
 * inline, max-inline-insns-auto refuses it at -O2 and nothing is split),
 * and with a tail long enough that the part is not inlined back into
 * them (a shorter one was). gcc -O3 inlines it whole. */
static inline void close_zombie(struct db *db)
{
    if (db->state != 1 || connection_busy(db)) {
        mutex_leave(db);
        return;
    }
    rollback(db);
    for (int j = 0; j < NBT; j++)
        if (db->bt[j])
            btree_close(db, j);
    for (struct elem *e = db->funcs.first; e; e = e->next) {
        func_destroy(db, e->data);
        db_free(db, e->data);
    }
    hash_clear(&db->funcs);
    for (struct elem *e = db->colls.first; e; e = e->next)
        db_free(db, e->data);
    hash_clear(&db->colls);
    for (struct elem *e = db->mods.first; e; e = e->next) {
        func_destroy(db, e->data);
        db_free(db, e->data);
    }
    hash_clear(&db->mods);
    for (int j = 0; j < NITEMS; j++) {
        db_free(db, db->items[j]);
        db->items[j] = 0;
    }
    db_free(db, db->err);
    db_free(db, db->schema);
    db->state = 2;
    mutex_leave(db);
    db_free(db, db);
}

/* The same shape, which gcc -O3 splits (finalize.part.0) and -O2 does not
 * (its head is beyond max-inline-insns-auto): not declared inline, not
 * static, a shorter tail (one more loop than a tail that -O3 inlined back
 * into the callers). */
void finalize(struct db *db)
{
    if (db->state != 1 || connection_busy(db)) {
        mutex_leave(db);
        return;
    }
    rollback(db);
    for (int j = 0; j < NITEMS; j++) {
        db_free(db, db->items[j]);
        db->items[j] = 0;
    }
    for (struct elem *e = db->funcs.first; e; e = e->next) {
        func_destroy(db, e->data);
        db_free(db, e->data);
    }
    hash_clear(&db->funcs);
    hash_clear(&db->colls);
    hash_clear(&db->mods);
    db_free(db, db->err);
    db->err = 0;
    db_free(db, db->schema);
    db->schema = 0;
    mutex_leave(db);
}

__attribute__((noinline)) void close_db(struct db *db)
{
    db->mutex = 1;
    close_zombie(db);
}

__attribute__((noinline)) void close_all(struct db **dbs, int n)
{
    for (int i = 0; i < n; i++) {
        dbs[i]->mutex = 1;
        close_zombie(dbs[i]);
    }
}

__attribute__((noinline)) void finalize_db(struct db *db)
{
    db->mutex = 1;
    finalize(db);
}

__attribute__((noinline)) void finalize_all(struct db **dbs, int n)
{
    for (int i = 0; i < n; i++) {
        dbs[i]->mutex = 1;
        finalize(dbs[i]);
    }
}

static struct hash filled(void)
{
    struct hash h = { 0, malloc(16), 3 };
    for (int k = 0; k < 3; k++) {
        struct elem *e = malloc(sizeof *e);
        e->next = h.first;
        e->data = malloc(8);
        h.first = e;
    }
    return h;
}

static struct db *open_db(int zombie)
{
    struct db *db = calloc(1, sizeof *db);
    db->state = zombie ? 1 : 0;
    db->funcs = filled();
    db->colls = filled();
    db->mods = filled();
    for (int j = 0; j < NITEMS; j++)
        db->items[j] = malloc(8);
    for (int j = 0; j < NBT; j++)
        db->bt[j] = db;
    db->err = zombie ? malloc(8) : NULL;
    db->schema = malloc(8);
    return db;
}

/* what a connection that was no zombie still holds */
static void drop(struct db *db)
{
    for (struct hash *h = &db->funcs; h <= &db->mods; h++) {
        for (struct elem *e = h->first, *n; e; e = n) {
            n = e->next;
            free(e->data);
            free(e);
        }
        free(h->ht);
    }
    for (int j = 0; j < NITEMS; j++)
        free(db->items[j]);
    free(db->err);
    free(db->schema);
    free(db);
}

int main(void)
{
    struct db *dbs[16];
    for (int i = 0; i < 64; i++) {
        struct db *db = open_db(i % 2);
        int zombie = db->state == 1;
        close_db(db);
        if (!zombie)
            drop(db);
    }
    for (int i = 0; i < 16; i++)
        dbs[i] = open_db(i % 2);
    int zombies[16];
    for (int i = 0; i < 16; i++)
        zombies[i] = dbs[i]->state == 1;
    close_all(dbs, 16);
    for (int i = 0; i < 16; i++)
        if (!zombies[i])
            drop(dbs[i]);
    /* finalize leaves the connection open */
    for (int i = 0; i < 32; i++) {
        struct db *db = open_db(i % 2);
        finalize_db(db);
        drop(db);
    }
    for (int i = 0; i < 16; i++)
        dbs[i] = open_db(i % 2);
    finalize_all(dbs, 16);
    for (int i = 0; i < 16; i++)
        drop(dbs[i]);
    printf("%ld\n", freed);
    return 0;
}
