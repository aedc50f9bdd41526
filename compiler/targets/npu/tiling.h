// SRAM tiling of one NPU layer and its cost under the documented cycle
// model (docs/npu.md, section 5).
//
// A layer runs as a sequence of steps. A step computes one output tile
// (output rows x output columns x output channels) from one input tile; a
// Conv or MatMul whose reduction does not fit splits its input channels into
// several steps that leave int32 partial sums, summed with E32_ADD and
// requantized on the last split. Steps alternate between two halves of the
// streaming SRAM so that the next step's input loads and the previous step's
// output stores overlap the current step's compute. Weights and per-channel
// parameters move into weight memory in blocks: the whole layer, one block per
// output-channel tile, or one per step when even that does not fit.
#ifndef OSPREY_COMPILER_TARGETS_NPU_TILING_H_
#define OSPREY_COMPILER_TARGETS_NPU_TILING_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "compiler/targets/npu/npu_config.h"
#include "compiler/targets/npu/npu_layer.h"

namespace osprey::compiler::npu {

// What the surroundings of a layer leave to it.
struct TilingBudget {
  // SRAM for this layer's steps: both halves plus the int32 accumulator of
  // an input-channel split.
  uint64_t sramBytes = 0;
  // Largest weight block (weights + parameters) that may be loaded at once.
  uint64_t weightBlockBytes = 0;
  // Operands that stay in SRAM (chains): their tiles must be contiguous
  // slices of the dense tensor (whole rows, all channels).
  bool inputResident = false, input2Resident = false, outputResident = false;
};

enum class WeightBlocking : uint8_t {
  None,       // No weights (pools, elementwise).
  Whole,      // One block with every weight of the layer.
  PerChannel, // One block per output-channel tile (all input channels).
  PerStep,    // One block per (output-channel tile, input-channel split).
};

struct Tiling {
  // Conv, DepthwiseConv, pools: output rows/columns per tile; MatMul: rows of
  // the [m][k] input per tile (colTile 1); elementwise: elements per tile.
  int64_t rowTile = 1, colTile = 1;
  int64_t chanTile = 1; // Output channels per tile (all channels: C).
  int64_t icTile = 1;   // Conv/MatMul input channels per split (all: IC).
  WeightBlocking blocking = WeightBlocking::None;

  int64_t rowTiles = 1, colTiles = 1, chanTiles = 1, icSplits = 1;
  // Bytes of one SRAM half (input tiles + output tile + int32 partial sums)
  // and of the accumulator that persists across input-channel splits.
  uint64_t halfBytes = 0, accBytes = 0;
  // Largest weight block and the sum of all blocks (the packed weights).
  uint64_t weightBlockBytes = 0, weightBytes = 0;
  int64_t steps() const { return rowTiles * colTiles * chanTiles * icSplits; }
};

// One step of a tiled layer, in execution order.
struct Step {
  // Output tile: rows [oy0, oy1), columns [ox0, ox1) (elementwise:
  // elements [oy0, oy1)).
  int64_t oy0 = 0, oy1 = 1, ox0 = 0, ox1 = 1;
  int64_t c0 = 0, c1 = 1;   // Output channels.
  int64_t ic0 = 0, ic1 = 1; // Input channels (Conv, MatMul).
  int64_t icIndex = 0;      // Split index (last: icSplits - 1).
  int64_t block = 0;        // Weight block index.
  // Input window: rows [iy0, iy1), columns [ix0, ix1), and the padding the
  // tile's first window has above/left of it.
  int64_t iy0 = 0, iy1 = 1, ix0 = 0, ix1 = 1;
  int32_t padTop = 0, padLeft = 0;
};

// Calls |fn| for every step of |layer| tiled by |tiling|, in order.
void forEachStep(const NpuLayer &layer, const Tiling &tiling,
                 const std::function<void(const Step &)> &fn);

// Bytes and cycles of a tiled layer under the cycle model.
struct LayerCost {
  uint64_t computeCycles =
      0; // Compute engine busy (incl. 16-cycle fill per instruction).
  uint64_t macCycles = 0; // Of them, MAC instructions.
  uint64_t dmaCycles = 0; // DMA engine busy (setup + bytes / bandwidth).
  uint64_t dmaBytes = 0;
  // Estimated cycles with the double-buffered schedule: the first step's
  // loads, then per step max(compute, next loads + previous stores), then the
  // last stores.
  uint64_t totalCycles = 0;
  int64_t steps = 0;
};

// Compute cycles of one NPU instruction (cycle model + pipeline fill).
uint64_t convCycles(const NpuConfig &config, int64_t pixels, int64_t oc,
                    int64_t taps, int64_t ic);
uint64_t depthwiseCycles(const NpuConfig &config, int64_t pixels, int64_t c,
                         int64_t taps);
uint64_t poolCycles(const NpuConfig &config, int64_t pixels, int64_t c,
                    int64_t taps);
uint64_t elementwiseCycles(const NpuConfig &config, int64_t elements);
uint64_t dmaCycles(const NpuConfig &config, uint64_t bytes);

// Estimated cost of |layer| tiled by |tiling| as its own stream.
LayerCost estimateCost(const NpuLayer &layer, const NpuConfig &config,
                       const Tiling &tiling, const TilingBudget &budget);

// Chooses the tiling with the lowest estimated cycles that fits |budget|:
// output rows first (tiles a multiple of the PE array's rows where that
// costs nothing), output-channel tiles a multiple of the array's columns,
// then input-channel splits, then column splits. UNIMPLEMENTED naming the
// layer and the sizes when even the smallest tile does not fit.
absl::StatusOr<Tiling> chooseTiling(const NpuLayer &layer,
                                    const NpuConfig &config,
                                    const TilingBudget &budget);

// The tiling and cost of |layer| compiled alone with the whole stream SRAM
// and weight memory of |config| (what a partitioner compares).
absl::StatusOr<LayerCost> estimateLayer(const NpuLayer &layer,
                                        const NpuConfig &config);

// Sizes of weight-memory data (also used by the emitter's packing).
constexpr uint64_t kQParamBytes = 12;
uint64_t alignUp(uint64_t v, uint64_t a);
// Bytes of the weight sub-block of output channels [c0, c1) and input
// channels [ic0, ic1) of |layer|: the weights (padded to 4 bytes), then one
// npu_qparam_t per output channel (the bias only in the first split).
uint64_t weightSubBlockBytes(const NpuLayer &layer, int64_t c0, int64_t c1,
                             int64_t ic0, int64_t ic1);

} // namespace osprey::compiler::npu

#endif // OSPREY_COMPILER_TARGETS_NPU_TILING_H_
