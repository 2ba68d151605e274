// Parse throughput per core: reads FILE(s) end to end on ONE thread through
// data::ExampleReader (decompress + frame + parse into label/ids/values) and
// prints one JSON line per file with the best and median of --repeat passes.
//
//   build/bench/parse_bench [--repeat 5] [--field-size 39] [--id-base 0] FILE...
//
// This is the per-core figure of issue #2 (targets: LibSVM >= 1.5 M lines/s,
// TFRecord seed schema >= 3 M records/s uncompressed). bench/parse_bench.sh runs
// it side by side with the tf.data peer (bench/peers/tf_parse.py).
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ctrain/data/example_reader.h"

namespace {

struct Args {
  int repeat = 5;
  int32_t field_size = 39;
  int32_t id_base = 0;
  std::vector<std::string> files;
};

int Fail(const ctrain::Status& s) {
  std::fprintf(stderr, "parse_bench: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "parse_bench: %s needs a value\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--repeat") a.repeat = std::atoi(val());
    else if (k == "--field-size") a.field_size = std::atoi(val());
    else if (k == "--id-base") a.id_base = std::atoi(val());
    else a.files.push_back(k);
  }
  if (a.files.empty()) {
    std::fprintf(stderr, "usage: parse_bench [--repeat N] [--field-size F] [--id-base B] FILE...\n");
    return 2;
  }
  ctrain::data::ExampleReaderOptions o;
  o.field_size = a.field_size;
  o.id_base = a.id_base;
  std::vector<int64_t> ids(a.field_size);
  std::vector<float> vals(a.field_size);
  for (const auto& f : a.files) {
    struct stat st{};
    ::stat(f.c_str(), &st);
    std::vector<double> secs;
    uint64_t records = 0;
    std::string fmt, comp;
    double checksum = 0;
    for (int r = 0; r < a.repeat + 1; ++r) {  // pass 0 warms the page cache
      auto t0 = std::chrono::steady_clock::now();
      auto rd = ctrain::data::OpenExampleReader(f, o);
      if (!rd.ok()) return Fail(rd.status());
      float label;
      uint64_t n = 0;
      double sum = 0;
      for (;;) {
        auto more = (*rd)->Next(&label, ids.data(), vals.data());
        if (!more.ok()) return Fail(more.status());
        if (!*more) break;
        sum += label + static_cast<double>(ids[a.field_size - 1]);
        ++n;
      }
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r > 0) secs.push_back(s);
      records = n;
      checksum = sum;
      fmt = ctrain::data::RecordFormatName((*rd)->format());
      comp = ctrain::io::CompressionName((*rd)->compression());
    }
    std::sort(secs.begin(), secs.end());
    double best = secs.front(), med = secs[secs.size() / 2];
    std::printf(
        "{\"peer\":\"ctrain\",\"file\":\"%s\",\"format\":\"%s\",\"compression\":\"%s\",\"records\":%llu,"
        "\"bytes\":%lld,\"threads\":1,\"seconds_min\":%.4f,\"seconds_median\":%.4f,\"records_per_sec\":%.0f,"
        "\"records_per_sec_median\":%.0f,\"mb_per_sec\":%.1f,\"checksum\":%.0f}\n",
        f.c_str(), fmt.c_str(), comp.c_str(), static_cast<unsigned long long>(records),
        static_cast<long long>(st.st_size), best, med, records / best, records / med, st.st_size / best / 1e6,
        checksum);
    std::fflush(stdout);
  }
  return 0;
}
