/* npu-v1: instruction set and binary command-stream format of the Osprey NPU.
 *
 * Dependency-free (C99 or C++, <stdint.h> only) so that the compiler's NPU
 * backend, the runtime driver and the simulator share one definition. The
 * format is versioned like a file format: any change to an existing field,
 * opcode, register index or semantic bumps NPU_ISA_VERSION. docs/npu.md is
 * the normative description; this header is its machine-readable part.
 *
 * All multi-byte values are little-endian 32-bit words.
 *
 * Executable blob ("npu-v1" executable format):
 *   npu_blob_header_t                       (8 words)
 *   npu_export_t[export_count]              (8 words each)
 *   uint32_t words[word_count]              (instruction words of all exports)
 *   npu_relocation_t[relocation_count]      (2 words each)
 *   char strings[string_bytes]              (NUL-terminated export names)
 *
 * Instruction word:
 *   bits  0..7   opcode (npu_opcode_t)
 *   bits  8..15  flags (NPU_FLAG_*; meaning depends on the opcode)
 *   bits 16..31  operand (SET_REG: register index; otherwise must be 0)
 * SET_REG is followed by one value word; every other instruction is one word.
 */
#ifndef OSPREY_DRIVERS_NPU_SCHEMA_NPU_ISA_H_
#define OSPREY_DRIVERS_NPU_SCHEMA_NPU_ISA_H_

#include <stdint.h>

#define NPU_ISA_VERSION 1u
/* "ONPU" read as a little-endian word. */
#define NPU_BLOB_MAGIC 0x55504E4Fu
/* Name of the executable format in hal::ExecutableParams::format. */
#define NPU_EXECUTABLE_FORMAT "npu-v1"

/*===--------------------------------------------------------------------===*/
/* Opcodes                                                                   */
/*===--------------------------------------------------------------------===*/

typedef enum npu_opcode_e {
  NPU_OP_END = 0x00,        /* Stop; the stream completes successfully. */
  NPU_OP_SET_REG = 0x01,    /* reg[operand] = next word. */
  NPU_OP_SYNC = 0x02,       /* Wait until DMA and compute engines are idle. */
  NPU_OP_DMA_READ = 0x10,   /* System memory -> SRAM (or weight memory). */
  NPU_OP_DMA_WRITE = 0x11,  /* SRAM -> system memory. */
  NPU_OP_CONV = 0x20,       /* 2-D convolution, int32 or requantized int8. */
  NPU_OP_CONV_RELU = 0x21,  /* CONV + requantization + ReLU (int8 out). */
  NPU_OP_DEPTH_CONV = 0x22, /* Depthwise 2-D convolution (multiplier 1). */
  NPU_OP_MAT_MUL = 0x23,    /* [M x K] activations times [N x K] weights. */
  NPU_OP_ACT_RELU = 0x30,   /* y = requant(max(x - zp, 0)). */
  NPU_OP_ACT_LRELU = 0x31,  /* Leaky ReLU with a separate alpha multiplier. */
  NPU_OP_POOL = 0x32,       /* Max or average pooling. */
  NPU_OP_E_ABS = 0x40,      /* y = requant(|x - zp|). */
  NPU_OP_C_MIN = 0x41,      /* Elementwise min with IFM2 or SCALAR. */
  NPU_OP_C_MAX = 0x42,      /* Elementwise max with IFM2 or SCALAR. */
  NPU_OP_E_ADD = 0x43,      /* int8 + int8 with rescaling (int8 out). */
  NPU_OP_E32_ADD = 0x44     /* int32 + int32 (saturating), opt. requant. */
} npu_opcode_t;

/* Flags (instruction bits 8..15). */
/* CONV, DEPTH_CONV, MAT_MUL, E32_ADD: requantize to int8 (else int32 out). */
#define NPU_FLAG_REQUANT 0x01u
/* DMA_READ: destination is the weight memory instead of the SRAM. */
#define NPU_FLAG_DMA_WEIGHTS 0x01u
/* POOL: average pooling (else max pooling). */
#define NPU_FLAG_POOL_AVG 0x01u
/* C_MIN, C_MAX: second operand is the SCALAR register (else IFM2). */
#define NPU_FLAG_SCALAR 0x01u

#define NPU_WORD_OPCODE(w) ((uint32_t)(w)&0xFFu)
#define NPU_WORD_FLAGS(w) (((uint32_t)(w) >> 8) & 0xFFu)
#define NPU_WORD_OPERAND(w) (((uint32_t)(w) >> 16) & 0xFFFFu)
#define NPU_MAKE_WORD(opcode, flags, operand)                        \
  ((uint32_t)(opcode) | ((uint32_t)(flags) << 8) |                   \
   ((uint32_t)(operand) << 16))

/*===--------------------------------------------------------------------===*/
/* Configuration registers (SET_REG operand)                                 */
/*===--------------------------------------------------------------------===*/
/* Registers keep their values across instructions and start at the reset
 * value listed in docs/npu.md (0 except the noted ones). SET_REG rejects
 * values outside the range given for each register. Signed registers hold a
 * two's-complement int32 in the value word. */

typedef enum npu_register_e {
  /* Input feature map (HWC, dense) in SRAM. */
  NPU_REG_IFM_ADDR = 0,   /* SRAM byte address. */
  NPU_REG_IFM_H = 1,      /* 1..65535 (reset 1). */
  NPU_REG_IFM_W = 2,      /* 1..65535 (reset 1). */
  NPU_REG_IFM_C = 3,      /* 1..65535 (reset 1). */
  NPU_REG_IFM_ZP = 4,     /* -128..127. */
  /* Second input of binary elementwise operations. */
  NPU_REG_IFM2_ADDR = 5,  /* SRAM byte address. */
  NPU_REG_IFM2_ZP = 6,    /* -128..127. */
  /* Output feature map (HWC, dense) in SRAM. */
  NPU_REG_OFM_ADDR = 7,   /* SRAM byte address. */
  NPU_REG_OFM_H = 8,      /* 1..65535 (reset 1). */
  NPU_REG_OFM_W = 9,      /* 1..65535 (reset 1). */
  NPU_REG_OFM_C = 10,     /* 1..65535 (reset 1). */
  NPU_REG_OFM_ZP = 11,    /* -128..127. */
  /* Weights and per-channel parameters in weight memory. */
  NPU_REG_WGT_ADDR = 12,    /* Weight-memory byte address. */
  NPU_REG_WGT_ZP = 13,      /* -128..127. */
  NPU_REG_QPARAM_ADDR = 14, /* Weight-memory address of npu_qparam_t[OFM_C],
                               4-byte aligned. */
  /* Kernel geometry. */
  NPU_REG_KERNEL_H = 15,  /* 1..16 (reset 1). */
  NPU_REG_KERNEL_W = 16,  /* 1..16 (reset 1). */
  NPU_REG_STRIDE_H = 17,  /* 1..8 (reset 1). */
  NPU_REG_STRIDE_W = 18,  /* 1..8 (reset 1). */
  NPU_REG_PAD_TOP = 19,   /* 0..15; must be < KERNEL_H at use. */
  NPU_REG_PAD_LEFT = 20,  /* 0..15; must be < KERNEL_W at use. */
  /* Output clamp of int8 results. */
  NPU_REG_ACT_MIN = 21,   /* -128..127 (reset -128). */
  NPU_REG_ACT_MAX = 22,   /* -128..127 (reset 127). */
  /* Per-tensor requantization (elementwise and activation ops). */
  NPU_REG_OUT_MULT = 23,  /* 0..2^31-1. */
  NPU_REG_OUT_SHIFT = 24, /* -31..30. */
  NPU_REG_IN1_MULT = 25,  /* 0..2^31-1 (E_ADD input 1 rescale). */
  NPU_REG_IN1_SHIFT = 26, /* -31..30. */
  NPU_REG_IN2_MULT = 27,  /* 0..2^31-1 (E_ADD input 2 rescale). */
  NPU_REG_IN2_SHIFT = 28, /* -31..30. */
  NPU_REG_ADD_LSHIFT = 29, /* 0..20 (E_ADD pre-shift of inputs). */
  NPU_REG_ALPHA_MULT = 30, /* 0..2^31-1 (ACT_LRELU negative side). */
  NPU_REG_ALPHA_SHIFT = 31, /* -31..30. */
  NPU_REG_SCALAR = 32,     /* -128..127 (C_MIN/C_MAX scalar operand). */
  /* DMA descriptor: ROWS rows of LEN bytes. */
  NPU_REG_DMA_SYS_ADDR = 33,   /* Device address in system memory (patched
                                  by relocations). */
  NPU_REG_DMA_LOC_ADDR = 34,   /* SRAM / weight-memory byte address. */
  NPU_REG_DMA_LEN = 35,        /* 1..2^24 bytes per row (reset 1). */
  NPU_REG_DMA_ROWS = 36,       /* 1..65535 (reset 1). */
  NPU_REG_DMA_SYS_STRIDE = 37, /* Bytes between rows in system memory. */
  NPU_REG_DMA_LOC_STRIDE = 38, /* Bytes between rows in local memory. */
  NPU_REG_COUNT = 39
} npu_register_t;

/* Per-output-channel parameters in weight memory (12 bytes each). */
typedef struct npu_qparam_s {
  int32_t bias;       /* Added to the int32 accumulator. */
  int32_t multiplier; /* 0..2^31-1 (Q31 fixed point). */
  int32_t shift;      /* -31..30: > 0 shifts left, < 0 rounds right. */
} npu_qparam_t;

/*===--------------------------------------------------------------------===*/
/* Executable blob                                                           */
/*===--------------------------------------------------------------------===*/

typedef struct npu_blob_header_s {
  uint32_t magic;            /* NPU_BLOB_MAGIC */
  uint32_t version;          /* NPU_ISA_VERSION */
  uint32_t export_count;     /* >= 1 */
  uint32_t word_count;       /* Instruction words of all exports. */
  uint32_t relocation_count; /* Relocations of all exports. */
  uint32_t string_bytes;     /* Size of the string table. */
  uint32_t reserved[2];      /* 0 */
} npu_blob_header_t;

/* One entry point: a command stream and the buffers it binds. */
typedef struct npu_export_s {
  uint32_t name_offset;      /* Into the string table; NUL-terminated. */
  uint32_t first_word;       /* Index into words[]. */
  uint32_t word_count;       /* Ends with an END instruction. */
  uint32_t first_relocation; /* Index into relocations[]. */
  uint32_t relocation_count;
  uint32_t binding_count;    /* <= NPU_MAX_BINDINGS */
  uint32_t binding_write_mask; /* Bit i: binding i is written by DMA_WRITE. */
  uint32_t reserved;         /* 0 */
} npu_export_t;

/* At submit time the driver adds the device address of binding |binding|
 * (plus the binding's offset) to the value word at |word| (an index relative
 * to the export's first word, which must be the value word of a
 * SET_REG DMA_SYS_ADDR). */
typedef struct npu_relocation_s {
  uint32_t word;
  uint32_t binding;
} npu_relocation_t;

#define NPU_MAX_BINDINGS 32u

#endif /* OSPREY_DRIVERS_NPU_SCHEMA_NPU_ISA_H_ */
