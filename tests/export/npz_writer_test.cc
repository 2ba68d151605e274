// .npz archives (export/npz_writer.h): read back with libzip, every entry is
// "<name>.npy" holding the .npy header and the array's bytes, stored as
// numpy.savez stores them; names that collide are refused.
#include "ctrain/export/npz_writer.h"

#include <zip.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/temp_dir.h"

namespace ctrain::exporter {
namespace {

// name -> bytes of every entry of the zip at `path`.
std::map<std::string, std::string> ReadZip(const std::string& path) {
  std::map<std::string, std::string> out;
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &err);
  EXPECT_NE(z, nullptr) << "zip error " << err;
  if (z == nullptr) return out;
  for (zip_int64_t i = 0; i < zip_get_num_entries(z, 0); ++i) {
    zip_stat_t st;
    zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st);
    EXPECT_EQ(st.comp_method, ZIP_CM_STORE) << st.name;
    zip_file_t* f = zip_fopen_index(z, static_cast<zip_uint64_t>(i), 0);
    std::string bytes(st.size, '\0');
    EXPECT_EQ(zip_fread(f, bytes.data(), st.size), static_cast<zip_int64_t>(st.size));
    zip_fclose(f);
    out[st.name] = bytes;
  }
  zip_close(z);
  return out;
}

TEST(Npz, EntriesAreNpyFiles) {
  const std::string dir = ctrain::testing::TestTempDir("npz_writer", "entries");
  const std::vector<float> labels{1, 0, 1};
  const std::vector<int64_t> ids{5, 6, 7, 8, 9, 10};
  const std::vector<float> empty;
  ASSERT_TRUE(WriteNpz(dir + "/a.npz", {{"label", NpyType::kF32, {3}, labels.data()},
                                        {"C1.ids", NpyType::kI64, {3, 2}, ids.data()},
                                        {"none", NpyType::kF32, {0}, empty.data()}})
                  .ok());
  const auto z = ReadZip(dir + "/a.npz");
  ASSERT_EQ(z.size(), 3u);
  const std::string h = NpyHeader(NpyType::kF32, {3});
  EXPECT_EQ(z.at("label.npy"), h + std::string(reinterpret_cast<const char*>(labels.data()), 12));
  const std::string hi = NpyHeader(NpyType::kI64, {3, 2});
  EXPECT_EQ(z.at("C1.ids.npy"), hi + std::string(reinterpret_cast<const char*>(ids.data()), 48));
  EXPECT_EQ(z.at("none.npy"), NpyHeader(NpyType::kF32, {0}));
  // No temporary is left beside it.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);

  Status dup = WriteNpz(dir + "/b.npz", {{"x", NpyType::kF32, {3}, labels.data()}, {"x", NpyType::kF32, {3}, labels.data()}});
  EXPECT_EQ(dup.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dup.message(), dir + "/b.npz: npz array name 'x' repeats");
  EXPECT_FALSE(std::filesystem::exists(dir + "/b.npz"));
}

TEST(Npz, SpecColumnArraysNamesAndShapes) {
  data::SpecColumns c;
  c.labels = {1, 0};
  data::SpecColumn price;
  price.name = "price";
  price.values = {2.5f, 4};
  data::SpecColumn pair;
  pair.name = "pair";
  pair.kind = data::SpecColumn::Kind::kIds;
  pair.width = 2;
  pair.ids = {1, 2, 3, 4};
  data::SpecColumn tags;
  tags.name = "tags";
  tags.kind = data::SpecColumn::Kind::kBag;
  tags.weighted = true;
  tags.ids = {7, 8, 9};
  tags.offsets = {0, 2};
  tags.values = {0.5f, 0.5f, 1};
  c.columns = {price, pair, tags};
  auto a = SpecColumnArrays(c);
  ASSERT_TRUE(a.ok());
  std::vector<std::string> names;
  for (const NpzArray& x : *a) names.push_back(x.name);
  EXPECT_EQ(names, (std::vector<std::string>{"label", "price", "pair", "tags.ids", "tags.offsets", "tags.weights"}));
  EXPECT_EQ((*a)[2].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ((*a)[3].shape, (std::vector<int64_t>{3}));
  EXPECT_EQ((*a)[4].shape, (std::vector<int64_t>{2}));
  EXPECT_EQ((*a)[4].data, c.columns[2].offsets.data());
  c.columns[0].name = "tags.ids";  // collides with the bag's ids
  auto clash = SpecColumnArrays(c);
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.status().message().find("'tags.ids'"), std::string_view::npos);
}

}  // namespace
}  // namespace ctrain::exporter
