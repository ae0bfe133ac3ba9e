/* Empty hooks, preloaded like cgprof: the cost of the instrumentation
 * itself (the calls to the hooks through the PLT), for scripts/bench. */
__attribute__((visibility("default"), no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)fn;
    (void)site;
}

__attribute__((visibility("default"), no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)fn;
    (void)site;
}
