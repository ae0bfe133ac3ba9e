/* A small call tree for the flame graph tests (tests/integration/
 * test_speedscope.py), drawn the same by any reader: no recursion, no
 * call to the C library, and each function with work of its own (a loop
 * of a fixed length), so that none is too light to be drawn (speedscope
 * leaves out a frame under 1/10,000 of the heaviest root's weight).
 * spin() has two callers, the one function that has.
 *
 *   main -> parse -> tokenize            calls: main 1, parse 1, tokenize 3,
 *        -> render -> spin               render 1, spin 2 + 2, layout 1
 *        -> layout -> spin
 */
static volatile unsigned long sink;

/* a loop, not a call: a function for it would take every function's own
 * time */
#define WORK(n)                                                                                             \
    do {                                                                                                    \
        for (unsigned long i_ = 0; i_ < (n); i_++)                                                          \
            sink += i_;                                                                                     \
    } while (0)

static void tokenize(void)
{
    WORK(400000);
}

static void parse(void)
{
    WORK(300000);
    for (int i = 0; i < 3; i++)
        tokenize();
}

static void spin(void)
{
    WORK(500000);
}

static void render(void)
{
    WORK(600000);
    spin();
    spin();
}

static void layout(void)
{
    WORK(700000);
    spin();
    spin();
}

int main(void)
{
    WORK(200000);
    parse();
    render();
    layout();
    return 0;
}
