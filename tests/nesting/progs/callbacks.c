/* Calls that reach instrumented code from code that is not instrumented,
 * and first calls (issue 38): the shapes of real programs whose counts
 * differed from the hooks' by one call under sampled time.
 *  - gawk's sort_down_value_number: a comparator that glibc's qsort calls
 *    (by_key, an inlined helper making a real call inside it);
 *  - libpng's png_zfree: zlib's free callback, called through a pointer by
 *    uninstrumented zlib (inflateEnd) from png_read_destroy, itself inlined
 *    here into read_struct (stream_end: not instrumented);
 *  - libxml2's SAX callbacks (xmlTextReaderCDataBlock): a callback through
 *    a function pointer from instrumented code (parse_chunk -> on_cdata);
 *  - jq's main -> jv_array: the first calls of a function in main;
 *  - GNU make's child_handler: a SIGCHLD handler run while the program is
 *    blocked in read() inside jobserver_acquire (the signal is blocked
 *    elsewhere, so that where the handler runs is the same in every run:
 *    in jobserver_acquire, under sigprocmask or read).
 * Under sampled time a sample in the prologue or epilogue of such a
 * function (before its enter hook, after its exit hook), reached through
 * code that is not instrumented or before its first call, must not count a
 * call: the hooks count them all.
 *
 * Expected, whatever the compiler inlined (N = argv[1], default 30000
 * keys; R = argv[2], default 2000 rounds; J = argv[3], default 40 jobs):
 * main -> make_array 2; main -> sort_keys 1, sort_keys -> by_key (as many
 * as qsort compares), by_key -> key_of 2 each; main -> read_struct R,
 * read_struct -> my_zalloc R, read_struct -> my_zfree R (through
 * stream_init and stream_end, not instrumented); main -> parse_chunk R,
 * parse_chunk -> on_cdata 4 R; main -> run_job J, run_job ->
 * jobserver_acquire J, jobserver_acquire -> child_handler J; and the calls
 * of note. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define UNINSTRUMENTED __attribute__((no_instrument_function, noinline))

static volatile int sink;

__attribute__((noinline)) int note(int x)
{
    sink += x;
    return x & 1;
}

/* ---- a comparator of glibc's qsort ---------------------------------------- */

static inline int key_of(const int *p)
{
    return *p & 0xfff;
}

static int by_key(const void *a, const void *b)
{
    int x = key_of(a), y = key_of(b);
    if (x == y)
        return note(*(const int *)a) - note(*(const int *)b);
    return x < y ? 1 : -1;
}

static int keys[1 << 17];

__attribute__((noinline)) void sort_keys(int n)
{
    qsort(keys, (size_t)n, sizeof keys[0], by_key);
}

/* ---- zlib's allocation callbacks -------------------------------------------- */

struct stream {
    void *(*zalloc)(void *opaque, unsigned items, unsigned size);
    void (*zfree)(void *opaque, void *p);
    void *opaque;
    char *state;
};

UNINSTRUMENTED int stream_init(struct stream *s)
{
    s->state = s->zalloc(s->opaque, 1, 64);
    return s->state ? 0 : -1;
}

UNINSTRUMENTED void stream_end(struct stream *s)
{
    if (s->state)
        s->zfree(s->opaque, s->state);
    s->state = NULL;
}

/* zlib is another object: its callbacks are never inlined into it (gcc -O3
 * would inline them into a clone of stream_init, whose hook calls the
 * fold mode cannot tell from a real call's: no instrumented host) */
__attribute__((noinline)) static void *my_zalloc(void *opaque, unsigned items, unsigned size)
{
    (void)opaque;
    return malloc((size_t)items * size);
}

__attribute__((noinline)) static void my_zfree(void *opaque, void *p)
{
    (void)opaque;
    free(p);
}

/* png_read_destroy: inlined into its caller, with its hooks */
static inline void read_destroy(struct stream *s)
{
    stream_end(s);
}

__attribute__((noinline)) int read_struct(int i)
{
    struct stream s = { my_zalloc, my_zfree, NULL, NULL };
    if (stream_init(&s) != 0)
        return -1;
    memset(s.state, i & 0x7f, 64);
    int r = s.state[i & 63];
    read_destroy(&s);
    return r;
}

/* ---- a SAX callback through a pointer, from instrumented code --------------- */

struct sax {
    void (*cdata)(void *ctx, const char *text, int len);
};

static void on_cdata(void *ctx, const char *text, int len)
{
    *(int *)ctx += len + (text[0] == 'x');
}

__attribute__((noinline)) int parse_chunk(const struct sax *h, const char *text)
{
    int total = 0;
    for (int k = 0; k < 4; k++)
        h->cdata(&total, text + k, 2);
    return total;
}

/* ---- the first calls of a function in main ---------------------------------- */

__attribute__((noinline)) int *make_array(int n)
{
    return calloc((size_t)n, sizeof(int));
}

/* ---- a SIGCHLD handler run while the program waits in read() ---------------- */

static int job_pipe[2];
static int reaped;

static void child_handler(int sig)
{
    int saved = errno;
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
        reaped++;
        if (write(job_pipe[1], "+", 1) != 1)
            abort();
    }
    errno = saved;
}

/* make's: the token read with SIGCHLD let in, which interrupts it */
__attribute__((noinline)) int jobserver_acquire(void)
{
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_UNBLOCK, &chld, &old);
    char c;
    ssize_t n;
    while ((n = read(job_pipe[0], &c, 1)) < 0 && errno == EINTR)
        ;
    sigprocmask(SIG_SETMASK, &old, NULL);
    return (int)n;
}

__attribute__((noinline)) int run_job(int i)
{
    pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        usleep(1000 + (unsigned)(i % 3) * 500);
        _exit(0);
    }
    return jobserver_acquire();
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 30000;
    int rounds = argc > 2 ? atoi(argv[2]) : 2000;
    int jobs = argc > 3 ? atoi(argv[3]) : 40;
    if (n < 1 || n > (int)(sizeof keys / sizeof keys[0]) || rounds < 0 || jobs < 0)
        return 2;
    int *a = make_array(16), *b = make_array(16);
    if (!a || !b)
        return 1;

    srand(38);
    for (int i = 0; i < n; i++)
        keys[i] = rand();
    sort_keys(n);

    long sum = 0;
    static const struct sax handler = { on_cdata };
    for (int i = 0; i < rounds; i++) {
        sum += read_struct(i);
        sum += parse_chunk(&handler, i & 1 ? "xyzzy" : "plugh");
    }

    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = child_handler;
    sigemptyset(&sa.sa_mask);
    if (pipe(job_pipe) != 0 || sigaction(SIGCHLD, &sa, NULL) != 0)
        return 1;
    int got = 0;
    for (int i = 0; i < jobs; i++)
        got += run_job(i);

    printf("%d %d %ld %d %d\n", key_of(&keys[0]) >= key_of(&keys[n - 1]), a[0] + b[15], sum, got, reaped);
    free(a);
    free(b);
    return 0;
}
