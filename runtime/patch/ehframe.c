/* FDE ranges from .eh_frame_hdr: see ehframe.h. The formats are the LSB's
 * ("Exception Frames", .eh_frame_hdr and .eh_frame), with DWARF's pointer
 * encodings (DW_EH_PE_*). */
#define _GNU_SOURCE
#include "ehframe.h"

#include <link.h>

#include <string.h>

enum {
    PE_absptr = 0x00,
    PE_uleb128 = 0x01,
    PE_udata2 = 0x02,
    PE_udata4 = 0x03,
    PE_udata8 = 0x04,
    PE_sleb128 = 0x09,
    PE_sdata2 = 0x0a,
    PE_sdata4 = 0x0b,
    PE_sdata8 = 0x0c,
    PE_pcrel = 0x10,
    PE_datarel = 0x30,
    PE_omit = 0xff,
};

/* A value of encoding enc's format (its low 4 bits) at *p, which moves
 * past it; the application (pcrel, datarel) is the caller's. -1 for a
 * format not known. */
static int read_format(const unsigned char **p, unsigned enc, uint64_t *out)
{
    const unsigned char *q = *p;
    switch (enc & 0x0f) {
    case PE_absptr:
    case PE_udata8:
    case PE_sdata8:
        memcpy(out, q, 8);
        q += 8;
        break;
    case PE_udata4: {
        uint32_t v;
        memcpy(&v, q, 4);
        *out = v;
        q += 4;
        break;
    }
    case PE_sdata4: {
        int32_t v;
        memcpy(&v, q, 4);
        *out = (uint64_t)(int64_t)v;
        q += 4;
        break;
    }
    case PE_udata2: {
        uint16_t v;
        memcpy(&v, q, 2);
        *out = v;
        q += 2;
        break;
    }
    case PE_sdata2: {
        int16_t v;
        memcpy(&v, q, 2);
        *out = (uint64_t)(int64_t)v;
        q += 2;
        break;
    }
    case PE_uleb128:
    case PE_sleb128: {
        uint64_t v = 0;
        unsigned shift = 0;
        unsigned char b;
        do {
            b = *q++;
            if (shift < 64)
                v |= (uint64_t)(b & 0x7f) << shift;
            shift += 7;
        } while (b & 0x80);
        if ((enc & 0x0f) == PE_sleb128 && shift < 64 && (b & 0x40))
            v |= ~(uint64_t)0 << shift;
        *out = v;
        break;
    }
    default:
        return -1;
    }
    *p = q;
    return 0;
}

static uint64_t uleb(const unsigned char **p)
{
    uint64_t v;
    read_format(p, PE_uleb128, &v);
    return v;
}

/* The encoding of the FDE's addresses, from its CIE's augmentation ('R');
 * absptr when it has none; -1 for an augmentation not understood (the
 * data after it cannot be skipped). */
static int cie_fde_encoding(const unsigned char *cie)
{
    uint32_t len32;
    memcpy(&len32, cie, 4);
    const unsigned char *p = cie + 4;
    if (len32 == 0xffffffffu)
        p += 8;
    uint32_t id;
    memcpy(&id, p, 4);
    p += 4;
    if (id != 0)
        return -1; /* not a CIE */
    unsigned version = *p++;
    const char *aug = (const char *)p;
    size_t auglen = strnlen(aug, 16);
    if (auglen == 16)
        return -1;
    p += auglen + 1;
    if (aug[0] != 'z')
        return aug[0] == '\0' ? PE_absptr : -1;
    uleb(&p); /* code alignment */
    uint64_t ignored;
    read_format(&p, PE_sleb128, &ignored); /* data alignment */
    if (version == 1)
        p++; /* return address register */
    else
        uleb(&p);
    uleb(&p); /* augmentation data length */
    for (const char *a = aug + 1; *a; a++) {
        switch (*a) {
        case 'R':
            return *p;
        case 'P': {
            unsigned enc = *p++;
            if (read_format(&p, enc, &ignored) != 0)
                return -1;
            break;
        }
        case 'L':
            p++;
            break;
        case 'S':
        case 'B':
            break;
        default:
            return -1;
        }
    }
    return PE_absptr;
}

/* The range of the FDE at fde: 0, or -1 when it cannot be read. */
static int fde_range(const unsigned char *fde, uintptr_t *begin, uintptr_t *end)
{
    uint32_t len32;
    memcpy(&len32, fde, 4);
    const unsigned char *p = fde + 4;
    if (len32 == 0)
        return -1; /* the terminator */
    if (len32 == 0xffffffffu)
        p += 8;
    uint32_t cie_off;
    memcpy(&cie_off, p, 4);
    if (cie_off == 0)
        return -1; /* a CIE */
    int enc = cie_fde_encoding(p - cie_off);
    p += 4;
    if (enc < 0 || (enc & 0x70) > PE_pcrel || (enc & 0x80))
        return -1;
    const unsigned char *at = p;
    uint64_t b, range;
    if (read_format(&p, (unsigned)enc, &b) != 0 || read_format(&p, (unsigned)enc & 0x0f, &range) != 0)
        return -1;
    if ((enc & 0x70) == PE_pcrel)
        b += (uintptr_t)at;
    *begin = (uintptr_t)b;
    *end = (uintptr_t)(b + range);
    return 0;
}

int cg_fde_table(const unsigned char *hdr, size_t hdr_size, const unsigned char **table, size_t *count)
{
    /* version, eh_frame_ptr_enc, fde_count_enc, table_enc; then the
     * encoded eh_frame_ptr and fde_count; then the table, sorted by
     * initial location. Linkers write the table as pairs of sdata4
     * relative to hdr (datarel): the only form searched here. */
    if (!hdr || (hdr_size && hdr_size < 4 + 2 * 8) || hdr[0] != 1 || hdr[3] != (PE_datarel | PE_sdata4) ||
        hdr[2] == PE_omit)
        return -1;
    const unsigned char *p = hdr + 4;
    uint64_t v, n;
    if (read_format(&p, hdr[1], &v) != 0 || read_format(&p, hdr[2], &n) != 0)
        return -1;
    if ((hdr[2] & 0x70) != 0 && (hdr[2] & 0x70) != PE_pcrel)
        return -1;
    if (n == 0 || n > SIZE_MAX / 8 || (hdr_size && (size_t)(p - hdr) + n * 8 > hdr_size))
        return -1;
    *table = p;
    *count = (size_t)n;
    return 0;
}

int cg_fde_range(const unsigned char *hdr, size_t hdr_size, uintptr_t pc, uintptr_t *begin, uintptr_t *end)
{
    const unsigned char *table;
    size_t count;
    if (cg_fde_table(hdr, hdr_size, &table, &count) != 0)
        return -1;
    /* the last entry whose location is at or before pc */
    size_t lo = 0, hi = count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        int32_t loc;
        memcpy(&loc, table + mid * 8, 4);
        if ((uintptr_t)hdr + (uintptr_t)(intptr_t)loc <= pc)
            lo = mid;
        else
            hi = mid;
    }
    int32_t loc, fde;
    memcpy(&loc, table + lo * 8, 4);
    memcpy(&fde, table + lo * 8 + 4, 4);
    if ((uintptr_t)hdr + (uintptr_t)(intptr_t)loc > pc)
        return -1;
    uintptr_t b, e;
    if (fde_range(hdr + fde, &b, &e) != 0 || pc < b || pc >= e)
        return -1;
    *begin = b;
    *end = e;
    return 0;
}

int cg_fde_range_loaded(uintptr_t pc, uintptr_t *begin, uintptr_t *end)
{
    struct dl_find_object o;
    if (_dl_find_object((void *)pc, &o) != 0 || !o.dlfo_eh_frame)
        return -1;
    return cg_fde_range(o.dlfo_eh_frame, 0, pc, begin, end);
}
