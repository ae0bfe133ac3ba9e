/*
 * server.c - a long-running program to profile in phases.
 *
 * A small pool of worker threads serves synthetic requests that the main
 * thread produces at a steady pace into a bounded queue (one mutex, two
 * condition variables).  It runs for a fixed number of requests, or until
 * SIGTERM or SIGINT, so you can profile it while it runs: dump a part now,
 * zero the costs, pause and resume collection (cgprof-control).
 *
 * There are three kinds of request, each with fixed work:
 *
 *   static  parse -> lookup the route -> render a static page (copy chunks),
 *   query   parse -> lookup the route -> run a query (look up rows)
 *                 -> render a page (escape the fields),
 *   upload  parse -> lookup the route -> checksum the body (CRC blocks)
 *                 -> store the blob.
 *
 * Request i (counted from 0) is of the kind kind_pattern[i % 10]: out of
 * every ten requests, 5 static, 3 query and 2 upload.  Which worker serves
 * which request depends on the scheduler; how many calls of each function a
 * request makes does not.
 *
 * Build:  cc -finstrument-functions -g -O0 -fno-inline -fno-omit-frame-pointer \
 *            -pthread server.c -o server
 * Run:    LD_PRELOAD=/path/to/libcgprof.so ./server [-t WORKERS] [-n REQUESTS]
 *                                                    [-p MICROSECONDS] [-s]
 *
 *   -t N   worker threads (default 4, at most 64)
 *   -n N   requests to serve, then exit (default 20000; 0: until SIGTERM/SIGINT)
 *   -p US  pace: one request every US microseconds (default 50)
 *   -s     sleepy workers: the pace becomes 20 ms (unless -p is given), so
 *          the workers spend nearly all their time blocked in
 *          pthread_cond_wait() waiting for the next request
 *
 * The program installs handlers for SIGTERM and SIGINT only (they stop the
 * producer; the workers finish the queued requests and the program returns
 * from main, so the runtime writes its files at exit).  It leaves SIGUSR1 to
 * the runtime, whose dump signal it is by default: every blocking call here
 * either cannot fail with EINTR (pthread_cond_wait, pthread_join) or is
 * retried (clock_nanosleep), so the program keeps running correctly while
 * parts are dumped.  Without the runtime preloaded, SIGUSR1 kills it (the
 * default action).
 *
 * Expected calls (with default arguments: 4 workers, 20000 requests, that is
 * 10000 static, 6000 query, 4000 upload):
 *
 *   threads in total: 5 (main + 4 workers)
 *
 *   function          calls   per request
 *   main                  1
 *   parse_args            1
 *   produce               1
 *   make_request      20000   1 (main thread)
 *   submit_request    20000   1 (main thread)
 *   print_report          1
 *   worker_main           4   one per worker, called from libc's start_thread
 *   next_request      20004   1, plus 1 per worker that finds the queue closed
 *   handle_request    20000   1
 *   parse_request     20000   1
 *   parse_header      60000   3
 *   lookup_route      20000   1
 *   hash_bytes        72000   1 in lookup_route, query: 8 in lookup_row,
 *                             upload: 1 in store_blob
 *   render_static     10000   static: 1
 *   copy_chunk        40000   static: 4
 *   run_query          6000   query: 1
 *   lookup_row        48000   query: 8
 *   render_page        6000   query: 1
 *   escape_field      48000   query: 8
 *   checksum_body      4000   upload: 1
 *   crc_block         64000   upload: 16
 *   store_blob         4000   upload: 1
 *
 *   caller -> callee                  calls
 *   main -> parse_args                    1
 *   main -> produce                       1
 *   produce -> make_request           20000
 *   produce -> submit_request         20000
 *   main -> print_report                  1
 *   worker_main -> next_request       20004
 *   worker_main -> handle_request     20000
 *   handle_request -> parse_request   20000
 *   parse_request -> parse_header     60000
 *   handle_request -> lookup_route    20000
 *   lookup_route -> hash_bytes        20000
 *   handle_request -> render_static   10000
 *   render_static -> copy_chunk       40000
 *   handle_request -> run_query        6000
 *   run_query -> lookup_row           48000
 *   lookup_row -> hash_bytes          48000
 *   handle_request -> render_page      6000
 *   render_page -> escape_field       48000
 *   handle_request -> checksum_body    4000
 *   checksum_body -> crc_block        64000
 *   handle_request -> store_blob       4000
 *   store_blob -> hash_bytes           4000
 *
 * With other arguments: R requests give R/10 rounds of (5 static, 3 query,
 * 2 upload) plus the first R%10 kinds of the pattern; W workers make
 * next_request R + W calls.  A stop by SIGTERM/SIGINT adds a call of
 * on_stop_signal (called from wherever the signal lands) and ends after the
 * requests produced so far; the last line says how many of each kind were
 * served:
 *
 *   server: served 20000 requests (static 10000, query 6000, upload 4000) with 4 workers, digest ...
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 64
#define QUEUE_SLOTS 64

enum kind { KIND_STATIC, KIND_QUERY, KIND_UPLOAD, N_KINDS };

static const char *const kind_names[N_KINDS] = { "static", "query", "upload" };

/* Out of every ten requests: 5 static, 3 query, 2 upload. */
static const enum kind kind_pattern[10] = {
    KIND_STATIC, KIND_QUERY, KIND_STATIC, KIND_UPLOAD, KIND_STATIC,
    KIND_QUERY, KIND_STATIC, KIND_QUERY, KIND_STATIC, KIND_UPLOAD,
};

#define N_HEADERS 3       /* parse_header calls per request */
#define N_CHUNKS 4        /* copy_chunk calls per static request */
#define N_ROWS 8          /* lookup_row and escape_field calls per query */
#define N_BLOCKS 16       /* crc_block calls per upload */
#define CHUNK_SIZE 256
#define BLOCK_SIZE 64

struct request {
    unsigned long id;
    enum kind kind;
    char path[48];
    char headers[N_HEADERS][32];
};

struct response {
    char body[N_CHUNKS * CHUNK_SIZE];
    size_t len;
    uint32_t digest;
};

/* ------------------------------------------------------------------ */
/* The queue: a ring of QUEUE_SLOTS requests                          */
/* ------------------------------------------------------------------ */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t not_empty;
    pthread_cond_t not_full;
    struct request slots[QUEUE_SLOTS];
    unsigned head, count;
    int closed;
} queue = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .not_empty = PTHREAD_COND_INITIALIZER,
    .not_full = PTHREAD_COND_INITIALIZER,
};

/* Set by SIGTERM/SIGINT: the producer stops at its next request. */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* ------------------------------------------------------------------ */
/* The work of a request                                              */
/* ------------------------------------------------------------------ */

/* FNV-1a, 32 bits, over n bytes. */
static uint32_t hash_bytes(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* "Name: value" -> a hash of the lower-cased name plus the value's length. */
static uint32_t parse_header(const char *line)
{
    uint32_t h = 5381;
    const char *p = line;

    for (; *p != '\0' && *p != ':'; p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        h = h * 33u + (unsigned char)c;
    }
    if (*p == ':')
        p++;
    while (*p == ' ')
        p++;
    return h + (uint32_t)strlen(p);
}

static uint32_t parse_request(const struct request *req)
{
    uint32_t acc = 0;

    for (int i = 0; i < N_HEADERS; i++)
        acc ^= parse_header(req->headers[i]);
    return acc;
}

static unsigned lookup_route(const struct request *req)
{
    return hash_bytes(req->path, strlen(req->path)) % 97u;
}

static size_t copy_chunk(char *dst, unsigned route, int chunk)
{
    for (int i = 0; i < CHUNK_SIZE; i++)
        dst[i] = (char)('a' + (route + (unsigned)chunk * 7u + (unsigned)i) % 26u);
    return CHUNK_SIZE;
}

static void render_static(struct response *resp, unsigned route)
{
    resp->len = 0;
    for (int c = 0; c < N_CHUNKS; c++)
        resp->len += copy_chunk(resp->body + resp->len, route, c);
}

static uint32_t lookup_row(unsigned route, int row)
{
    unsigned key[2] = { route, (unsigned)row };

    return hash_bytes(key, sizeof key);
}

static void run_query(uint32_t rows[N_ROWS], unsigned route)
{
    for (int r = 0; r < N_ROWS; r++)
        rows[r] = lookup_row(route, r);
}

/* Writes one row as hex digits, escaping the ones HTML would care about. */
static size_t escape_field(char *dst, uint32_t value)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;

    for (int shift = 28; shift >= 0; shift -= 4) {
        char c = hex[(value >> shift) & 0xf];
        if (c == 'a') {  /* pretend 'a' needs escaping */
            memcpy(dst + n, "&#97;", 5);
            n += 5;
        } else {
            dst[n++] = c;
        }
    }
    dst[n++] = ',';
    return n;
}

static void render_page(struct response *resp, const uint32_t rows[N_ROWS])
{
    resp->len = 0;
    for (int r = 0; r < N_ROWS; r++)
        resp->len += escape_field(resp->body + resp->len, rows[r]);
}

/* Bitwise CRC-32 (IEEE) of one block of the synthetic body. */
static uint32_t crc_block(uint32_t crc, unsigned long id, int block)
{
    crc = ~crc;
    for (int i = 0; i < BLOCK_SIZE; i++) {
        crc ^= (unsigned char)(id * 31u + (unsigned long)block * 131u + (unsigned long)i);
        for (int b = 0; b < 8; b++)
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static uint32_t checksum_body(unsigned long id)
{
    uint32_t crc = 0;

    for (int b = 0; b < N_BLOCKS; b++)
        crc = crc_block(crc, id, b);
    return crc;
}

static void store_blob(struct response *resp, unsigned long id, uint32_t crc)
{
    unsigned long key[2] = { id, crc };

    resp->len = (size_t)snprintf(resp->body, sizeof resp->body, "stored %lu crc %08x", id, crc);
    resp->digest ^= hash_bytes(key, sizeof key);
}

static void handle_request(const struct request *req, struct response *resp)
{
    uint32_t rows[N_ROWS];
    unsigned route;

    resp->digest = parse_request(req);
    route = lookup_route(req);
    switch (req->kind) {
    case KIND_STATIC:
        render_static(resp, route);
        break;
    case KIND_QUERY:
        run_query(rows, route);
        render_page(resp, rows);
        break;
    case KIND_UPLOAD:
        store_blob(resp, req->id, checksum_body(req->id));
        break;
    default:
        break;
    }
    resp->digest += (uint32_t)resp->len + (unsigned char)resp->body[resp->len / 2];
}

/* ------------------------------------------------------------------ */
/* Workers                                                            */
/* ------------------------------------------------------------------ */

struct worker {
    pthread_t tid;
    unsigned long served[N_KINDS];
    uint64_t digest;
};

/* Takes the next request; 0 when the queue is closed and empty. */
static int next_request(struct request *out)
{
    pthread_mutex_lock(&queue.lock);
    while (queue.count == 0 && !queue.closed)
        pthread_cond_wait(&queue.not_empty, &queue.lock);
    if (queue.count == 0) {
        pthread_mutex_unlock(&queue.lock);
        return 0;
    }
    *out = queue.slots[queue.head];
    queue.head = (queue.head + 1) % QUEUE_SLOTS;
    queue.count--;
    pthread_cond_signal(&queue.not_full);
    pthread_mutex_unlock(&queue.lock);
    return 1;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct request req;
    struct response resp;

    while (next_request(&req)) {
        handle_request(&req, &resp);
        w->served[req.kind]++;
        w->digest += resp.digest;
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* The producer (main thread)                                         */
/* ------------------------------------------------------------------ */

static void make_request(struct request *req, unsigned long id)
{
    static const char *const paths[N_KINDS] = { "/static/page-", "/api/query?id=", "/upload/blob-" };

    req->id = id;
    req->kind = kind_pattern[id % 10];
    snprintf(req->path, sizeof req->path, "%s%lu", paths[req->kind], id % 1000);
    snprintf(req->headers[0], sizeof req->headers[0], "Host: example.org");
    snprintf(req->headers[1], sizeof req->headers[1], "Content-Length: %lu", (id * 37) % 4096);
    snprintf(req->headers[2], sizeof req->headers[2], "X-Request-Id: %lu", id);
}

static void submit_request(const struct request *req)
{
    pthread_mutex_lock(&queue.lock);
    while (queue.count == QUEUE_SLOTS)
        pthread_cond_wait(&queue.not_full, &queue.lock);
    queue.slots[(queue.head + queue.count) % QUEUE_SLOTS] = *req;
    queue.count++;
    pthread_cond_signal(&queue.not_empty);
    pthread_mutex_unlock(&queue.lock);
}

/* Produces up to `total` requests (0: no limit), one every pace_us
 * microseconds on an absolute schedule, until stop_requested; then closes
 * the queue.  Returns the number produced. */
static unsigned long produce(unsigned long total, long pace_us)
{
    struct timespec next;
    struct request req;
    unsigned long id = 0;

    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!stop_requested && (total == 0 || id < total)) {
        make_request(&req, id);
        submit_request(&req);
        id++;
        if (pace_us > 0) {
            next.tv_nsec += pace_us * 1000L;
            while (next.tv_nsec >= 1000000000L) {
                next.tv_nsec -= 1000000000L;
                next.tv_sec++;
            }
            /* EINTR (SIGUSR1 for the runtime, SIGTERM): sleep on to the
             * same deadline unless asked to stop */
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR
                   && !stop_requested)
                ;
        }
    }
    pthread_mutex_lock(&queue.lock);
    queue.closed = 1;
    pthread_cond_broadcast(&queue.not_empty);
    pthread_mutex_unlock(&queue.lock);
    return id;
}

/* ------------------------------------------------------------------ */

struct options {
    int workers;
    unsigned long requests;
    long pace_us;
};

static void usage(void)
{
    fprintf(stderr, "usage: server [-t WORKERS] [-n REQUESTS] [-p MICROSECONDS] [-s]\n");
    exit(2);
}

static unsigned long number_arg(const char *s, unsigned long max)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v > max)
        usage();
    return v;
}

static void parse_args(int argc, char **argv, struct options *o)
{
    int sleepy = 0, paced = 0, c;

    o->workers = 4;
    o->requests = 20000;
    o->pace_us = 50;
    while ((c = getopt(argc, argv, "t:n:p:s")) != -1) {
        switch (c) {
        case 't':
            o->workers = (int)number_arg(optarg, MAX_WORKERS);
            if (o->workers < 1)
                usage();
            break;
        case 'n':
            o->requests = number_arg(optarg, (unsigned long)-1 / 2);
            break;
        case 'p':
            o->pace_us = (long)number_arg(optarg, 10000000);
            paced = 1;
            break;
        case 's':
            sleepy = 1;
            break;
        default:
            usage();
        }
    }
    if (optind != argc)
        usage();
    if (sleepy && !paced)
        o->pace_us = 20000;
}

static void print_report(const struct worker *workers, int n, unsigned long produced)
{
    unsigned long served[N_KINDS] = { 0 }, total = 0;
    uint64_t digest = 0;

    for (int i = 0; i < n; i++) {
        for (int k = 0; k < N_KINDS; k++)
            served[k] += workers[i].served[k];
        digest += workers[i].digest;
    }
    for (int k = 0; k < N_KINDS; k++)
        total += served[k];
    if (total != produced)
        fprintf(stderr, "server: produced %lu requests but served %lu\n", produced, total);
    printf("server: served %lu requests (%s %lu, %s %lu, %s %lu) with %d workers, digest %016llx\n",
           total, kind_names[0], served[0], kind_names[1], served[1], kind_names[2], served[2], n,
           (unsigned long long)digest);
}

int main(int argc, char **argv)
{
    static struct worker workers[MAX_WORKERS];
    struct options opt;
    struct sigaction sa;
    sigset_t stop_set, old_set;
    unsigned long produced;

    parse_args(argc, argv, &opt);

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    /* The workers block SIGTERM/SIGINT (they inherit this mask), so the
     * main thread, the producer, is the one that receives them. */
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGTERM);
    sigaddset(&stop_set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_set, &old_set);
    for (int i = 0; i < opt.workers; i++) {
        int err = pthread_create(&workers[i].tid, NULL, worker_main, &workers[i]);
        if (err != 0) {
            fprintf(stderr, "server: pthread_create: %s\n", strerror(err));
            return 1;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old_set, NULL);

    produced = produce(opt.requests, opt.pace_us);
    for (int i = 0; i < opt.workers; i++)
        pthread_join(workers[i].tid, NULL);
    print_report(workers, opt.workers, produced);
    return 0;
}
