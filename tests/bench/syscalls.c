/* A program that spends most of its CPU time in the kernel, on behalf of
 * a few functions of its own (issue 40, item 4: the function that makes
 * the system calls must get the share perf gives it).
 *
 *   syscalls ROUNDS [DIR]
 *
 * Each round:
 *   - log_records formats 64 records of text (user time) and writes each
 *     with write(2) into a file in DIR (default: the working directory),
 *     4 KiB each, rewound every 256 KiB so that it stays in the page cache: the copy
 *     into the cache is system time charged to log_records;
 *   - sync_log calls fdatasync(2) every 16 rounds (system time, and a wait
 *     that is not CPU time for either profiler);
 *   - draw_random takes 64 KiB from getrandom(2) (the kernel's ChaCha20:
 *     system time charged to draw_random);
 *   - through_pipe writes 32 KiB into a pipe with writev(2) and reads it
 *     back with readv(2) (two copies in the kernel, no other thread);
 *   - checksum walks the random bytes (user time, for a share of the
 *     program's own to compare).
 * Prints a checksum, so that the work cannot be left out.
 *
 * Each libc wrapper that makes a system call (write, getrandom, writev,
 * readv, fdatasync) is called from one function only: perf's DWARF
 * unwinding stops in the wrapper in a share of its samples in the kernel
 * that changes from run to run (perf 6.1 here: from 10% to 60%), and
 * tests/bench/accuracy.py charges such a sample to the wrapper's one
 * caller rather than drop it (prog_syscalls). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <unistd.h>

static char random_bytes[64 << 10];
static char pipe_bytes[32 << 10];

__attribute__((noinline)) static void fail(const char *what)
{
    perror(what);
    exit(1);
}

__attribute__((noinline)) static void log_records(int fd, unsigned round, off_t *at)
{
    char line[4096];
    memset(line, '.', sizeof line);
    line[sizeof line - 1] = '\n';
    for (unsigned i = 0; i < 64; i++) {
        int n = snprintf(line, 64, "round %u record %u:", round, i);
        line[n] = ' ';
        /* write(2) called from here only (see the head comment) */
        for (size_t done = 0; done < sizeof line;) {
            ssize_t w = write(fd, line + done, sizeof line - done);
            if (w < 0)
                fail("write");
            done += (size_t)w;
        }
        *at += (off_t)sizeof line;
        if (*at > (256 << 10)) {
            if (lseek(fd, 0, SEEK_SET) < 0)
                fail("lseek");
            *at = 0;
        }
    }
}

__attribute__((noinline)) static void sync_log(int fd)
{
    if (fdatasync(fd) < 0)
        fail("fdatasync");
}

__attribute__((noinline)) static void draw_random(void)
{
    size_t got = 0;
    while (got < sizeof random_bytes) {
        ssize_t r = getrandom(random_bytes + got, sizeof random_bytes - got, 0);
        if (r <= 0)
            fail("getrandom");
        got += (size_t)r;
    }
}

__attribute__((noinline)) static void through_pipe(const int fds[2])
{
    memset(pipe_bytes, 'p', sizeof pipe_bytes);
    /* a pipe holds 64 KiB: 32 KiB goes in at once */
    for (size_t done = 0; done < sizeof pipe_bytes;) {
        struct iovec v = { pipe_bytes + done, sizeof pipe_bytes - done };
        ssize_t w = writev(fds[1], &v, 1);
        if (w < 0)
            fail("writev pipe");
        done += (size_t)w;
    }
    for (size_t done = 0; done < sizeof pipe_bytes;) {
        struct iovec v = { pipe_bytes + done, sizeof pipe_bytes - done };
        ssize_t r = readv(fds[0], &v, 1);
        if (r <= 0)
            fail("readv pipe");
        done += (size_t)r;
    }
}

__attribute__((noinline)) static unsigned long checksum(void)
{
    unsigned long h = 1469598103934665603UL;
    for (size_t i = 0; i < sizeof random_bytes; i++)
        h = (h ^ (unsigned char)random_bytes[i]) * 1099511628211UL;
    return h;
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 200;
    const char *dir = argc > 2 ? argv[2] : ".";
    char path[4096];
    snprintf(path, sizeof path, "%s/syscalls-%d.log", dir, (int)getpid());
    int log = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log < 0)
        fail(path);
    unlink(path);
    int fds[2];
    if (pipe(fds) < 0)
        fail("pipe");
    off_t at = 0;
    unsigned long sum = 0;
    for (unsigned r = 0; r < rounds; r++) {
        log_records(log, r, &at);
        if (r % 16 == 15)
            sync_log(log);
        draw_random();
        through_pipe(fds);
        sum += checksum();
    }
    printf("%lu\n", sum);
    return 0;
}
