/* Unit tests of the dumps and their files (dump.c, part.c, naming.c,
 * outfile.c): which files a dump writes, under which names, with which
 * header, and exactly which calls and nanoseconds each part holds.
 *
 * Why: a part is "what happened since the previous one" (docs/cgprof-control.md, "Profiles
 * of a running program"); getting that wrong double-counts or loses calls
 * with no visible error, and only exact numbers show it. Each scenario runs
 * the runtime in a child process of its own (profile_test.h says why), with
 * threads whose tables are driven with synthetic addresses and times; the
 * parent reads every file back and checks every call count, inclusive
 * time, self time and desc: line. The threads' events are tables
 * (scenario.h says how to add one, and names the addresses). */
#include "scenario.h"

/* ---- parts: each holds what happened since the previous one --------------- */

/* The worker of the first scenario, in three steps */
static const struct ev parts_worker[] = {
    { .name = "worker" },
    { .enter = WMAIN, .site = ROOT_SITE, .t = 0 },
    { .enter = WA, .site = WMAIN + 0x10, .t = 2 }, { .exit = WA, .t = 7 },
    { .t = 10 },
    { .pause = 1 },
    { .enter = WB, .site = WMAIN + 0x20, .t = 12 }, { .exit = WB, .t = 20 },
    { .t = 30 },
    { .pause = 1 },
    { .t = 35 },
};

/* The main thread: two dumps on demand, the exit dump at 100 */
static const struct ev parts_main[] = {
    { .enter = MAIN, .site = ROOT_SITE, .t = 0 },
    { .enter = F, .site = MAIN + 0x10, .t = 10 }, { .exit = F, .t = 25 },
    { .enter = G, .site = MAIN + 0x20, .t = 30 },
    { .t = 40, .dump = DUMPS, .why = "phase one" },
    { .wake = 1 },
    { .enter = H, .site = G + 0x08, .t = 45 }, { .exit = H, .t = 50 },
    { .exit = G, .t = 55 },
    { .enter = F, .site = MAIN + 0x10, .t = 60 }, { .exit = F, .t = 70 },
    { .t = 80, .dump = DUMPS }, /* no reason given */
    { .wake = 1 },
    { .exit = MAIN, .t = 90 },
    { .t = 100 },
};

static void parts_scenario(void *arg)
{
    /* arg: one more setting, or NULL */
    const char *env[] = { out_env, "CGPROF_TOTAL=0", arg, NULL };
    runtime_init(env);
    struct sim s;
    sim_attach(&s);
    worker_start(parts_worker);
    SIM_RUN(&s, parts_main);
    cg_dump_final("Program termination");
}

static void assert_parts(pid_t pid);

/* Lines of the file at path that start with prefix. */
static unsigned count_lines(const char *path, const char *prefix)
{
    char *text = read_text(path);
    unsigned n = 0;
    size_t k = strlen(prefix);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        n += strncmp(l, prefix, k) == 0;
    free(text);
    return n;
}

/* The id the file at path gives the function `name` (its "fn=(id) name" or
 * "cfn=(id) name" line), 0 if none. */
static unsigned prof_fn_id(const char *path, const char *name)
{
    char *text = read_text(path);
    unsigned id = 0;
    for (const char *l = text; l && *l && !id; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *v = strncmp(l, "fn=(", 4) == 0 ? l + 4 : strncmp(l, "cfn=(", 5) == 0 ? l + 5 : NULL;
        if (!v)
            continue;
        char *end;
        unsigned long x = strtoul(v, &end, 10);
        size_t n = strlen(name);
        if (end[0] == ')' && end[1] == ' ' && strncmp(end + 2, name, n) == 0 && end[2 + n] == '\n')
            id = (unsigned)x;
    }
    free(text);
    return id;
}

static void test_parts_hold_what_happened_since_the_previous_one(void **state)
{
    (void)state;
    set_dir("parts");
    assert_parts(run_child(parts_scenario, NULL, NULL));
}

/* Whether the file at path has the line `line` (without its newline). */
static int has_line(const char *path, const char *line)
{
    char *text = read_text(path);
    size_t n = strlen(line);
    int found = 0;
    for (const char *l = text; l && *l && !found; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        found = strncmp(l, line, n) == 0 && (l[n] == '\n' || l[n] == 0);
    free(text);
    return found;
}

/* The same with CGPROF_LATENCY=1: the same parts (profile_test.h reads the
 * '#lat:' lines as the comments they are to it), and in each, the calls
 * that ended in it, by time; a call that ran across a dump in the part
 * where it ends (G: counted in part 1, ended in part 2; MAIN in part 3). */
static void test_parts_with_latency(void **state)
{
    (void)state;
    set_dir("parts-latency");
    pid_t pid = run_child(parts_scenario, (void *)"CGPROF_LATENCY=1", NULL);
    assert_parts(pid);
    /* F: one call of 15 ns, in [14, 16); nothing else ended */
    assert_true(has_line(part_path(pid, 1, 1), "#latency: 4"));
    char line[128];
    snprintf(line, sizeof line, "#lat: (%u) 1 15 15 14:1", prof_fn_id(part_path(pid, 1, 1), fname(F)));
    assert_true(has_line(part_path(pid, 1, 1), line));
    assert_int_equal(count_lines(part_path(pid, 1, 1), "#lat: "), 1);
    /* part 2: H 5 ns, F 10 ns, G 25 ns (30 to 55, across dump 1) */
    const char *p2 = part_path(pid, 2, 1);
    snprintf(line, sizeof line, "#lat: (%u) 1 5 5 5:1", prof_fn_id(p2, fname(H)));
    assert_true(has_line(p2, line));
    /* F's longest (15 ns) ended in part 1: its max here is the top of its
     * bucket [10, 12), not more than 15 */
    snprintf(line, sizeof line, "#lat: (%u) 1 10 11 10:1", prof_fn_id(p2, fname(F)));
    assert_true(has_line(p2, line));
    snprintf(line, sizeof line, "#lat: (%u) 1 25 25 24:1", prof_fn_id(p2, fname(G)));
    assert_true(has_line(p2, line));
    assert_int_equal(count_lines(p2, "#lat: "), 3);
    /* part 3: MAIN, 90 ns, in [80, 96) */
    const char *p3 = part_path(pid, 3, 1);
    snprintf(line, sizeof line, "#lat: (%u) 1 90 90 80:1", prof_fn_id(p3, fname(MAIN)));
    assert_true(has_line(p3, line));
    assert_int_equal(count_lines(p3, "#lat: "), 1);
    /* the worker's: WA 5 ns in part 1, WB 8 ns in part 2 */
    snprintf(line, sizeof line, "#lat: (%u) 1 5 5 5:1", prof_fn_id(part_path(pid, 1, 2), fname(WA)));
    assert_true(has_line(part_path(pid, 1, 2), line));
    snprintf(line, sizeof line, "#lat: (%u) 1 8 8 8:1", prof_fn_id(part_path(pid, 2, 2), fname(WB)));
    assert_true(has_line(part_path(pid, 2, 2), line));
}

static void assert_parts(pid_t pid)
{
    char expected[2048];
    snprintf(expected, sizeof expected,
             "cg.out.%ld.1-01 cg.out.%ld.1-02 cg.out.%ld.2-01 cg.out.%ld.2-02 cg.out.%ld.3-01 cg.out.%ld.3-02",
             (long)pid, (long)pid, (long)pid, (long)pid, (long)pid, (long)pid);
    assert_listing(expected);

    /* part 1, main: MAIN and G running (counted, with their time so far) */
    ASSERT_PART(pid, 1, 1, { .part = 1, .trigger = "Client request: phase one",
                             .descs = { { "Calls in progress", "2 (counted up to the dump)" } },
                             .no_descs = { "Calls continued" },
                             .calls = { { ROOT_FN, MAIN, 1, 40 }, { MAIN, F, 1, 15 }, { MAIN, G, 1, 10 } },
                             .selfs = { { MAIN, 15 }, { F, 15 }, { G, 10 } },
                             .summary = 40 });
    /* part 2, main: MAIN and G continue (calls=0, their time since the
     * dump), H and the second F are new */
    ASSERT_PART(pid, 2, 1, { .part = 2, .trigger = "Client request: cgprof_dump",
                             .descs = { { "Calls in progress", "1 (counted up to the dump)" },
                                        { "Calls continued", CONTINUED(2) } },
                             .calls = { { ROOT_FN, MAIN, 0, 40 }, { MAIN, G, 0, 15 }, { G, H, 1, 5 }, { MAIN, F, 1, 10 } },
                             .selfs = { { MAIN, 15 }, { G, 10 }, { H, 5 }, { F, 10 } },
                             .summary = 40 });
    /* part 3 (the exit dump), main: the rest of MAIN; MAIN's block and
     * the root's */
    ASSERT_PART(pid, 3, 1, { .part = 3, .trigger = "Program termination",
                             .no_descs = { "Calls in progress" },
                             .descs = { { "Calls continued", CONTINUED(1) } },
                             .calls = { { ROOT_FN, MAIN, 0, 10 } },
                             .nfns = 2,
                             .selfs = { { MAIN, 10 } },
                             .summary = 10 });

    /* the worker's parts: its own calls only, named as it asked */
    ASSERT_PART(pid, 1, 2, { .descs = { { "Thread name", "worker" }, { "Calls in progress", "1 (counted up to the dump)" } },
                             .calls = { { ROOT_FN, WMAIN, 1, 10 }, { WMAIN, WA, 1, 5 } },
                             .selfs = { { WMAIN, 5 }, { WA, 5 } } });
    ASSERT_PART(pid, 2, 2, { .descs = { { "Calls in progress", "1 (counted up to the dump)" },
                                        { "Calls continued", CONTINUED(1) } },
                             .calls = { { ROOT_FN, WMAIN, 0, 20 }, { WMAIN, WB, 1, 8 } },
                             .selfs = { { WMAIN, 12 }, { WB, 8 } } });
    ASSERT_PART(pid, 3, 2, { .calls = { { ROOT_FN, WMAIN, 0, 5 } }, .selfs = { { WMAIN, 5 } } });
}

/* The header of a part: the lines before the costs, in order. */
static void test_part_header(void **state)
{
    (void)state;
    set_dir("header");
    pid_t pid = run_child(parts_scenario, NULL, NULL);
    struct prof p;
    read_part(pid, 1, 1, &p);
    /* prof_read checked the fixed lines: "# callgrind format", "version: 1",
     * then creator, pid, thread, part, cmd, the desc: lines, "positions:
     * instr line", the event, "events: ns", "summary:" */
    assert_int_equal(strncmp(p.creator, "cgprof-", 7), 0);
    assert_true(strlen(p.creator) > 7);
    char cmd[4096];
    own_cmdline(cmd, sizeof cmd);
    assert_string_equal(p.cmd, cmd);
    assert_int_equal(p.pid, pid);
    assert_int_equal(p.thread, 1);
    assert_int_equal(p.part, 1);
    assert_string_equal(p.event, "Wall-clock time (nanoseconds)");
    /* the desc: lines, in their order: trigger, clock, the thread's name
     * (its name in /proc, the program's, when it has none of its own),
     * what its counts hold */
    assert_int_equal(p.ndesc, 4);
    assert_string_equal(p.desc[0], "Trigger: Client request: phase one");
    assert_int_equal(strncmp(p.desc[1], "Clock: ", 7), 0);
    assert_true(strcmp(p.desc[1] + 7, "clock_gettime(CLOCK_MONOTONIC)") == 0 ||
                strstr(p.desc[1], CG_CPU_COUNTER_NAME " at ") == p.desc[1] + 7);
    /* the kernel's name of the process: test_dump, or under qemu-user
     * (which leaves /proc's comm as it is) the emulator's */
    char comm[64] = "", want[96];
    FILE *f = fopen("/proc/self/comm", "r");
    assert_non_null(f);
    assert_non_null(fgets(comm, sizeof comm, f));
    fclose(f);
    comm[strcspn(comm, "\n")] = 0;
    snprintf(want, sizeof want, "Thread name: %s", comm);
    assert_string_equal(p.desc[2], want);
    assert_string_equal(p.desc[3], "Calls in progress: 2 (counted up to the dump)");
}

/* ---- threads that end -------------------------------------------------------- */

/* Thread 2 ends before any dump with WB still running */
static const struct ev ending_worker_a[] = {
    { .enter = WMAIN, .site = ROOT_SITE, .t = 0 },
    { .enter = WA, .site = WMAIN + 0x10, .t = 5 }, { .exit = WA, .t = 9 },
    { .enter = WB, .site = WMAIN + 0x20, .t = 10 },
    { .end = 1, .t = 20 },
};

/* Thread 3 returns from everything, then really exits (thread.c's key
 * destructor ends it) */
static const struct ev ending_worker_b[] = {
    { .enter = WMAIN, .site = ROOT_SITE, .t = 0 },
    { .enter = WA, .site = WMAIN + 0x10, .t = 1 }, { .exit = WA, .t = 4 },
    { .exit = WMAIN, .t = 6 },
};

static void thread_exit_scenario(void *arg)
{
    (void)arg;
    const char *env[] = { out_env, "CGPROF_TOTAL=0", NULL };
    runtime_init(env);
    struct sim s;
    sim_attach(&s);
    sim_call(&s, MAIN, ROOT_SITE, 0);
    struct worker *a = worker_start(ending_worker_a);
    /* its last part is written and its memory released */
    REQUIRE(!registered(a->t));
    worker_join(a);
    sim_at(&s, 30);
    REQUIRE(cg_dump_now("after a") == 0);
    struct worker *b = worker_start(ending_worker_b);
    struct cg_thread *bt = b->t;
    REQUIRE(registered(bt));
    worker_join(b);
    REQUIRE(!registered(bt));
    REQUIRE(cg_thread_list() == s.t && s.t->next == NULL);
    sim_at(&s, 50);
    cg_dump_final("Program termination");
}

static void test_thread_exit_writes_its_last_part_and_releases_it(void **state)
{
    (void)state;
    set_dir("thread-exit");
    pid_t pid = run_child(thread_exit_scenario, NULL, NULL);
    char expected[2048];
    /* before any dump on demand: named without a part, numbered as the
     * next dump's part; after one, with the part of the next dump */
    snprintf(expected, sizeof expected, "cg.out.%ld-02 cg.out.%ld.1-01 cg.out.%ld.2-01 cg.out.%ld.2-03", (long)pid,
             (long)pid, (long)pid, (long)pid);
    assert_listing(expected);

    /* no name of its own, and no longer in /proc */
    ASSERT_PART(pid, 0, 2, { .part = 1, .trigger = "Thread exit",
                             .descs = { { "Calls in progress", "2 (counted up to the dump)" } },
                             .no_descs = { "Thread name" },
                             .calls = { { ROOT_FN, WMAIN, 1, 20 }, { WMAIN, WA, 1, 4 }, { WMAIN, WB, 1, 10 } },
                             .selfs = { { WMAIN, 6 }, { WA, 4 }, { WB, 10 } },
                             .summary = 20 });
    ASSERT_PART(pid, 1, 1, { .calls = { { ROOT_FN, MAIN, 1, 30 } } });
    ASSERT_PART(pid, 2, 3, { .part = 2, .trigger = "Thread exit",
                             .no_descs = { "Calls in progress" },
                             .calls = { { ROOT_FN, WMAIN, 1, 6 }, { WMAIN, WA, 1, 3 } },
                             .selfs = { { WMAIN, 3 }, { WA, 3 } } });
    ASSERT_PART(pid, 2, 1, { .trigger = "Program termination", .calls = { { ROOT_FN, MAIN, 0, 20 } }, .some_calls = 1 });
}

/* CGPROF_THREAD_EXIT=merge: threads 2 and 3 end before dump 1, thread 4
 * between dumps 1 and 2 */
static const struct ev merge_worker_a[] = {
    { .enter = WMAIN, .site = ROOT_SITE, .t = 0 },
    { .enter = WA, .site = WMAIN + 0x10, .t = 1 }, { .exit = WA, .t = 6 },
    { .enter = WB, .site = WMAIN + 0x20, .t = 8 },
    { .end = 1, .t = 10 },
};

static const struct ev merge_worker_b[] = {
    { .enter = WMAIN, .site = ROOT_SITE, .t = 0 },
    { .enter = WA, .site = WMAIN + 0x10, .t = 2 }, { .exit = WA, .t = 5 },
    { .enter = WA, .site = WMAIN + 0x10, .t = 6 }, { .exit = WA, .t = 10 },
    { .exit = WMAIN, .t = 12 },
};

static const struct ev merge_worker_c[] = {
    { .enter = WMAIN, .site = ROOT_SITE, .t = 0 }, { .exit = WMAIN, .t = 3 },
};

static void merge_scenario(void *arg)
{
    (void)arg;
    const char *env[] = { out_env, "CGPROF_TOTAL=0", "CGPROF_THREAD_EXIT=merge", NULL };
    runtime_init(env);
    struct sim s;
    sim_attach(&s);
    sim_call(&s, MAIN, ROOT_SITE, 0);
    struct worker *a = worker_start(merge_worker_a);
    worker_join(a);
    struct worker *b = worker_start(merge_worker_b);
    worker_join(b);
    REQUIRE(!registered(a->t) && !registered(b->t));
    sim_at(&s, 20);
    REQUIRE(cg_dump_now("one") == 0);
    worker_join(worker_start(merge_worker_c));
    sim_at(&s, 30);
    REQUIRE(cg_dump_now("two") == 0);
    sim_at(&s, 40);
    REQUIRE(cg_dump_now("three") == 0);
    _exit(0); /* no exit dump: its files are another test's */
}

static void test_thread_exit_merge(void **state)
{
    (void)state;
    set_dir("merge");
    pid_t pid = run_child(merge_scenario, NULL, NULL);
    char expected[2048];
    /* no file as the threads end; thread 00 with the next dump only */
    snprintf(expected, sizeof expected, "cg.out.%ld.1-00 cg.out.%ld.1-01 cg.out.%ld.2-00 cg.out.%ld.2-01 cg.out.%ld.3-01",
             (long)pid, (long)pid, (long)pid, (long)pid, (long)pid);
    assert_listing(expected);

    ASSERT_PART(pid, 1, 0, { .part = 1, .trigger = "Client request: one",
                             .descs = { { "Thread name", "2 threads that ended, merged (CGPROF_THREAD_EXIT=merge)" } },
                             .calls = { { ROOT_FN, WMAIN, 2, 22 }, { WMAIN, WA, 3, 12 }, { WMAIN, WB, 1, 2 } },
                             .selfs = { { WMAIN, 8 }, { WA, 12 }, { WB, 2 } },
                             .summary = 22 });
    ASSERT_PART(pid, 1, 1, { .calls = { { ROOT_FN, MAIN, 1, 20 } } });
    ASSERT_PART(pid, 2, 0, { .part = 2,
                             .descs = { { "Thread name", "1 threads that ended, merged (CGPROF_THREAD_EXIT=merge)" } },
                             .calls = { { ROOT_FN, WMAIN, 1, 3 } },
                             .selfs = { { WMAIN, 3 } } });
    ASSERT_PART(pid, 3, 1, { .calls = { { ROOT_FN, MAIN, 0, 10 } }, .some_calls = 1 });
}

/* ---- the exit dump ------------------------------------------------------------ */

static const struct ev live_worker[] = {
    { .name = "worker" },
    { .enter = WMAIN, .site = ROOT_SITE, .t = 0 },
    { .t = 7 },
};

/* No dump on demand: t=0 MAIN; t=5..15 F; the exit dump at 20. Then
 * nothing more is written. */
static const struct ev final_main[] = {
    { .enter = MAIN, .site = ROOT_SITE, .t = 0 },
    { .enter = F, .site = MAIN + 0x10, .t = 5 }, { .exit = F, .t = 15 },
    { .t = 20 },
};

static void final_scenario(void *arg)
{
    (void)arg;
    const char *env[] = { out_env, NULL };
    runtime_init(env);
    struct sim s;
    sim_attach(&s);
    worker_start(live_worker);
    SIM_RUN(&s, final_main);
    REQUIRE(!cg_dump_finished());
    cg_dump_final("Program termination");
    REQUIRE(cg_dump_finished());
    sim_at(&s, 30);
    REQUIRE(cg_dump_now("too late") == -1);
    cg_dump_exec("/too/late");
    cg_dump_final("again");
}

static void test_exit_dump_without_dumps_names_files_without_part(void **state)
{
    (void)state;
    set_dir("final");
    pid_t pid = run_child(final_scenario, NULL, NULL);
    char expected[2048];
    snprintf(expected, sizeof expected, "cg.out.%ld-01 cg.out.%ld-02 cg.total.%ld", (long)pid, (long)pid, (long)pid);
    assert_listing(expected);
    ASSERT_PART(pid, 0, 1, { .part = 1, .trigger = "Program termination",
                             .descs = { { "Calls in progress", "1 (counted up to the dump)" } },
                             .calls = { { ROOT_FN, MAIN, 1, 20 }, { MAIN, F, 1, 10 } },
                             .selfs = { { MAIN, 10 }, { F, 10 } } });
    ASSERT_PART(pid, 0, 2, { .part = 1, .trigger = "Program termination",
                             .descs = { { "Thread name", "worker" } },
                             .calls = { { ROOT_FN, WMAIN, 1, 7 } }, .some_calls = 1 });
}

/* ---- exec --------------------------------------------------------------------- */

static const struct ev exec_worker[] = {
    { .name = "worker" },
    { .enter = WMAIN, .site = ROOT_SITE, .t = 0 },
    { .t = 4 },
    { .pause = 1 },
    { .t = 9 },
    { .pause = 1 },
    { .t = 11 },
};

/* Dump 1 at 30; the exec dump at 50 (the exec fails: the program goes on),
 * dump 3 at 60 */
static const struct ev exec_before[] = {
    { .enter = MAIN, .site = ROOT_SITE, .t = 0 },
    { .enter = F, .site = MAIN + 0x10, .t = 10 }, { .exit = F, .t = 20 },
    { .t = 30, .dump = DUMPS, .why = "before" },
    { .enter = G, .site = MAIN + 0x20, .t = 35 }, { .exit = G, .t = 45 },
    { .t = 50 },
    { .wake = 1 },
};

static const struct ev exec_after[] = {
    { .t = 60 },
    { .wake = 1 },
    { .t = 60, .dump = DUMPS, .why = "after" },
};

static void exec_scenario(void *arg)
{
    (void)arg;
    const char *env[] = { out_env, NULL };
    runtime_init(env);
    struct sim s;
    sim_attach(&s);
    worker_start(exec_worker);
    SIM_RUN(&s, exec_before);
    cg_dump_exec("/no/such/program");
    SIM_RUN(&s, exec_after);
    _exit(0);
}

static void test_exec_writes_parts_and_the_total(void **state)
{
    (void)state;
    set_dir("exec");
    pid_t pid = run_child(exec_scenario, NULL, NULL);
    char expected[2048];
    snprintf(expected, sizeof expected,
             "cg.out.%ld.1-01 cg.out.%ld.1-02 cg.out.%ld.2-01 cg.out.%ld.2-02 cg.out.%ld.3-01 cg.out.%ld.3-02 "
             "cg.total.%ld",
             (long)pid, (long)pid, (long)pid, (long)pid, (long)pid, (long)pid, (long)pid);
    assert_listing(expected);
    ASSERT_PART(pid, 2, 1, { .part = 2, .trigger = "Exec of /no/such/program",
                             .calls = { { ROOT_FN, MAIN, 0, 20 }, { MAIN, G, 1, 10 } } });
    ASSERT_PART(pid, 2, 2, { .trigger = "Exec of /no/such/program", .calls = { { ROOT_FN, WMAIN, 0, 5 } },
                             .some_calls = 1 });
    /* the total of the image that goes: parts 1 and 2 */
    ASSERT_TOTAL(pid, { .part = 2, .trigger = "Exec of /no/such/program",
                        .descs = { { "Thread name", "total of 2 threads, 4 parts summed (CGPROF_TOTAL)" },
                                   { "Calls in progress", "2 (counted up to the dump)" } },
                        .calls = { { ROOT_FN, MAIN, 1, 50 }, { MAIN, F, 1, 10 }, { MAIN, G, 1, 10 }, { ROOT_FN, WMAIN, 1, 9 } },
                        .summary = 59 });
    /* the program went on: the next part starts at the exec dump */
    ASSERT_PART(pid, 3, 1, { .trigger = "Client request: after", .calls = { { ROOT_FN, MAIN, 0, 10 } },
                             .selfs = { { MAIN, 10 } } });
    ASSERT_PART(pid, 3, 2, { .calls = { { ROOT_FN, WMAIN, 0, 2 } }, .some_calls = 1 });
}

/* ---- files that cannot be written -------------------------------------------- */

/* CGPROF_OUT in a directory that does not exist: every dump fails (-1),
 * one message says so, the program goes on. */
static const struct ev unwritable_main[] = {
    { .enter = MAIN, .site = ROOT_SITE, .t = 0 },
    { .t = 10, .dump = DUMP_FAILS, .why = "one" },
    { .enter = F, .site = MAIN + 0x10, .t = 12 }, { .exit = F, .t = 14 },
    { .t = 14, .dump = DUMP_FAILS, .why = "two" },
    { .exit = MAIN, .t = 20 },
};

static void unwritable_scenario(void *arg)
{
    (void)arg;
    const char *env[] = { out_env, NULL };
    runtime_init(env);
    struct sim s;
    sim_attach(&s);
    worker_start(live_worker);
    SIM_RUN(&s, unwritable_main);
    cg_dump_final("Program termination");
}

static void test_unwritable_directory_gives_one_message(void **state)
{
    (void)state;
    char parent[400];
    subdir("unwritable", parent, sizeof parent);
    snprintf(dir, sizeof dir, "%s/missing", parent);
    snprintf(out_env, sizeof out_env, "CGPROF_OUT=%s/cg.out", dir);
    snprintf(err_path, sizeof err_path, "%s/unwritable.err", tmpdir);
    pid_t pid = run_child(unwritable_scenario, NULL, err_path);
    char *err = read_text(err_path);
    assert_non_null(err);
    char expected[2048];
    /* the first file of the first dump: the newest thread's */
    snprintf(expected, sizeof expected,
             "cgprof: could not write profile file \"%s/cg.out.%ld.1-02\": No such file or directory "
             "(CGPROF_OUT=\"%s/cg.out\" sets where they go; no more such messages)\n",
             dir, (long)pid, dir);
    assert_string_equal(err, expected);
    free(err);
    char got[256];
    dir_listing(parent, got, sizeof got);
    assert_string_equal(got, ""); /* nothing made, no temporary file left */
}

/* Things planted where the files go, after the first dump (the first dump
 * numbers its parts after files already named like parts of this pid: see
 * the next test):
 *   dump 2: a regular file at its path, and links at its first 8 temporary
 *           names (outfile.h: <dir>/.<name>.cgprof-tmp.<pid>.<count>; one
 *           file written so far, so the count is at 1)
 *   dump 3: a symbolic link at its path
 *   dump 4: a directory at its path (cannot be replaced: a failure)
 *   dump 5: a directory too (no second message)
 *   then the exit dump (part 6) */
static char target[600];

static void planted_scenario(void *arg)
{
    (void)arg;
    const char *env[] = { out_env, "CGPROF_TOTAL=0", NULL };
    runtime_init(env);
    struct sim s;
    sim_attach(&s);
    char path[700], tmp[800];
    long pid = (long)getpid();
    sim_call(&s, MAIN, ROOT_SITE, 0);
    sim_at(&s, 10);
    REQUIRE(cg_dump_now("one") == 0);
    snprintf(path, sizeof path, "%s/cg.out.%ld.2-01", dir, pid);
    FILE *f = fopen(path, "w");
    REQUIRE(f && fputs("planted\n", f) >= 0 && fclose(f) == 0);
    for (int k = 1; k <= 8; k++) {
        snprintf(tmp, sizeof tmp, "%s/.cg.out.%ld.2-01.cgprof-tmp.%ld.%d", dir, pid, pid, k);
        REQUIRE(symlink(target, tmp) == 0);
    }
    sim_at(&s, 20);
    REQUIRE(cg_dump_now("two") == 0);
    snprintf(path, sizeof path, "%s/cg.out.%ld.3-01", dir, pid);
    REQUIRE(symlink(target, path) == 0);
    sim_at(&s, 30);
    REQUIRE(cg_dump_now("three") == 0);
    snprintf(path, sizeof path, "%s/cg.out.%ld.4-01", dir, pid);
    REQUIRE(mkdir(path, 0700) == 0);
    sim_at(&s, 40);
    REQUIRE(cg_dump_now("four") == -1);
    snprintf(path, sizeof path, "%s/cg.out.%ld.5-01", dir, pid);
    REQUIRE(mkdir(path, 0700) == 0);
    sim_at(&s, 50);
    REQUIRE(cg_dump_now("five") == -1);
    sim_at(&s, 60);
    cg_dump_final("Program termination");
}

static void test_planted_files_and_links(void **state)
{
    (void)state;
    set_dir("planted");
    snprintf(target, sizeof target, "%s/target", dir);
    write_text(target, "target\n");
    pid_t pid = run_child(planted_scenario, NULL, err_path);
    long p = (long)pid;

    char *err = read_text(err_path);
    assert_non_null(err);
    char expected[4096];
    snprintf(expected, sizeof expected,
             "cgprof: could not write profile file \"%s/cg.out.%ld.4-01\": Is a directory "
             "(CGPROF_OUT=\"%s/cg.out\" sets where they go; no more such messages)\n",
             dir, p, dir);
    assert_string_equal(err, expected);
    free(err);

    /* the links at the temporary names stay as they were, not followed;
     * the directories stay empty; no temporary file is left */
    snprintf(expected, sizeof expected,
             ".cg.out.%ld.2-01.cgprof-tmp.%ld.1 .cg.out.%ld.2-01.cgprof-tmp.%ld.2 "
             ".cg.out.%ld.2-01.cgprof-tmp.%ld.3 .cg.out.%ld.2-01.cgprof-tmp.%ld.4 "
             ".cg.out.%ld.2-01.cgprof-tmp.%ld.5 .cg.out.%ld.2-01.cgprof-tmp.%ld.6 "
             ".cg.out.%ld.2-01.cgprof-tmp.%ld.7 .cg.out.%ld.2-01.cgprof-tmp.%ld.8 "
             "cg.out.%ld.1-01 cg.out.%ld.2-01 cg.out.%ld.3-01 cg.out.%ld.4-01 cg.out.%ld.5-01 cg.out.%ld.6-01 "
             "target",
             p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p);
    assert_listing(expected);
    char *t = read_text(target);
    assert_non_null(t);
    assert_string_equal(t, "target\n");
    free(t);
    for (int k = 1; k <= 8; k++) {
        char link[800], to[800];
        snprintf(link, sizeof link, "%s/.cg.out.%ld.2-01.cgprof-tmp.%ld.%d", dir, p, p, k);
        ssize_t n = readlink(link, to, sizeof to - 1);
        assert_true(n > 0);
        to[n] = 0;
        assert_string_equal(to, target);
    }
    /* the planted file and link were replaced by the parts */
    struct stat st;
    for (unsigned part = 1; part <= 3; part++) {
        assert_int_equal(lstat(part_path(pid, part, 1), &st), 0);
        assert_true(S_ISREG(st.st_mode));
    }
    ASSERT_PART(pid, 1, 1, { .calls = { { ROOT_FN, MAIN, 1, 10 } }, .some_calls = 1 });
    ASSERT_PART(pid, 2, 1, { .calls = { { ROOT_FN, MAIN, 0, 10 } }, .some_calls = 1 });
    ASSERT_PART(pid, 3, 1, { .calls = { { ROOT_FN, MAIN, 0, 10 } }, .some_calls = 1 });
    for (unsigned part = 4; part <= 5; part++) {
        char got[64];
        assert_int_equal(lstat(part_path(pid, part, 1), &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        dir_listing(part_path(pid, part, 1), got, sizeof got);
        assert_string_equal(got, "");
    }
    /* parts 4 and 5 are lost; the exit dump has the time since part 5 */
    ASSERT_PART(pid, 6, 1, { .part = 6, .calls = { { ROOT_FN, MAIN, 0, 10 } }, .some_calls = 1 });
}

/* A program started by exec() has the pid of the image before it, which
 * may have written parts: files named like parts of this pid before the
 * first dump make the parts numbered after the highest (naming.c's
 * cg_name_last_part); names that only look alike do not. */
static void earlier_image_scenario(void *arg)
{
    (void)arg;
    const char *env[] = { out_env, "CGPROF_TOTAL=0", NULL };
    runtime_init(env);
    struct sim s;
    sim_attach(&s);
    /* <prefix>.<pid><suffix> */
    static const char *const planted[][2] = { { "cg.out", ".3-01" }, { "cg.out", ".2-02" }, { "cg.out", ".7" },
                                              { "cg.out", ".9x-01" }, { "other", ".8-01" }, { "cg.out", "-01" } };
    for (unsigned i = 0; i < sizeof planted / sizeof planted[0]; i++) {
        char path[700];
        snprintf(path, sizeof path, "%s/%s.%ld%s", dir, planted[i][0], (long)getpid(), planted[i][1]);
        FILE *f = fopen(path, "w");
        REQUIRE(f && fclose(f) == 0);
    }
    sim_call(&s, MAIN, ROOT_SITE, 0);
    sim_at(&s, 10);
    REQUIRE(cg_dump_now("one") == 0);
    sim_at(&s, 20);
    cg_dump_final("Program termination");
}

static void test_parts_numbered_after_an_earlier_image(void **state)
{
    (void)state;
    set_dir("earlier");
    pid_t pid = run_child(earlier_image_scenario, NULL, NULL);
    long p = (long)pid;
    char expected[2048];
    snprintf(expected, sizeof expected,
             "cg.out.%ld-01 cg.out.%ld.2-02 cg.out.%ld.3-01 cg.out.%ld.4-01 cg.out.%ld.5-01 cg.out.%ld.7 "
             "cg.out.%ld.9x-01 other.%ld.8-01",
             p, p, p, p, p, p, p, p);
    assert_listing(expected);
    ASSERT_PART(pid, 4, 1, { .part = 4, .calls = { { ROOT_FN, MAIN, 1, 10 } }, .some_calls = 1 });
    ASSERT_PART(pid, 5, 1, { .part = 5, .calls = { { ROOT_FN, MAIN, 0, 10 } }, .some_calls = 1 });
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts_hold_what_happened_since_the_previous_one),
        cmocka_unit_test(test_parts_with_latency),
        cmocka_unit_test(test_part_header),
        cmocka_unit_test(test_thread_exit_writes_its_last_part_and_releases_it),
        cmocka_unit_test(test_thread_exit_merge),
        cmocka_unit_test(test_exit_dump_without_dumps_names_files_without_part),
        cmocka_unit_test(test_exec_writes_parts_and_the_total),
        cmocka_unit_test(test_unwritable_directory_gives_one_message),
        cmocka_unit_test(test_planted_files_and_links),
        cmocka_unit_test(test_parts_numbered_after_an_earlier_image),
    };
    return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
