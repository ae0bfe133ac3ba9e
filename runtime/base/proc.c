#define _GNU_SOURCE
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util.h"

struct cg_options cg_opts;
int cg_collecting;
int cg_sampling;
uint32_t cg_paths_bound;
int cg_latency;
uint32_t cg_comp_in, cg_comp_out;
uint32_t cg_comp_gin, cg_comp_gout;
int cg_fast_mode;

enum { CMDLINE_MAX = 64 * 1024 };
static const char *cmdline = "";
static pid_t pid;
static char cwd[4096];
static long names_pid;
static int internal_threads;

/* /proc/self/cmdline with its NULs turned into spaces. mmap, not malloc:
 * this may run from the first hook, inside the program's own allocator. */
static void read_cmdline(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        /* no /proc: the program's path as it was started (AT_EXECFN) */
        const char *exe = (const char *)getauxval(AT_EXECFN);
        if (exe)
            cmdline = (char *)exe;
        return;
    }
    char *buf = mmap(NULL, CMDLINE_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        close(fd);
        return;
    }
    size_t len = 0;
    ssize_t n;
    while (len < CMDLINE_MAX - 1 && (n = read(fd, buf + len, CMDLINE_MAX - 1 - len)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    while (len > 0 && buf[len - 1] == 0)
        len--;
    for (size_t i = 0; i < len; i++)
        if (buf[i] == 0 || buf[i] == '\n' || buf[i] == '\r')
            buf[i] = ' ';
    buf[len] = 0;
    cmdline = buf;
}

void cg_proc_read_identity(void)
{
    read_cmdline();
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = 0;
    pid = getpid();
}

const char *cg_proc_cmdline(void)
{
    return cmdline;
}

const char *cg_proc_cwd(void)
{
    return cwd;
}

int cg_proc_room(size_t bytes)
{
    int saved = errno;
    void *m = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m != MAP_FAILED)
        munmap(m, bytes);
    errno = saved;
    return m != MAP_FAILED;
}

/* cg_proc_peek's way: process_vm_readv on this process, which fails whole
 * on bytes not mapped or not readable, with no signal. Where the system
 * call itself is refused (ENOSYS: qemu-user does not emulate it; EPERM:
 * a seccomp filter, as Docker's default one without CAP_SYS_PTRACE), a
 * pipe of the runtime's instead, as libunwind checks an address: write()
 * copies the bytes into the pipe, or fails the same way (EFAULT), and
 * read() takes them back. One pipe for the process, taken by whoever sets
 * its flag first (a thread, or a signal handler that interrupted one): a
 * peek that finds it taken fails as an unreadable address does, and its
 * caller does without (no waiting, in a hook or a handler). The pipe's two
 * descriptors are made at the first need, close-on-exec, non-blocking, at
 * the top of the descriptor range (cg_fd_above); a forked child makes its
 * own (cg_proc_forked). */
static int peek_by_pipe;
static int peek_fds[2] = { -1, -1 };
static int peek_busy;

static int peek_pipe(uintptr_t addr, void *buf, size_t len)
{
    if (__atomic_exchange_n(&peek_busy, 1, __ATOMIC_ACQUIRE))
        return -1;
    int rc = -1;
    /* the system call, not pipe2(): the runtime wraps that (interpose.c) */
    if (peek_fds[0] < 0 && syscall(SYS_pipe2, peek_fds, O_CLOEXEC | O_NONBLOCK) == 0) {
        peek_fds[0] = cg_fd_above(peek_fds[0]);
        peek_fds[1] = cg_fd_above(peek_fds[1]);
    }
    if (peek_fds[0] >= 0) {
        /* all of it, or what came before an unreadable byte (or filled
         * the pipe): read back in either case, the pipe left empty */
        ssize_t w = write(peek_fds[1], (const void *)addr, len);
        if (w > 0) {
            ssize_t r = read(peek_fds[0], buf, (size_t)w);
            rc = r == (ssize_t)len ? 0 : -1;
        }
    }
    __atomic_store_n(&peek_busy, 0, __ATOMIC_RELEASE);
    return rc;
}

int cg_proc_peek(uintptr_t addr, void *buf, size_t len)
{
    int saved = errno, rc;
    if (!__atomic_load_n(&peek_by_pipe, __ATOMIC_RELAXED)) {
        struct iovec local = {buf, len}, remote = {(void *)addr, len};
        long n = syscall(SYS_process_vm_readv, getpid(), &local, 1UL, &remote, 1UL, 0UL);
        if (n >= 0 || (errno != ENOSYS && errno != EPERM)) {
            errno = saved;
            return n == (long)len ? 0 : -1;
        }
        __atomic_store_n(&peek_by_pipe, 1, __ATOMIC_RELAXED);
    }
    rc = peek_pipe(addr, buf, len);
    errno = saved;
    return rc;
}

pid_t cg_proc_pid(void)
{
    return pid;
}

void cg_proc_forked(void)
{
    pid = getpid();
    internal_threads = 0;
    /* the parent's peek pipe, which the two processes would share: the
     * child makes its own at its first need (a thread of the parent's
     * that held it does not exist here) */
    if (peek_fds[0] >= 0) {
        close(peek_fds[0]);
        close(peek_fds[1]);
        peek_fds[0] = peek_fds[1] = -1;
    }
    __atomic_store_n(&peek_busy, 0, __ATOMIC_RELEASE);
}

long cg_proc_names_pid(void)
{
    return names_pid ? names_pid : (long)getpid();
}

void cg_proc_set_names_pid(long p)
{
    names_pid = p;
}

void cg_proc_internal_threads_add(int delta)
{
    __atomic_fetch_add(&internal_threads, delta, __ATOMIC_ACQ_REL);
}

unsigned cg_proc_program_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    unsigned n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    unsigned internal = (unsigned)__atomic_load_n(&internal_threads, __ATOMIC_ACQUIRE);
    return n > internal ? n - internal : n;
}

void cg_proc_thread_comm(pid_t tid, char *dst, size_t size)
{
    dst[0] = 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/comm", (long)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, dst, size - 1);
    close(fd);
    if (n <= 0) {
        dst[0] = 0;
        return;
    }
    dst[n] = 0;
    dst[strcspn(dst, "\n")] = 0;
}

/* ---- whether the process is instrumented ---------------------------------
 * An object compiled with -finstrument-functions calls the hooks through
 * its PLT or GOT: a relocation against __cyg_profile_func_enter in its
 * dynamic section. Read from memory (the loader's own view), no file. */

#if __ELF_NATIVE_CLASS == 64
#define R_SYM ELF64_R_SYM
#else
#define R_SYM ELF32_R_SYM
#endif

struct instr_scan {
    uintptr_t own; /* an address in the runtime's own object: not counted */
    int found;
};

/* The loader relocates most of the dynamic section's addresses in place;
 * the vDSO's and some loaders' stay relative to the object's base. */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, uintptr_t v)
{
    return v < info->dlpi_addr ? v + info->dlpi_addr : v;
}

static int relocs_name_enter(const ElfW(Sym) * sym, const char *str, size_t strsz, uintptr_t rel, size_t size,
                             int rela)
{
    static const char enter[] = "__cyg_profile_func_enter";
    size_t step = rela ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
    for (size_t off = 0; rel && off + step <= size; off += step) {
        ElfW(Xword) r_info = rela ? ((const ElfW(Rela) *)(rel + off))->r_info : ((const ElfW(Rel) *)(rel + off))->r_info;
        size_t idx = R_SYM(r_info);
        if (idx == 0)
            continue;
        size_t name = sym[idx].st_name;
        if (name < strsz && strsz - name >= sizeof enter && memcmp(str + name, enter, sizeof enter) == 0)
            return 1;
    }
    return 0;
}

static int scan_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct instr_scan *s = data;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        else if (ph->p_type == PT_LOAD && s->own - info->dlpi_addr - ph->p_vaddr < ph->p_memsz)
            return 0; /* the runtime itself */
    }
    if (!dyn)
        return 0;
    uintptr_t symtab = 0, strtab = 0, jmprel = 0, rela = 0, rel = 0;
    size_t strsz = 0, pltrelsz = 0, relasz = 0, relsz = 0;
    int pltrela = 1;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB: symtab = dyn_addr(info, dyn->d_un.d_ptr); break;
        case DT_STRTAB: strtab = dyn_addr(info, dyn->d_un.d_ptr); break;
        case DT_STRSZ: strsz = dyn->d_un.d_val; break;
        case DT_JMPREL: jmprel = dyn_addr(info, dyn->d_un.d_ptr); break;
        case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
        case DT_PLTREL: pltrela = dyn->d_un.d_val == DT_RELA; break;
        case DT_RELA: rela = dyn_addr(info, dyn->d_un.d_ptr); break;
        case DT_RELASZ: relasz = dyn->d_un.d_val; break;
        case DT_REL: rel = dyn_addr(info, dyn->d_un.d_ptr); break;
        case DT_RELSZ: relsz = dyn->d_un.d_val; break;
        default: break;
        }
    }
    if (!symtab || !strtab)
        return 0;
    const ElfW(Sym) *sym = (const ElfW(Sym) *)symtab;
    const char *str = (const char *)strtab;
    /* through the PLT (the usual), or the GOT (-fno-plt) */
    s->found = relocs_name_enter(sym, str, strsz, jmprel, pltrelsz, pltrela) ||
               relocs_name_enter(sym, str, strsz, rela, relasz, 1) || relocs_name_enter(sym, str, strsz, rel, relsz, 0);
    return s->found;
}

struct code_find {
    uintptr_t addr, lo, hi;
    int main_program, found;
};

static int find_code(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct code_find *f = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || f->addr - lo >= ph->p_memsz)
            continue;
        f->lo = lo;
        f->hi = lo + ph->p_memsz;
        f->main_program = info->dlpi_name == NULL || info->dlpi_name[0] == '\0';
        f->found = 1;
        return 1;
    }
    return 0;
}

int cg_proc_code_segment(uintptr_t addr, uintptr_t *lo, uintptr_t *hi, int *main_program)
{
    struct code_find f = { addr, 0, 0, 0, 0 };
    dl_iterate_phdr(find_code, &f);
    *lo = f.lo;
    *hi = f.hi;
    *main_program = f.main_program;
    return f.found;
}

int cg_proc_instrumented(const void *own)
{
    struct instr_scan s = { (uintptr_t)own, 0 };
    dl_iterate_phdr(scan_object, &s);
    return s.found;
}
