// DriverRegistry: registration, lookup and device creation.
#include "hal/driver.h"

#include <string>

#include "gtest/gtest.h"

namespace osprey::hal {
namespace {

StatusOr<ref_ptr<Driver>> FailingCreate(osprey::Allocator*) {
  return UnavailableError("no such hardware here");
}

TEST(DriverRegistryTest, RegistersAndLooksUp) {
  static constexpr DriverFactory kA{"a", "first", &FailingCreate};
  static constexpr DriverFactory kB{"b", "second", &FailingCreate};
  DriverRegistry registry;
  EXPECT_EQ(registry.size(), 0u);
  ASSERT_TRUE(registry.Register(&kA).ok());
  ASSERT_TRUE(registry.Register(&kB).ok());
  EXPECT_EQ(registry.Register(&kA).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.size(), 2u);
  EXPECT_EQ(registry.factory(1), &kB);
  EXPECT_EQ(registry.factory(2), nullptr);
  auto found = registry.Lookup("b");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, &kB);
  auto missing = registry.Lookup("c");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(std::string(missing.status().message()).find("registered: a, b"), std::string::npos)
      << missing.status().message();
}

TEST(DriverRegistryTest, RejectsBadFactoriesAndOverflow) {
  DriverRegistry registry;
  EXPECT_EQ(registry.Register(nullptr).code(), StatusCode::kInvalidArgument);
  static constexpr DriverFactory kNoName{"", "x", &FailingCreate};
  EXPECT_EQ(registry.Register(&kNoName).code(), StatusCode::kInvalidArgument);
  static char names[DriverRegistry::kMaxDrivers + 1][8];
  static DriverFactory factories[DriverRegistry::kMaxDrivers + 1];
  for (size_t i = 0; i <= DriverRegistry::kMaxDrivers; ++i) {
    snprintf(names[i], sizeof(names[i]), "d%zu", i);
    factories[i] = {names[i], "", &FailingCreate};
  }
  for (size_t i = 0; i < DriverRegistry::kMaxDrivers; ++i) {
    ASSERT_TRUE(registry.Register(&factories[i]).ok());
  }
  EXPECT_EQ(registry.Register(&factories[DriverRegistry::kMaxDrivers]).code(),
            StatusCode::kResourceExhausted);
}

TEST(DriverRegistryTest, CreateErrorsCarryContext) {
  static constexpr DriverFactory kA{"flaky", "", &FailingCreate};
  DriverRegistry registry;
  ASSERT_TRUE(registry.Register(&kA).ok());
  auto device = registry.CreateDevice("flaky", {}, osprey::Allocator::Default());
  EXPECT_EQ(device.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(std::string(device.status().message()).find("creating HAL driver 'flaky'"),
            std::string::npos);
}

TEST(DriverRegistryTest, DefaultIsASingleton) {
  EXPECT_EQ(DriverRegistry::Default(), DriverRegistry::Default());
}

}  // namespace
}  // namespace osprey::hal
