#include "runtime/base/ref_ptr.h"

#include <gtest/gtest.h>

namespace osprey {
namespace {

class Thing : public RefObject {
 public:
  explicit Thing(int* destroyed) : destroyed_(destroyed) {}
  ~Thing() override { ++*destroyed_; }

 private:
  int* destroyed_;
};

TEST(RefPtrTest, LastReleaseDestroysAndFrees) {
  CountingAllocator counting(Allocator::Default());
  int destroyed = 0;
  {
    auto made = MakeRef<Thing>(&counting, &destroyed);
    ASSERT_TRUE(made.ok());
    ref_ptr<Thing> a = std::move(made).value();
    EXPECT_EQ(a->ref_count(), 1u);
    ref_ptr<Thing> b = a;
    EXPECT_EQ(a->ref_count(), 2u);
    ref_ptr<RefObject> c = std::move(b);
    EXPECT_EQ(a->ref_count(), 2u);
    c.reset();
    EXPECT_EQ(destroyed, 0);
  }
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(counting.live(), 0u);
}

}  // namespace
}  // namespace osprey
