// Status propagation macros for compiler code using absl::Status.
#ifndef OSPREY_COMPILER_GRAPH_STATUS_H_
#define OSPREY_COMPILER_GRAPH_STATUS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns the status of |expr| from the enclosing function unless it is OK.
#define COMPILER_RETURN_IF_ERROR(expr)                                         \
  do {                                                                         \
    absl::Status _status = (expr);                                             \
    if (!_status.ok()) {                                                       \
      return _status;                                                          \
    }                                                                          \
  } while (0)

#define COMPILER_CONCAT_INNER(a, b) a##b
#define COMPILER_CONCAT(a, b) COMPILER_CONCAT_INNER(a, b)
// Declares |lhs| from the value of the StatusOr |expr|, or returns its error.
#define COMPILER_ASSIGN_OR_RETURN(lhs, expr)                                   \
  COMPILER_ASSIGN_OR_RETURN_IMPL(COMPILER_CONCAT(_statusor, __LINE__), lhs,    \
                                 expr)
#define COMPILER_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)                         \
  auto tmp = (expr);                                                           \
  if (!tmp.ok()) {                                                             \
    return tmp.status();                                                       \
  }                                                                            \
  lhs = std::move(*tmp)

#endif // OSPREY_COMPILER_GRAPH_STATUS_H_
