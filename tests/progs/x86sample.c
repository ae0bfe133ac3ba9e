/* Code for tests/integration/test_x86insn.py, which compiles it itself
 * (gcc's and clang's, -O2 and -O3, with -march=x86-64-v4, sapphirerapids,
 * bdver4, -finstrument-functions, -fno-plt) and holds the runtime's
 * decoder against objdump on the result: loops that vectorise (AVX-512,
 * masks, gathers, FMA, FP16, XOP), the bit and crypto instructions,
 * x87, jump tables, calls through pointers, tail calls. SAMPLE_ASM adds
 * encodings no compiler picks by itself, assembled by gas. Not built by
 * meson, never run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

void saxpy(float *restrict y, const float *restrict x, float a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

void fmad(double *restrict r, const double *restrict a, const double *restrict b, const double *restrict c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        r[i] = a[i] * b[i] + c[i];
}

void masked(float *restrict y, const float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (x[i] > 0.0f)
            y[i] = x[i] * 2.0f;
}

int64_t sum_i32(const int32_t *a, size_t n)
{
    int64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i];
    return s;
}

void widen(float *restrict out, const uint8_t *restrict in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = in[i] / 255.0f;
}

void gather(double *restrict out, const double *restrict t, const int *restrict idx, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = t[idx[i]];
}

void mul64(uint64_t *restrict r, const uint64_t *restrict a, const uint64_t *restrict b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        r[i] = a[i] * b[i] + (a[i] >> 3);
}

void rotate(uint32_t *restrict a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        a[i] = ((a[i] << 7) | (a[i] >> 25)) ^ (a[i] >> 5 & 0xff);
}

int count_eq(const int *a, int v, size_t n)
{
    int c = 0;
    for (size_t i = 0; i < n; i++)
        c += a[i] == v;
    return c;
}

void minmax_i16(int16_t *restrict lo, int16_t *restrict hi, const int16_t *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        lo[i] = lo[i] < x[i] ? lo[i] : x[i];
        hi[i] = hi[i] > x[i] ? hi[i] : x[i];
    }
}

unsigned bits(uint64_t x, unsigned s)
{
    return (unsigned)__builtin_popcountll(x) + (unsigned)__builtin_clzll(x | 1) +
           (unsigned)__builtin_ctzll(x | 1ull << 63) + (unsigned)(x >> s) + (unsigned)(x & (x - 1));
}

uint32_t load_be(const uint32_t *p)
{
    return __builtin_bswap32(*p);
}

long double x87(long double a, long double b)
{
    return a * b + a / b - (long double)(int64_t)a;
}

int choose(int k, int v)
{
    switch (k) {
    case 0:
        return v + 1;
    case 1:
        return v * 3;
    case 2:
        return v - 7;
    case 3:
        return v << 2;
    case 4:
        return v ^ 0x55;
    case 5:
        return v / 3;
    case 6:
        return v % 11;
    case 7:
        return -v;
    default:
        return 0;
    }
}

int variadic(int n, ...)
{
    va_list ap;
    va_start(ap, n);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += va_arg(ap, double);
    va_end(ap);
    return (int)s;
}

struct big {
    long v[40];
};

void copy_big(struct big *d, const struct big *s)
{
    *d = *s;
}

int (*volatile indirect)(int, int) = choose;

int calls(int k)
{
    return indirect(k, k + 1) + choose(k, 2);
}

static jmp_buf env;

int jumps(int k)
{
    if (setjmp(env))
        return 1;
    if (k > 3)
        longjmp(env, 1);
    return 0;
}

void fail(int k)
{
    if (k)
        __builtin_trap();
}

int tail(int k)
{
    return calls(k + 1);
}

#ifdef SAMPLE_FP16
void half(_Float16 *restrict a, const _Float16 *restrict b, const _Float16 *restrict c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        a[i] = a[i] * b[i] + c[i];
}
#endif

#ifdef SAMPLE_INTRINSICS
#include <immintrin.h>

__m128i crypto(__m128i a, __m128i b)
{
    a = _mm_aesenc_si128(a, b);
    a = _mm_aesdeclast_si128(a, b);
    a = _mm_clmulepi64_si128(a, b, 0x11);
    return _mm_sha256rnds2_epu32(a, b, _mm_sha1msg1_epu32(a, b));
}

unsigned long long misc(unsigned long long x, unsigned long long y, unsigned long long *p)
{
    unsigned long long r, hi;
    unsigned char c = _addcarryx_u64(0, x, y, &r);
    r += _pdep_u64(x, y) + _pext_u64(x, y) + _mulx_u64(x, y, &hi) + hi + c;
    r += _mm_crc32_u64(r, x);
    if (_rdrand64_step(p))
        r++;
    _mm_pause();
    __builtin_prefetch(p, 1, 3);
    __builtin_prefetch(p + 8, 0, 0);
    unsigned s;
    if ((s = _xbegin()) == _XBEGIN_STARTED) {
        *p = r;
        _xend();
    } else if (x == 7) {
        _xabort(3);
    }
    return r + s;
}
#endif

#if defined(SAMPLE_ASM)
/* Encodings no compiler picks by itself, assembled by gas. */
__asm__(".text\n"
        ".globl corners\n"
        ".type corners, @function\n"
        "corners:\n"
        "endbr64\n"
        "movabs $0x1122334455667788, %rax\n"
        "movabs 0x1122334455667788, %eax\n"
        "movabs %rax, 0x1122334455667788\n"
        "addr32 mov 0x11223344, %al\n"
        "enter $16, $1\n"
        "leave\n"
        "rep stosb\n"
        "rep movsq\n"
        "repne scasb\n"
        "lock cmpxchg %rcx, (%rdx)\n"
        "lock xadd %eax, 8(%rsp)\n"
        "xlat\n"
        "int $0x80\n"
        "int3\n"
        "pushw $0x1234\n"
        "imul $0x1234, %ax, %cx\n"
        "testw $0x1234, (%rax)\n"
        "testb $0x12, (%rax)\n"
        "test $0x12345678, %r9\n"
        "addw $0x1234, %fs:16(%rip)\n"
        "mov %gs:0x28, %rax\n"
        "mov %fs:(%rax,%rbx,8), %rcx\n"
        "lea 0(,%rax,4), %rcx\n"
        "lea 0x11223344(,%rax,4), %rcx\n"
        "mov 0x11223344, %eax\n"
        "mov (%r13), %eax\n"
        "mov (%r12), %eax\n"
        "jrcxz 1f\n"
        "loop 1f\n"
        "1: .byte 0x67\n"
        "call corners\n"
        "bnd jmp 2f\n"
        "2: notrack jmp *%rax\n"
        "bnd call *%rdx\n"
        "call *(%rax)\n"
        "call *0x10(%rax,%rbx,8)\n"
        "jmp *0x10(%rsp)\n"
        "call *corners@GOTPCREL(%rip)\n"
        "jmp *corners@GOTPCREL(%rip)\n"
        "ds jmp *corners@GOTPCREL(%rip)\n"
        "call *%fs:0x10\n"
        "lcall *(%rax)\n"
        "ljmp *(%rax)\n"
        "rep ret\n"
        "bnd ret\n"
        "ret $8\n"
        "lretq\n"
        "iretq\n"
        "hlt\n"
        "ud2\n"
        "ud1 %eax, %ecx\n"
        "ud0 %eax, %ecx\n"
        "cs nopw 0x0(%rax,%rax,1)\n"
        ".byte 0x66, 0x66, 0x66, 0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0\n"
        "nopl 0(%rax)\n"
        "xchg %ax, %ax\n"
        "pause\n"
        "fldt 16(%rsp)\n"
        "fmulp\n"
        "fistpll (%rax)\n"
        "fnstcw 2(%rsp)\n"
        "fwait\n"
        "cpuid\n"
        "rdtsc\n"
        "rdtscp\n"
        "syscall\n"
        "xgetbv\n"
        "rdfsbase %rax\n"
        "wrgsbase %rcx\n"
        "mfence\n"
        "lfence\n"
        "clflushopt (%rax)\n"
        "clwb (%rax)\n"
        "prefetchw (%rax)\n"
        "prefetchnta 64(%rax)\n"
        "movbe (%rax), %ecx\n"
        "crc32b %cl, %eax\n"
        "crc32q (%rax), %rax\n"
        "popcnt %rax, %rcx\n"
        "lzcnt %eax, %ecx\n"
        "tzcnt (%rax), %ecx\n"
        "adcx %rax, %rcx\n"
        "adox %rax, %rcx\n"
        "rdrand %eax\n"
        "rdseed %rax\n"
        "rdpid %rax\n"
        "xbegin 3f\n"
        "xabort $5\n"
        "xend\n"
        "3: xtest\n"
        "extrq $4, $8, %xmm1\n"
        "insertq $4, $8, %xmm2, %xmm1\n"
        "bextr $0x1234, %eax, %ecx\n"
        "blcfill %rax, %rcx\n"
        "vprotd $3, %xmm1, %xmm2\n"
        "vpcmov %xmm1, %xmm2, %xmm3, %xmm4\n"
        "vfmaddps %xmm1, %xmm2, %xmm3, %xmm4\n"
        "pfadd %mm1, %mm0\n"
        "pshufw $0x1b, %mm1, %mm0\n"
        "pshufd $0x1b, %xmm1, %xmm0\n"
        "psrlq $3, %xmm0\n"
        "palignr $3, %xmm1, %xmm0\n"
        "pcmpestri $0x1b, (%rax), %xmm0\n"
        "roundsd $4, %xmm1, %xmm0\n"
        "pinsrw $2, %eax, %xmm0\n"
        "pextrw $2, %xmm0, %eax\n"
        "shufps $0x1b, %xmm1, %xmm0\n"
        "cmpps $1, %xmm1, %xmm0\n"
        "shld $3, %rax, %rcx\n"
        "bt $3, %rax\n"
        "vzeroupper\n"
        "vzeroall\n"
        "vpshufd $0x1b, %ymm1, %ymm0\n"
        "vpsrld $3, %ymm1, %ymm0\n"
        "vcmpps $1, %ymm1, %ymm2, %ymm0\n"
        "vpermq $0x1b, %ymm1, %ymm0\n"
        "vpblendd $3, (%rax,%rbx,4), %ymm1, %ymm0\n"
        "vgatherdps %ymm2, (%rax,%ymm1,4), %ymm0\n"
        "vfmadd231pd %ymm2, %ymm1, %ymm0\n"
        "vaddps %ymm8, %ymm9, %ymm10\n"
        "vmovdqu64 (%rax), %zmm0{%k1}{z}\n"
        "vaddps (%rax){1to16}, %zmm1, %zmm2\n"
        "vaddps {rn-sae}, %zmm1, %zmm2, %zmm3\n"
        "vpternlogd $0x96, %zmm1, %zmm2, %zmm3\n"
        "vpcmpd $1, %zmm1, %zmm2, %k1\n"
        "vpshufd $0x1b, %zmm1, %zmm0\n"
        "vpsrlq $3, %zmm1, %zmm30\n"
        "vcmpps $1, 64(%rax), %zmm2, %k2\n"
        "vpinsrw $2, %eax, %xmm17, %xmm18\n"
        "vextracti64x4 $1, %zmm0, 32(%rsp)\n"
        "kmovw %k1, %eax\n"
        "kortestw %k1, %k2\n"
        "vaddph %zmm1, %zmm2, %zmm3\n"
        "vfmadd231ph (%rax), %zmm1, %zmm2\n"
        "vcmpph $1, %zmm1, %zmm2, %k1\n"
        "vmovsh (%rax), %xmm1\n"
        "aesenc %xmm1, %xmm0\n"
        "vaesenc %zmm1, %zmm2, %zmm3\n"
        "sha256rnds2 %xmm1, %xmm0\n"
        "pclmulqdq $0x11, %xmm1, %xmm0\n"
        "vpclmulqdq $0x11, %zmm1, %zmm2, %zmm3\n"
        "gf2p8affineqb $1, %xmm1, %xmm0\n"
        "tilezero %tmm1\n"
        "mov %cr0, %rax\n"
        ".byte 0x0f, 0x20, 0x00\n" /* mov %cr0, %rax: mod 00 still names a register */
        "mov %rax, %dr7\n"
        "in $0x60, %al\n"
        "out %al, $0x80\n"
        "int1\n"
        "sysretq\n"
        "jmp corners\n"
        ".size corners, .-corners\n");
#endif
