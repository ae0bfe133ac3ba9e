/* Time off the CPU: see offcpu.h.
 *
 * Why a ring buffer of switch records: the time a thread is descheduled or
 * blocked is known exactly by the kernel, which writes a record when it
 * switches the thread out and another when it switches it back in
 * (perf_event_open with context_switch, a software dummy event: no
 * counter, no sampling, allowed for one's own threads at
 * perf_event_paranoid 2). Reading the thread's CPU clock at every hook
 * instead is a system call (the vDSO has no thread CPU clock): 100s of ns
 * a hook. Here the hooks pay one load and a compare until the thread is
 * switched. The records' times are CLOCK_MONOTONIC; only their differences
 * are used (the time off the CPU), charged to the segment running when the
 * records came: whatever the thread did since the last hook was the top
 * frame's. */
#define _GNU_SOURCE
#include "offcpu.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "costs.h"
#include "reading.h"
#include "thread.h"
#include "util.h"

enum { DATA_PAGES = 8 };

static int enabled;
static int refused_said;
static long page;

CG_NOINSTR __attribute__((noinline, used)) void cgprof_off_cpu(void)
{
    __asm__ volatile("");
}

void cg_offcpu_init(int on)
{
    enabled = on;
    page = sysconf(_SC_PAGESIZE);
}

void cg_offcpu_thread_start(struct cg_thread *t)
{
    if (!enabled || t->offcpu.switch_ring)
        return;
    int saved = errno;
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.context_switch = 1;
    a.sample_id_all = 1;
    a.sample_type = PERF_SAMPLE_TIME;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    void *ring = MAP_FAILED;
    size_t len = (size_t)page * (1 + DATA_PAGES);
    if (fd >= 0)
        ring = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
    if (ring == MAP_FAILED) {
        int err = errno;
        if (fd >= 0)
            syscall(SYS_close, fd);
        if (!__atomic_exchange_n(&refused_said, 1, __ATOMIC_ACQ_REL)) {
            /* system calls only: a thread's first hook may be anywhere */
            char paranoid[16] = "?";
            long pfd = syscall(SYS_openat, AT_FDCWD, "/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
            if (pfd >= 0) {
                long n = syscall(SYS_read, pfd, paranoid, sizeof paranoid - 1);
                paranoid[n > 0 ? n : 0] = 0;
                paranoid[strcspn(paranoid, "\n")] = 0;
                if (!paranoid[0])
                    snprintf(paranoid, sizeof paranoid, "?");
                syscall(SYS_close, pfd);
            }
            /* no perf events at all (ENOSYS: a kernel without them, or
             * qemu-user, which does not emulate the system call): the
             * paranoid level is no help */
            if (err == ENOSYS)
                cg_warn("CGPROF_OFF_CPU=1: this system has no perf events for the context switches it needs "
                        "(%s: %s): time off the CPU stays in the functions' own time",
                        fd >= 0 ? "mmap" : "perf_event_open", strerror(err));
            else
                cg_warn("CGPROF_OFF_CPU=1: the kernel refuses the context switch events it needs (%s: %s; "
                        "/proc/sys/kernel/perf_event_paranoid is %s, 2 or less is needed without CAP_PERFMON): "
                        "time off the CPU stays in the functions' own time",
                        fd >= 0 ? "mmap" : "perf_event_open", strerror(err), paranoid);
        }
        errno = saved;
        return;
    }
    /* The mapping holds the event (the kernel keeps a file that a mapping
     * refers to): no descriptor stays for the program to see, or to close
     * and reuse under us (a daemon's close of fds 3-1023 then its own
     * opens: the number closed by ours later was the program's file). */
    syscall(SYS_close, fd);
    t->costs.switch_seen = 0;
    /* published last: the hooks compare the head with switch_seen */
    if (cg_costs_watch(&t->costs, (const volatile uint64_t *)&((struct perf_event_mmap_page *)ring)->data_head) != 0) {
        munmap(ring, len);
        errno = saved;
        return;
    }
    t->offcpu.switch_ring = ring;
    errno = saved;
}

void cg_offcpu_thread_stop(struct cg_thread *t)
{
    if (!t->offcpu.switch_ring)
        return;
    /* The mapping, and with it the event, stays until the thread's state
     * goes (a dump may be reading it: cg_offcpu_pending). */
    cg_costs_unwatch(&t->costs);
}

void cg_offcpu_thread_release(struct cg_thread *t)
{
    if (!t->offcpu.switch_ring)
        return;
    int saved = errno;
    /* not in a child of a fork that ran no atfork handler: not mapped
     * there, and the address may hold the child's own memory by now */
    if (cg_costs_ring_mine(&t->costs))
        munmap(t->offcpu.switch_ring, (size_t)page * (1 + DATA_PAGES));
    t->offcpu.switch_ring = NULL;
    errno = saved;
}

void cg_offcpu_forked(struct cg_thread *t)
{
    if (!t || !t->offcpu.switch_ring)
        return;
    /* the mapping and the event are the parent's thread's */
    cg_costs_unwatch(&t->costs);
    munmap(t->offcpu.switch_ring, (size_t)page * (1 + DATA_PAGES));
    t->offcpu.switch_ring = NULL;
    cg_offcpu_thread_start(t);
}

/* The switch records of ring m from *tail to head: the time off the CPU
 * between each switch out and its switch in, *out the time of a switch out
 * not yet matched (0: none), carried from one reading to the next. *tail
 * ends after the last record read; a record that does not look like one
 * ends the reading. */
static uint64_t scan(const struct perf_event_mmap_page *m, uint64_t *tail, uint64_t head, uint64_t *out)
{
    const unsigned char *data = (const unsigned char *)m + page;
    uint64_t size = (uint64_t)page * DATA_PAGES;
    uint64_t off = 0, at = *tail;
    while (at < head) {
        struct perf_event_header h;
        unsigned char rec[64];
        for (size_t i = 0; i < sizeof h; i++)
            ((unsigned char *)&h)[i] = data[(at + i) % size];
        if (h.size < sizeof h || h.size > sizeof rec)
            break;
        for (size_t i = 0; i < h.size; i++)
            rec[i] = data[(at + i) % size];
        at += h.size;
        if (h.type != PERF_RECORD_SWITCH || h.size < sizeof h + 8)
            continue;
        uint64_t time;
        memcpy(&time, rec + h.size - 8, 8); /* sample_id: the time, last */
        if (h.misc & PERF_RECORD_MISC_SWITCH_OUT) {
            *out = time;
        } else if (*out && time > *out) {
            off += time - *out;
            *out = 0;
        }
    }
    *tail = at;
    return off;
}

void cg_offcpu_drain(struct cg_thread *t, uint64_t now)
{
    struct perf_event_mmap_page *m = t->offcpu.switch_ring;
    struct cg_costs *c = &t->costs;
    if (!m)
        return;
    uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = m->data_tail;
    uint64_t out = t->offcpu.switched_out;
    uint64_t off = scan(m, &tail, head, &out);
    __atomic_store_n(&t->offcpu.switched_out, out, __ATOMIC_RELAXED); /* a dump reads it: cg_offcpu_pending */
    __atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
    c->switch_seen = head;
    if (!off || c->depth == 0)
        return;
    /* on the top frame's running segment, at most all of it */
    struct cg_frame *top = &c->frames[c->depth - 1];
    if (now <= top->t_last)
        return;
    if (off > now - top->t_last)
        off = now - top->t_last;
    uintptr_t fn = (uintptr_t)cgprof_off_cpu, pos = c->selfs[top->self].addr;
    if (cg_costs_sample(c, &fn, &pos, 1, fn, off, 1, t->offcpu.offcpu_last, &t->offcpu.offcpu_nlast) == 0)
        top->t_last += off;
}

uint64_t cg_offcpu_pending(const struct cg_thread *t)
{
    const struct perf_event_mmap_page *m = __atomic_load_n(&t->offcpu.switch_ring, __ATOMIC_ACQUIRE);
    if (!m || !cg_costs_watching(&t->costs))
        return 0;
    /* The records from the owner's position on: the owner may drain them
     * meanwhile (it is running then: little is pending) and the kernel
     * reuse their place, so a record that does not look like one ends the
     * reading. */
    uint64_t tail = __atomic_load_n(&m->data_tail, __ATOMIC_ACQUIRE);
    uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
    uint64_t out = __atomic_load_n(&t->offcpu.switched_out, __ATOMIC_RELAXED);
    if (head - tail > (uint64_t)page * DATA_PAGES)
        return 0;
    uint64_t off = scan(m, &tail, head, &out);
    if (out) { /* still off the CPU (the records' clock: CLOCK_MONOTONIC) */
        uint64_t now = cg_mono_ns();
        if (now > out)
            off += now - out;
    }
    return off;
}

/* Now less the time off the CPU since the last hook (see offcpu.h): the
 * thread's next hook charges it to cgprof_off_cpu, in a later part. */
uint64_t cg_offcpu_read_time(const struct cg_thread *t, uint64_t *pending)
{
    const struct cg_costs *c = &t->costs;
    uint64_t off = c->vclock ? 0 : cg_offcpu_pending(t);
    if (!off)
        return CG_NOW;
    uint64_t now = cg_costs_time_of(c, cg_clock_now());
    uint32_t depth = __atomic_load_n(&c->depth, __ATOMIC_ACQUIRE);
    const struct cg_frame *frames = __atomic_load_n(&c->frames, __ATOMIC_SEQ_CST);
    uint64_t floor = depth ? __atomic_load_n(&frames[depth - 1].t_last, __ATOMIC_RELAXED) : 0;
    if (now < floor)
        return now;
    if (off > now - floor)
        off = now - floor;
    *pending = off;
    return now - off;
}
