// Input pipeline throughput: the Pipeline alone (read -> batch -> parse ->
// prefetch, no training), in records/s and records/s per parse thread, on
// synthetic Criteo-shaped files (data/synth.h) written as TFRecord (none and
// gzip) and LibSVM. One JSON line per case:
//   {"bench":"pipeline","format":"tfrecord","compression":"gzip","rows":N,
//    "file_bytes":B,"num_parallel_calls":2,"num_parallel_reads":1,"batch_size":1024,
//    "seconds":s (best of --repeat),"records_per_sec":r,"records_per_sec_per_thread":r/calls,
//    "mb_per_sec":file MB/s,"label_sum":..,"id_sum":..}
// label_sum / id_sum are checksums to compare with peers (bench/peers/tf_parse.py).
//
// Usage: pipeline_bench [--rows N] [--dir D] [--repeat R] [--batch-size B]
//                       [--calls 1,2] [--reads R] [--keep]
// Exit status: non-zero if a pipeline fails or a pass sees a wrong row count.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ctrain/data/example_reader.h"
#include "ctrain/data/pipeline.h"
#include "ctrain/data/synth.h"

using namespace ctrain;

namespace {

struct Case {
  data::RecordFormat format;
  io::Compression compression;
  std::string name;
};

Status WriteSynth(const std::string& path, const Case& c, int64_t rows) {
  data::SynthOptions so;
  so.rows = rows;
  CTRAIN_ASSIGN_OR_RETURN(auto gen, data::SynthGenerator::Create(so));
  data::ExampleWriterOptions wo;
  wo.format = c.format;
  wo.compression = c.compression;
  CTRAIN_ASSIGN_OR_RETURN(auto w, data::OpenExampleWriter(path, wo));
  float label;
  std::vector<int64_t> ids(so.field_size);
  std::vector<float> vals(so.field_size);
  for (int64_t r = 0; r < rows; ++r) {
    gen->Row(r, &label, ids.data(), vals.data());
    CTRAIN_RETURN_IF_ERROR(w->Write(label, ids, vals));
  }
  return w->Close();
}

std::vector<int32_t> ParseList(const char* s) {
  std::vector<int32_t> v;
  for (const char* p = s; *p;) {
    v.push_back(std::atoi(p));
    const char* c = std::strchr(p, ',');
    if (!c) break;
    p = c + 1;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = 200000;
  int repeat = 3;
  int64_t batch_size = 1024;
  int32_t reads = 1;
  bool keep = false;
  std::string dir;
  std::vector<int32_t> calls = {1, 2};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "pipeline_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--rows") rows = std::atoll(next());
    else if (a == "--repeat") repeat = std::atoi(next());
    else if (a == "--batch-size") batch_size = std::atoll(next());
    else if (a == "--dir") dir = next();
    else if (a == "--calls") calls = ParseList(next());
    else if (a == "--reads") reads = std::atoi(next());
    else if (a == "--keep") keep = true;
    else {
      std::fprintf(stderr, "pipeline_bench: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  bool made_dir = false;
  if (dir.empty()) {
    char tmpl[] = "/tmp/ctrain_pipeline_bench.XXXXXX";
    dir = mkdtemp(tmpl);
    made_dir = true;
  }
  const std::vector<Case> cases = {{data::RecordFormat::kTFRecord, io::Compression::kNone, "tfrecord"},
                                   {data::RecordFormat::kTFRecord, io::Compression::kGzip, "tfrecord"},
                                   {data::RecordFormat::kLibSvm, io::Compression::kNone, "libsvm"}};
  int rc = 0;
  for (const Case& c : cases) {
    const std::string comp(io::CompressionName(c.compression));
    const std::string path = dir + "/synth_" + std::to_string(rows) + "." + c.name + (comp == "none" ? "" : "." + comp);
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      Status s = WriteSynth(path, c, rows);
      if (!s.ok()) {
        std::fprintf(stderr, "pipeline_bench: %s\n", s.ToString().c_str());
        return 1;
      }
      stat(path.c_str(), &st);
    }
    for (int32_t nc : calls) {
      double best = 1e30;
      double label_sum = 0;
      uint64_t id_sum = 0;
      for (int rep = 0; rep < repeat; ++rep) {
        data::ExampleReaderOptions ro;
        ro.format = c.format;
        data::PipelineOptions po;
        po.batch_size = batch_size;
        po.num_parallel_calls = nc;
        po.num_parallel_reads = reads;
        po.print_warnings = false;
        const auto t0 = std::chrono::steady_clock::now();
        auto p = data::Pipeline::Create({path}, ro, po);
        if (!p.ok()) {
          std::fprintf(stderr, "pipeline_bench: %s\n", p.status().ToString().c_str());
          return 1;
        }
        data::Batch b;
        int64_t n = 0;
        label_sum = 0;
        id_sum = 0;
        while (true) {
          auto r = (*p)->Next(&b);
          if (!r.ok()) {
            std::fprintf(stderr, "pipeline_bench: %s\n", r.status().ToString().c_str());
            return 1;
          }
          if (!*r) break;
          n += b.size();
          for (float l : b.labels) label_sum += l;
          for (int64_t id : b.ids) id_sum += static_cast<uint64_t>(id);
        }
        const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (n != rows) {
          std::fprintf(stderr, "pipeline_bench: %s: read %lld rows, expected %lld\n", path.c_str(),
                       static_cast<long long>(n), static_cast<long long>(rows));
          rc = 1;
        }
        best = std::min(best, sec);
      }
      std::printf(
          "{\"bench\":\"pipeline\",\"format\":\"%s\",\"compression\":\"%s\",\"rows\":%lld,\"file_bytes\":%lld,"
          "\"num_parallel_calls\":%d,\"num_parallel_reads\":%d,\"batch_size\":%lld,\"seconds\":%.4f,"
          "\"records_per_sec\":%.0f,\"records_per_sec_per_thread\":%.0f,\"mb_per_sec\":%.1f,"
          "\"label_sum\":%.0f,\"id_sum\":%llu}\n",
          c.name.c_str(), comp.c_str(), static_cast<long long>(rows), static_cast<long long>(st.st_size), nc, reads,
          static_cast<long long>(batch_size), best, rows / best, rows / best / nc, st.st_size / best / 1e6,
          label_sum, static_cast<unsigned long long>(id_sum));
      std::fflush(stdout);
    }
    if (!keep && made_dir) unlink(path.c_str());
  }
  if (!keep && made_dir) rmdir(dir.c_str());
  return rc;
}
