// A protobuf wire-format walker that finds the first structural error.
#include "compiler/import/onnx/proto_diagnosis.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "google/protobuf/descriptor.h"

namespace osprey::compiler::onnximport {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// protobuf's default recursion limit for nested messages and groups.
constexpr int kMaxDepth = 100;

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// Where the walk is and how it got there.
struct Frame {
  std::string path;
  const Descriptor *descriptor = nullptr;
};

// The first error found: its offset in the input and its description.
struct Failure {
  size_t offset = 0;
  std::string path;
  std::string what;
  bool truncated = false; // The data ends inside the broken item.
};

class Walker {
public:
  explicit Walker(llvm::StringRef bytes) : bytes_(bytes) {}

  std::optional<Failure> walkMessage(size_t begin, size_t end,
                                     const Frame &frame, int depth) {
    if (depth > kMaxDepth) {
      return fail(begin, frame.path, "messages nest more than " +
                                         std::to_string(kMaxDepth) +
                                         " levels deep");
    }
    std::vector<int> counts(
        frame.descriptor ? frame.descriptor->field_count() : 0, 0);
    size_t pos = begin;
    while (pos < end) {
      const size_t tagOffset = pos;
      uint64_t tag = 0;
      if (!readVarint(&pos, end, &tag)) {
        return fail(tagOffset, frame.path,
                    pos >= end ? "a field tag runs past the end of the data"
                               : "a field tag is a varint longer than 10 bytes",
                    pos >= end);
      }
      const uint32_t wireType = uint32_t(tag & 7);
      const uint64_t number = tag >> 3;
      if (number == 0 || number > 536870911u) {
        return fail(tagOffset, frame.path,
                    "field number " + std::to_string(number) +
                        " is not valid (byte 0x" + hexByte(tagOffset) + ")");
      }
      const FieldDescriptor *field =
          frame.descriptor ? frame.descriptor->FindFieldByNumber(int(number))
                           : nullptr;
      std::string path = fieldPath(frame, field, number, &counts);
      switch (wireType) {
      case kVarint: {
        uint64_t value;
        if (!readVarint(&pos, end, &value)) {
          return fail(tagOffset, path,
                      pos >= end ? "a varint runs past the end of the data"
                                 : "a varint is longer than 10 bytes",
                      pos >= end);
        }
        break;
      }
      case kFixed64:
      case kFixed32: {
        const size_t size = wireType == kFixed64 ? 8 : 4;
        if (end - pos < size) {
          return fail(tagOffset, path,
                      "a " + std::to_string(size) + "-byte value needs " +
                          std::to_string(size) + " bytes, " +
                          std::to_string(end - pos) + " remain",
                      true);
        }
        pos += size;
        break;
      }
      case kLengthDelimited: {
        uint64_t length;
        if (!readVarint(&pos, end, &length)) {
          return fail(tagOffset, path,
                      "a length runs past the end of the data", true);
        }
        if (length > end - pos) {
          // Data that ends inside a message: the deepest field cut off says
          // more than the outermost one.
          if (end == bytes_.size() && field &&
              field->type() == FieldDescriptor::TYPE_MESSAGE) {
            Frame nested{path, field->message_type()};
            if (auto failure = walkMessage(pos, end, nested, depth + 1)) {
              return failure;
            }
          }
          return fail(tagOffset, path,
                      "declares " + std::to_string(length) +
                          " bytes but only " + std::to_string(end - pos) +
                          " remain" +
                          (end == bytes_.size() ? "" : " in the enclosing "
                                                       "message"),
                      end == bytes_.size());
        }
        const size_t contentEnd = pos + size_t(length);
        if (field && field->type() == FieldDescriptor::TYPE_MESSAGE) {
          Frame nested{path, field->message_type()};
          if (auto failure = walkMessage(pos, contentEnd, nested, depth + 1)) {
            return failure;
          }
        } else if (field && field->is_packable()) {
          if (auto failure = walkPacked(pos, contentEnd, field, path)) {
            return failure;
          }
        }
        pos = contentEnd;
        break;
      }
      case kStartGroup: {
        // Groups do not occur in ONNX; skip one as unknown data.
        Frame group{path, nullptr};
        size_t groupEnd;
        if (auto failure =
                skipGroup(pos, end, number, group, depth + 1, &groupEnd)) {
          return failure;
        }
        pos = groupEnd;
        break;
      }
      case kEndGroup:
        return fail(tagOffset, path,
                    "an end-group marker has no matching start");
      default:
        return fail(tagOffset, path,
                    "wire type " + std::to_string(wireType) +
                        " does not exist (byte 0x" + hexByte(tagOffset) +
                        ")");
      }
    }
    return std::nullopt;
  }

private:
  std::optional<Failure> walkPacked(size_t begin, size_t end,
                                    const FieldDescriptor *field,
                                    const std::string &path) {
    switch (field->type()) {
    case FieldDescriptor::TYPE_DOUBLE:
    case FieldDescriptor::TYPE_FIXED64:
    case FieldDescriptor::TYPE_SFIXED64:
      if ((end - begin) % 8 != 0) {
        return fail(begin, path,
                    "packed 8-byte values span " +
                        std::to_string(end - begin) +
                        " bytes, not a multiple of 8");
      }
      return std::nullopt;
    case FieldDescriptor::TYPE_FLOAT:
    case FieldDescriptor::TYPE_FIXED32:
    case FieldDescriptor::TYPE_SFIXED32:
      if ((end - begin) % 4 != 0) {
        return fail(begin, path,
                    "packed 4-byte values span " +
                        std::to_string(end - begin) +
                        " bytes, not a multiple of 4");
      }
      return std::nullopt;
    default: {
      size_t pos = begin;
      while (pos < end) {
        const size_t at = pos;
        uint64_t value;
        if (!readVarint(&pos, end, &value)) {
          return fail(at, path, "a packed varint runs past its field");
        }
      }
      return std::nullopt;
    }
    }
  }

  std::optional<Failure> skipGroup(size_t begin, size_t end, uint64_t number,
                                   const Frame &frame, int depth,
                                   size_t *groupEnd) {
    if (depth > kMaxDepth) {
      return fail(begin, frame.path, "groups nest too deeply");
    }
    size_t pos = begin;
    while (pos < end) {
      const size_t tagOffset = pos;
      uint64_t tag;
      if (!readVarint(&pos, end, &tag)) {
        break;
      }
      const uint32_t wireType = uint32_t(tag & 7);
      if (wireType == kEndGroup) {
        if ((tag >> 3) != number) {
          return fail(tagOffset, frame.path,
                      "a group ends with the wrong field number");
        }
        *groupEnd = pos;
        return std::nullopt;
      }
      uint64_t value;
      switch (wireType) {
      case kVarint:
        if (!readVarint(&pos, end, &value)) {
          return fail(tagOffset, frame.path, "a varint is cut off", true);
        }
        break;
      case kFixed64:
      case kFixed32: {
        const size_t size = wireType == kFixed64 ? 8 : 4;
        if (end - pos < size) {
          return fail(tagOffset, frame.path, "a fixed value is cut off", true);
        }
        pos += size;
        break;
      }
      case kLengthDelimited:
        if (!readVarint(&pos, end, &value) || value > end - pos) {
          return fail(tagOffset, frame.path, "a length runs past the data",
                      true);
        }
        pos += size_t(value);
        break;
      case kStartGroup: {
        size_t inner;
        if (auto failure =
                skipGroup(pos, end, tag >> 3, frame, depth + 1, &inner)) {
          return failure;
        }
        pos = inner;
        break;
      }
      default:
        return fail(tagOffset, frame.path,
                    "wire type " + std::to_string(wireType) +
                        " does not exist");
      }
    }
    return fail(begin, frame.path, "a group is never closed", true);
  }

  bool readVarint(size_t *pos, size_t end, uint64_t *value) const {
    uint64_t result = 0;
    for (int i = 0; i < 10; ++i) {
      if (*pos >= end) {
        return false;
      }
      const uint8_t byte = uint8_t(bytes_[*pos]);
      ++*pos;
      result |= uint64_t(byte & 0x7f) << (7 * i);
      if ((byte & 0x80) == 0) {
        *value = result;
        return true;
      }
    }
    return false;
  }

  std::string hexByte(size_t offset) const {
    static const char kDigits[] = "0123456789abcdef";
    const uint8_t byte = uint8_t(bytes_[offset]);
    return {kDigits[byte >> 4], kDigits[byte & 15]};
  }

  static std::string fieldPath(const Frame &frame,
                               const FieldDescriptor *field, uint64_t number,
                               std::vector<int> *counts) {
    std::string name = field ? std::string(field->name())
                             : "field " + std::to_string(number);
    std::string path = frame.path.empty() ? name : frame.path + "." + name;
    if (field && field->is_repeated()) {
      int &count = (*counts)[field->index()];
      path += "[" + std::to_string(count++) + "]";
    }
    return path;
  }

  static std::optional<Failure> fail(size_t offset, const std::string &path,
                                     const std::string &what,
                                     bool truncated = false) {
    return Failure{offset, path, what, truncated};
  }

  llvm::StringRef bytes_;
};

// A guess at what the bytes are, from their first bytes, for files that are
// clearly not protobuf at all; empty when nothing is recognised.
std::string recogniseFormat(llvm::StringRef bytes) {
  if (bytes.starts_with("PK\x03\x04")) {
    return "a ZIP archive (a PyTorch checkpoint or an .onnx model packed "
           "into an archive?)";
  }
  if (bytes.starts_with("\x89PNG") || bytes.starts_with("\xff\xd8\xff")) {
    return "an image";
  }
  if (bytes.starts_with("\x7f"
                        "ELF")) {
    return "an ELF binary";
  }
  if (bytes.starts_with("\x93NUMPY")) {
    return "a NumPy .npy file";
  }
  if (bytes.starts_with("OSPM") ||
      (bytes.size() >= 8 && bytes.substr(4, 4) == "OSPM")) {
    return "an Osprey module (.osp), which is compiled already";
  }
  if (bytes.starts_with("\x1f\x8b")) {
    return "gzip-compressed data";
  }
  size_t printable = 0;
  const size_t sample = std::min<size_t>(bytes.size(), 512);
  for (size_t i = 0; i < sample; ++i) {
    const unsigned char c = bytes[i];
    if (c == '\n' || c == '\r' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
      ++printable;
    }
  }
  if (sample > 0 && printable == sample) {
    return "text (ONNX text or JSON format?): osprey-compile reads binary "
           "ModelProto files";
  }
  return "";
}

} // namespace

std::string diagnoseProtoParseFailure(llvm::StringRef bytes,
                                      const Descriptor *root) {
  if (bytes.empty()) {
    return "the file is empty";
  }
  std::optional<Failure> failure =
      Walker(bytes).walkMessage(0, bytes.size(), Frame{"", root}, 0);
  const std::string format = recogniseFormat(bytes);
  const std::string size = std::to_string(bytes.size());
  if (!failure) {
    std::string text = "the protobuf wire format of all " + size +
                       " bytes is intact, but the parser rejected it "
                       "(nesting deeper than 100 levels, or over 2 GB)";
    return format.empty() ? text : text + "; the data looks like " + format;
  }
  std::string text = "at byte " + std::to_string(failure->offset) + " of " +
                     size;
  if (!failure->path.empty()) {
    text += ", in field '" + failure->path + "'";
  }
  text += ": " + failure->what;
  if (!format.empty()) {
    text += "; the data looks like " + format + ", not a protobuf message";
  } else if (failure->truncated) {
    text += "; the file ends early: it is truncated (cut off while copying "
            "or downloading?) or a length in it is corrupt";
  } else {
    text += "; the file is corrupt or not a binary protobuf";
  }
  return text;
}

} // namespace osprey::compiler::onnximport
