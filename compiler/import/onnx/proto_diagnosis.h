// Explains why bytes do not parse as a protobuf message: where the wire
// format breaks, in which field, and what the file most likely is.
#ifndef OSPREY_COMPILER_IMPORT_ONNX_PROTO_DIAGNOSIS_H_
#define OSPREY_COMPILER_IMPORT_ONNX_PROTO_DIAGNOSIS_H_

#include <string>

#include "llvm/ADT/StringRef.h"

namespace google::protobuf {
class Descriptor;
} // namespace google::protobuf

namespace osprey::compiler::onnximport {

// Walks |bytes| as the wire format of a |root| message (fields are named
// through |root|'s descriptor, nested messages followed) and describes the
// first error: its byte offset and the file size, the field path (e.g.
// "graph.initializer[2].raw_data"), what is wrong, and a hint at what the
// file is (truncated, text, an archive, ...). When the walk finds no error
// (protobuf rejected the bytes for another reason, such as nesting depth)
// the text says so. Meant to follow "not a valid ...: ".
std::string diagnoseProtoParseFailure(llvm::StringRef bytes,
                                      const google::protobuf::Descriptor *root);

} // namespace osprey::compiler::onnximport

#endif // OSPREY_COMPILER_IMPORT_ONNX_PROTO_DIAGNOSIS_H_
