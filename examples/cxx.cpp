/*
 * cxx.cpp - what C++ code looks like in a cgprof profile.
 *
 * Shows a class hierarchy in a namespace with a virtual function,
 * constructors and destructors, a function template and a class template
 * each instantiated for two types, and std::vector.  Profiles name C++
 * functions by their demangled names with parameter lists, exactly as
 * c++filt prints them, e.g. "geometry::Circle::area() const" or
 * "int twice<int>(int)".
 *
 * Build (meson does this for you):
 *
 *   c++ -finstrument-functions -g -O0 -fno-inline -fno-omit-frame-pointer \
 *       -finstrument-functions-exclude-file-list=/usr/include \
 *       cxx.cpp -o cxx
 *
 * The exclude list keeps the standard library's header code (std::vector's
 * members, iterators, allocators...) out of the profile: that code is
 * compiled into this program from templates and would otherwise be
 * instrumented too, burying our own functions under more than a hundred
 * library entries.  Those functions still run; their time is counted in the
 * instrumented function that called them.
 *
 * Run:  LD_PRELOAD=/path/to/libcgprof.so ./cxx
 *
 * Expected calls (with default arguments; the program takes none):
 *
 *   function                                            calls
 *   main                                                    1
 *   geometry::Shape::Shape(char const*)                     3
 *   geometry::Shape::~Shape()                               3
 *   geometry::Shape::name() const                           1
 *   geometry::Circle::Circle(double)                        2
 *   geometry::Circle::~Circle()                             2
 *   geometry::Circle::area() const                          2
 *   geometry::Square::Square(double)                        1
 *   geometry::Square::~Square()                             1
 *   geometry::Square::area() const                          1
 *   total_area(std::vector<geometry::Shape const*, std::allocator<geometry::Shape const*> > const&)
 *                                                           1
 *   int twice<int>(int)                                     5
 *   double twice<double>(double)                            3
 *   Accumulator<int>::Accumulator()                         1
 *   Accumulator<int>::add(int)                              5
 *   Accumulator<int>::total() const                         1
 *   Accumulator<double>::Accumulator()                      1
 *   Accumulator<double>::add(double)                        3
 *   Accumulator<double>::total() const                      1
 *
 *   caller -> callee                                              calls
 *   main -> geometry::Circle::Circle(double)                          2
 *   main -> geometry::Square::Square(double)                          1
 *   geometry::Circle::Circle(double) -> geometry::Shape::Shape(char const*)   2
 *   geometry::Square::Square(double) -> geometry::Shape::Shape(char const*)   1
 *   main -> total_area(...)                                           1
 *   main -> geometry::Shape::name() const                             1
 *   total_area(...) -> geometry::Circle::area() const                 2  (virtual)
 *   total_area(...) -> geometry::Square::area() const                 1  (virtual)
 *   main -> int twice<int>(int)                                       5
 *   main -> double twice<double>(double)                              3
 *   main -> Accumulator<int>::Accumulator()                           1
 *   main -> Accumulator<int>::add(int)                                5
 *   main -> Accumulator<int>::total() const                           1
 *   main -> Accumulator<double>::Accumulator()                        1
 *   main -> Accumulator<double>::add(double)                          3
 *   main -> Accumulator<double>::total() const                        1
 *   main -> geometry::Circle::~Circle()                               2
 *   main -> geometry::Square::~Square()                               1
 *   geometry::Circle::~Circle() -> geometry::Shape::~Shape()          2
 *   geometry::Square::~Square() -> geometry::Shape::~Shape()          1
 *
 * (total_area(...) stands for the full name in the function table.)
 *
 * The shapes live on main's stack, so each is destroyed by a direct call
 * of its class's destructor, which then calls the base class destructor.
 * (Deleting one through a Shape* would add a call of the "deleting
 * destructor", which has the same demangled name.)
 */
#include <cstdio>
#include <vector>

namespace geometry {

class Shape {
public:
    explicit Shape(const char *name);
    virtual ~Shape();
    virtual double area() const = 0;
    const char *name() const;

private:
    const char *name_;
};

class Circle : public Shape {
public:
    explicit Circle(double radius);
    ~Circle() override;
    double area() const override;

private:
    double radius_;
};

class Square : public Shape {
public:
    explicit Square(double side);
    ~Square() override;
    double area() const override;

private:
    double side_;
};

Shape::Shape(const char *name) : name_(name) {}
Shape::~Shape() {}
const char *Shape::name() const { return name_; }

Circle::Circle(double radius) : Shape("circle"), radius_(radius) {}
Circle::~Circle() {}
double Circle::area() const { return 3.14159265358979 * radius_ * radius_; }

Square::Square(double side) : Shape("square"), side_(side) {}
Square::~Square() {}
double Square::area() const { return side_ * side_; }

} // namespace geometry

// One virtual call of area() per shape: the profile shows arcs to
// Circle::area and Square::area, the functions actually called.
double total_area(const std::vector<const geometry::Shape *> &shapes)
{
    double sum = 0.0;
    for (const geometry::Shape *s : shapes)
        sum += s->area();
    return sum;
}

// A function template: each instantiation is a separate function.
template <typename T>
T twice(T x)
{
    return x + x;
}

// A class template: Accumulator<int> and Accumulator<double> are separate
// classes with separate member functions.
template <typename T>
class Accumulator {
public:
    Accumulator() : sum_() {}
    void add(T value) { sum_ += value; }
    T total() const { return sum_; }

private:
    T sum_;
};

int main()
{
    geometry::Circle small(1.0);
    geometry::Square square(2.0);
    geometry::Circle big(3.0);

    const std::vector<const geometry::Shape *> shapes = { &small, &square, &big };
    const double area = total_area(shapes);

    const std::vector<int> ints = { 1, 2, 3, 4, 5 };
    Accumulator<int> int_sum;
    for (int v : ints)
        int_sum.add(twice(v));

    const std::vector<double> doubles = { 0.25, 0.5, 0.75 };
    Accumulator<double> double_sum;
    for (double v : doubles)
        double_sum.add(twice(v));

    std::printf("cxx: %zu shapes (the last one a %s) with total area %.4f, "
                "sum of twice(ints) = %d, sum of twice(doubles) = %.2f\n",
                shapes.size(), big.name(), area, int_sum.total(), double_sum.total());
    return 0; // the three shapes are destroyed here, in reverse order
}
