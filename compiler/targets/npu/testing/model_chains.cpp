#include "compiler/targets/npu/testing/model_chains.h"

#include <algorithm>
#include <map>

#include "compiler/targets/npu/testing/run_stream.h"

namespace osprey::compiler::npu::testing {
namespace {

class Builder {
public:
  explicit Builder(ModelChain &m) : m(m) {
    m.chain.weightBinding = kChainWeights;
    m.chain.scratchBinding = kChainScratch;
  }
  // Appends |l| reading tensor |from| (-1: the network input) and |from2|,
  // producing a new tensor; returns its id.
  int add(NpuLayer l, const std::string &name, int from, int from2 = -1) {
    int to = next++;
    l.name = name;
    l.in = from < 0 ? Operand::memory(kChainInput) : Operand::resident(from);
    if (l.hasSecondInput()) {
      l.in2 = Operand::resident(from2);
    }
    l.dst = Operand::resident(to);
    values[to] =
        referenceLayer(l, from < 0 ? m.input : values[from],
                       from2 < 0 ? std::vector<int8_t>{} : values[from2]);
    m.chain.layers.push_back(l);
    return to;
  }
  // Sends tensor |t| (produced by the most recent layer) to the second output.
  void output2(int t) {
    m.chain.layers.back().dst = Operand::memory(kChainOutput2);
    m.expected2 = values[t];
  }
  void finish(int last) {
    m.chain.layers.back().dst = Operand::memory(kChainOutput);
    m.expected = values[last];
  }

private:
  ModelChain &m;
  std::map<int, std::vector<int8_t>> values;
  int next = 0;
};

} // namespace

ModelChain dsCnnChain(std::mt19937 &rng, bool head) {
  ModelChain m;
  Builder b(m);
  m.input = randomTensor(49 * 10, rng);
  int t = b.add(
      makeLayer({LayerKind::Conv, 49, 10, 1, 64, 10, 4, 2, 2, 4, 1, 5, 2, true},
                rng),
      "conv1 10x4/2 1->64", -1);
  for (int i = 1; i <= 4; ++i) {
    std::string n = std::to_string(i);
    t = b.add(makeLayer({LayerKind::DepthwiseConv, 25, 5, 64, 64, 3, 3, 1, 1, 1,
                         1, 1, 1, true},
                        rng),
              "dw" + n + " 3x3 64", t);
    t = b.add(makeLayer({LayerKind::Conv, 25, 5, 64, 64, 1, 1, 1, 1, 0, 0, 0, 0,
                         true},
                        rng),
              "pw" + n + " 1x1 64->64", t);
  }
  if (head) {
    t = b.add(makeLayer({LayerKind::AvgPool, 25, 5, 64, 64, 5, 5, 5, 5}, rng),
              "avgpool 5x5/5", t);
    t = b.add(makeLayer({LayerKind::MatMul, 1, 1, 5 * 64, 12}, rng),
              "fc 320->12", t);
  }
  b.finish(t);
  return m;
}

ModelChain resNet8Chain(std::mt19937 &rng, bool adds, bool head) {
  ModelChain m;
  Builder b(m);
  m.input = randomTensor(32 * 32 * 3, rng);
  auto conv = [&](int h, int ic, int oc, int k, int s, bool relu) {
    int pad = k / 2;
    // Stride 2: ONNX "same" padding puts the extra row/column at the end.
    LayerShape shape{
        LayerKind::Conv,  h,   h,   ic,  oc, k, k, s, s, s == 1 ? pad : 0,
        s == 1 ? pad : 0, pad, pad, relu};
    return makeLayer(shape, rng);
  };
  auto residual = [&](int h, int ch) {
    NpuLayer a = makeLayer({LayerKind::Add, h, h, ch, ch}, rng);
    a.actMin = std::max(a.actMin, a.outputZp); // ReLU after the add.
    return a;
  };
  int x = b.add(conv(32, 3, 16, 3, 1, true), "conv1 3x3 3->16", -1);
  int a = b.add(conv(32, 16, 16, 3, 1, true), "s1 conv 3x3 16->16 (a)", x);
  int c = b.add(conv(32, 16, 16, 3, 1, !adds), "s1 conv 3x3 16->16 (b)", a);
  if (adds) {
    c = b.add(residual(32, 16), "s1 add", x, c);
  }
  a = b.add(conv(32, 16, 32, 3, 2, true), "s2 conv 3x3/2 16->32", c);
  int d = b.add(conv(16, 32, 32, 3, 1, !adds), "s2 conv 3x3 32->32", a);
  int s = b.add(conv(32, 16, 32, 1, 2, false), "s2 shortcut 1x1/2 16->32", c);
  int y = adds ? b.add(residual(16, 32), "s2 add", d, s) : d;
  a = b.add(conv(16, 32, 64, 3, 2, true), "s3 conv 3x3/2 32->64", y);
  d = b.add(conv(8, 64, 64, 3, 1, !adds), "s3 conv 3x3 64->64", a);
  if (!adds) {
    b.output2(d);
  }
  s = b.add(conv(16, 32, 64, 1, 2, false), "s3 shortcut 1x1/2 32->64", y);
  int z = adds ? b.add(residual(8, 64), "s3 add", d, s) : s;
  if (head) {
    z = b.add(makeLayer({LayerKind::AvgPool, 8, 8, 64, 64, 8, 8, 8, 8}, rng),
              "avgpool 8x8", z);
    z = b.add(makeLayer({LayerKind::MatMul, 1, 1, 64, 10}, rng), "fc 64->10",
              z);
  }
  b.finish(z);
  return m;
}

} // namespace osprey::compiler::npu::testing
