// Umbrella header of the task system: worker pool and task DAGs.
#ifndef OSPREY_RUNTIME_TASK_API_H_
#define OSPREY_RUNTIME_TASK_API_H_

#include "runtime/task/executor.h"
#include "runtime/task/submission.h"

#endif  // OSPREY_RUNTIME_TASK_API_H_
