/* A "vendored" source file, under a vendor directory: CGPROF_SKIP_FILE (skips.c). */
void leaf(int n);
void vendor_fn(int n);

void vendor_fn(int n)
{
    leaf(n);
}
