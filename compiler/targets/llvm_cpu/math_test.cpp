// The inline trigonometric and hyperbolic functions (math.h) against the C
// library in double precision, in ulps of the float result, over the whole
// float range: arguments nearest the multiples of pi/2 (where the range
// reduction cancels most), random bit patterns of every exponent, and the
// special values.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "compiler/targets/llvm_cpu/testing/compiled_graph.h"
#include "gtest/gtest.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using testing::CompiledGraph;
using testing::CompileOptions;

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::vector<float> arguments() {
  std::vector<float> x = {0.0f,     -0.0f,     1e-40f,    -1e-40f,  1e-20f,
                          0.785398f, 0.785399f, 1.0f,     -1.0f,    4096.0f,
                          4097.0f,  88.0f,     89.4f,     -89.5f,   1e30f,
                          3e38f,    -3e38f,    INFINITY,  -INFINITY, NAN};
  // The floats on either side of k pi/2.
  for (int k = 1; k < 3000; k += 7) {
    float near = static_cast<float>(k * M_PI_2);
    x.push_back(near);
    x.push_back(-std::nextafter(near, INFINITY));
    x.push_back(std::nextafter(near, 0.0f));
  }
  for (double big = 1e5; big < 3e38; big *= 9.7) {
    float near = static_cast<float>(std::round(big / M_PI_2) * M_PI_2);
    x.push_back(near);
    x.push_back(-near);
  }
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> bits(0, 0x7f7fffffu);
  for (int i = 0; i < 6000; ++i) {
    float v = fromBits(bits(rng));
    x.push_back(i % 2 ? -v : v);
  }
  std::uniform_real_distribution<float> unit(-1.2f, 1.2f);
  for (int i = 0; i < 3000; ++i) {
    x.push_back(unit(rng));
  }
  return x;
}

// |got| against |want| in ulps of |want| rounded to float; a NaN or an
// infinity must be matched exactly (-1 when it is not).
double ulpError(float got, double want) {
  float w = static_cast<float>(want);
  if (std::isnan(w) || std::isinf(w) || std::isnan(got) || std::isinf(got)) {
    bool same = (std::isnan(w) && std::isnan(got)) || w == got;
    return same ? 0 : -1;
  }
  float a = std::fabs(w);
  double ulp = std::nextafter(a, INFINITY) - a;
  return std::fabs(double(got) - want) / ulp;
}

struct Function {
  const char *op;
  double (*reference)(double);
  double maxUlps;
};

void checkFunctions(const CompileOptions &options) {
  const Function functions[] = {
      {"Sin", std::sin, 2.5},     {"Cos", std::cos, 2.5},
      {"Tan", std::tan, 4.5},     {"Asin", std::asin, 4},
      {"Acos", std::acos, 4},     {"Atan", std::atan, 3},
      {"Sinh", std::sinh, 5},     {"Cosh", std::cosh, 5},
      {"Asinh", std::asinh, 5},   {"Acosh", std::acosh, 5},
      {"Atanh", std::atanh, 5},
  };
  std::vector<float> x = arguments();
  std::string type = "tensor<" + std::to_string(x.size()) + "xf32>";
  std::string text = "graph @math(%x: " + type + ") {\n";
  std::string results;
  for (const Function &f : functions) {
    text += "  %" + std::string(f.op) + " = " + f.op + "(%x) : " + type + "\n";
    results += std::string(results.empty() ? "" : ", ") + "%" + f.op;
  }
  text += "  return " + results + "\n}";
  CompiledGraph c;
  absl::Status s = c.compile(text, options);
  ASSERT_TRUE(s.ok()) << s.message();
  auto out = c.run({x});
  ASSERT_EQ(out.size(), std::size(functions));
  for (size_t k = 0; k < out.size(); ++k) {
    const Function &f = functions[k];
    double worst = 0;
    float worstAt = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      double e = ulpError(out[k][i], f.reference(x[i]));
      ASSERT_GE(e, 0) << f.op << "(" << x[i] << ") = " << out[k][i]
                      << ", want " << f.reference(x[i]);
      if (e > worst) {
        worst = e;
        worstAt = x[i];
      }
    }
    EXPECT_LE(worst, f.maxUlps)
        << f.op << " is " << worst << " ulp off at " << worstAt;
  }
}

TEST(MathTest, TrigonometricAndHyperbolicWithinUlps) {
  checkFunctions(CompileOptions{});
}

// Without fused multiply-add (SSE2 only): the reduction's exactness must not
// depend on it.
TEST(MathTest, TrigonometricAndHyperbolicWithinUlpsWithoutFma) {
  CompileOptions options;
  options.target = "x86_64";
  options.cpu = "x86-64";
  checkFunctions(options);
}

} // namespace
} // namespace osprey::compiler::llvm_cpu
