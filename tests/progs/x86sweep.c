/* The runtime's x86-64 decoder (runtime/arch/x86_64/x86insn.c) on a whole ELF file, for
 * tests/integration/test_x86insn.py, which holds it against objdump.
 *
 *     x86sweep FILE
 *
 * Each function symbol (FUNC or IFUNC, of a size, in an executable
 * section) of .symtab and .dynsym, once per address range, is decoded by
 * linear sweep from its start to its end, as the runtime sweeps an unwind
 * table's range; for each, in address order, two lines:
 *
 *     F START END NAME
 *     I ADDR[:KIND:TARGET] ...
 *
 * the addresses in hex, one ADDR per instruction, with its kind (enum
 * cg_insn_kind) and its target or memory slot when it is not
 * CG_INSN_OTHER; when the decoder refuses the bytes at ADDR (or they would
 * run past END) the sweep stops with "X:ADDR" as the line's last word.
 * Exit status 0, or 1 when the file cannot be read as a 64-bit ELF file. */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "x86insn.h"

struct func {
    uint64_t start, end;
    const char *name;
};

static unsigned char *image;
static size_t image_size;

static int read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 1 << 20;
    image = malloc(cap);
    for (;;) {
        if (!image)
            return -1;
        image_size += fread(image + image_size, 1, cap - image_size, f);
        if (image_size < cap)
            break;
        cap *= 2;
        image = realloc(image, cap);
    }
    int err = ferror(f);
    fclose(f);
    return err ? -1 : 0;
}

static int in_image(uint64_t off, uint64_t len)
{
    return off <= image_size && len <= image_size - off;
}

static int by_range(const void *a, const void *b)
{
    const struct func *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: x86sweep FILE\n");
        return 2;
    }
    if (read_file(argv[1]) != 0 || image_size < sizeof(Elf64_Ehdr) || memcmp(image, ELFMAG, SELFMAG) != 0 ||
        image[EI_CLASS] != ELFCLASS64) {
        fprintf(stderr, "x86sweep: %s: not a 64-bit ELF file\n", argv[1]);
        return 1;
    }
    Elf64_Ehdr eh;
    memcpy(&eh, image, sizeof eh);
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || !in_image(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr))) {
        fprintf(stderr, "x86sweep: %s: no section headers\n", argv[1]);
        return 1;
    }
    Elf64_Shdr *sh = calloc(eh.e_shnum ? eh.e_shnum : 1, sizeof *sh);
    memcpy(sh, image + eh.e_shoff, (size_t)eh.e_shnum * sizeof *sh);

    struct func *funcs = NULL;
    size_t nfuncs = 0, cap = 0;
    for (unsigned s = 0; s < eh.e_shnum; s++) {
        if (sh[s].sh_type != SHT_SYMTAB && sh[s].sh_type != SHT_DYNSYM)
            continue;
        if (sh[s].sh_link >= eh.e_shnum || sh[s].sh_entsize != sizeof(Elf64_Sym) ||
            !in_image(sh[s].sh_offset, sh[s].sh_size))
            continue;
        const Elf64_Shdr *str = &sh[sh[s].sh_link];
        if (!in_image(str->sh_offset, str->sh_size))
            continue;
        for (uint64_t k = 0; k < sh[s].sh_size / sizeof(Elf64_Sym); k++) {
            Elf64_Sym sym;
            memcpy(&sym, image + sh[s].sh_offset + k * sizeof sym, sizeof sym);
            unsigned type = ELF64_ST_TYPE(sym.st_info);
            if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_size == 0 || sym.st_shndx == SHN_UNDEF ||
                sym.st_shndx >= eh.e_shnum)
                continue;
            const Elf64_Shdr *sec = &sh[sym.st_shndx];
            if (sec->sh_type != SHT_PROGBITS || !(sec->sh_flags & SHF_EXECINSTR) || sym.st_value < sec->sh_addr ||
                sym.st_value - sec->sh_addr > sec->sh_size ||
                sym.st_size > sec->sh_size - (sym.st_value - sec->sh_addr))
                continue;
            if (nfuncs == cap) {
                cap = cap ? 2 * cap : 1024;
                funcs = realloc(funcs, cap * sizeof *funcs);
                if (!funcs)
                    return 1;
            }
            const char *name = sym.st_name < str->sh_size ? (const char *)image + str->sh_offset + sym.st_name : "?";
            funcs[nfuncs++] = (struct func){ sym.st_value, sym.st_value + sym.st_size, name };
        }
    }
    if (nfuncs)
        qsort(funcs, nfuncs, sizeof *funcs, by_range);

    for (size_t f = 0; f < nfuncs; f++) {
        if (f > 0 && funcs[f].start == funcs[f - 1].start && funcs[f].end == funcs[f - 1].end)
            continue;
        /* the section that holds it, for its bytes in the file */
        const Elf64_Shdr *sec = NULL;
        for (unsigned s = 0; s < eh.e_shnum && !sec; s++)
            if (sh[s].sh_type == SHT_PROGBITS && (sh[s].sh_flags & SHF_EXECINSTR) && funcs[f].start >= sh[s].sh_addr &&
                funcs[f].end <= sh[s].sh_addr + sh[s].sh_size)
                sec = &sh[s];
        if (!sec || !in_image(sec->sh_offset + (funcs[f].start - sec->sh_addr), funcs[f].end - funcs[f].start))
            continue;
        const unsigned char *code = image + sec->sh_offset + (funcs[f].start - sec->sh_addr);
        printf("F %" PRIx64 " %" PRIx64 " %s\nI", funcs[f].start, funcs[f].end, funcs[f].name);
        for (uint64_t a = funcs[f].start; a < funcs[f].end;) {
            struct cg_insn in;
            unsigned len = cg_insn_decode(code + (a - funcs[f].start), funcs[f].end - a, (uintptr_t)a, &in);
            if (len == 0) {
                printf(" X:%" PRIx64, a);
                break;
            }
            if (in.kind == CG_INSN_OTHER)
                printf(" %" PRIx64, a);
            else
                printf(" %" PRIx64 ":%u:%" PRIxPTR, a, in.kind,
                       in.kind == CG_INSN_CALL_RIP || in.kind == CG_INSN_JMP_RIP ? in.mem : in.target);
            a += len;
        }
        putchar('\n');
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
