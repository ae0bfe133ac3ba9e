/* An instrumented plugin, loaded and unloaded by tests/progs/plugins.c. */
static volatile unsigned long sink;

static void plugin_helper(int i)
{
    sink += (unsigned long)i;
}

void plugin_work(int n);

void plugin_work(int n)
{
    for (int i = 0; i < n; i++)
        plugin_helper(i);
}
