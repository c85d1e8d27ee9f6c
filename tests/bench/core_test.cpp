// Tests of the benchmark core on the cpu backend: case lists, selection, byte accounting, the
// runner's rows (ok and unsupported) and the reports.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "bench_cli.hpp"
#include "bench_core.hpp"
#include "bench_device.hpp"
#include "bench_plan.hpp"

namespace mxq::bench {
namespace {

bool has(const std::vector<BenchCase>& cases, Op op, Format f, Direction d, BenchShape s, int32_t groups = 0) {
  return std::any_of(cases.begin(), cases.end(), [&](const BenchCase& c) {
    return c.op == op && c.format == f && c.direction == d && c.batch == s.batch && c.rows == s.rows &&
           c.cols == s.cols && c.groups == groups && !c.graph;
  });
}

TEST(BenchShapes, ParsesTwoAndThreeDimensions) {
  BenchShape s;
  ASSERT_TRUE(parse_shape("8192x2048", &s));
  EXPECT_EQ(s.batch, 1);
  EXPECT_EQ(s.rows, 8192);
  EXPECT_EQ(s.cols, 2048);
  ASSERT_TRUE(parse_shape("16x8192x5120", &s));
  EXPECT_EQ(s.batch, 16);
  EXPECT_EQ(s.rows, 8192);
  EXPECT_EQ(s.cols, 5120);
  for (const char* bad : {"", "8192", "8192x", "x2048", "0x16", "8x-1", "ax2", "1x2x3x4", "8192x2048x"})
    EXPECT_FALSE(parse_shape(bad, &s)) << bad;
}

TEST(BenchCases, CudaDefaultsCoverTheIssueShapes) {
  const std::vector<BenchCase> cases = default_cases(Backend::cuda, false);
  for (int64_t m : {8192, 32768, 131072})
    for (int64_t k : {2048, 7168})
      for (Direction d : {Direction::rowwise, Direction::colwise, Direction::both}) {
        EXPECT_TRUE(has(cases, Op::quantize, Format::mxfp8, d, {1, m, k})) << m << "x" << k;
        EXPECT_TRUE(has(cases, Op::quantize, Format::mxfp4, d, {1, m, k}));
        EXPECT_TRUE(has(cases, Op::quantize, Format::nvfp4, d, {1, m, k}));
        const int floors = static_cast<int>(std::count_if(cases.begin(), cases.end(), [&](auto& c) {
          return c.op == Op::quantize && c.format == Format::mxfp8 && c.direction == d && c.rows == m && c.cols == k &&
                 c.rule == ScaleRule::floor;
        }));
        EXPECT_EQ(floors, 1);
      }
  for (BenchShape s :
       {BenchShape{1, 8192, 5120}, BenchShape{4, 8192, 5120}, BenchShape{16, 8192, 5120}, BenchShape{8, 7168, 2048}})
    for (Direction d : {Direction::rowwise, Direction::colwise, Direction::both})
      EXPECT_TRUE(has(cases, Op::quantize, Format::mxfp8, d, s));
  for (int64_t m : {16384, 131072})
    for (int64_t k : {1536, 2048, 5120, 7168})
      for (int32_t g : {1, 8, 16, 64}) {
        EXPECT_TRUE(has(cases, Op::pad, Format::mxfp8, Direction::rowwise, {1, m, k}, g));
        EXPECT_TRUE(has(cases, Op::unpad, Format::mxfp8, Direction::rowwise, {1, m, k}, g));
        EXPECT_TRUE(has(cases, Op::quantize, Format::mxfp8, Direction::colwise, {1, m, k}, g));
        EXPECT_TRUE(has(cases, Op::quantize, Format::mxfp8, Direction::both, {1, m, k}, g));
      }
  for (BenchShape s : {BenchShape{1, 131072, 2048}, BenchShape{1, 16384, 1536}})
    for (int32_t g : {8, 64}) {
      EXPECT_TRUE(has(cases, Op::swiglu, Format::mxfp8, Direction::rowwise, s, g));
      EXPECT_TRUE(has(cases, Op::swiglu, Format::mxfp8, Direction::both, s, g));
      EXPECT_TRUE(has(cases, Op::swiglu, Format::nvfp4, Direction::rowwise, s, g));
      EXPECT_TRUE(has(cases, Op::swiglu_backward, Format::mxfp8, Direction::both, s, g));
    }
  EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [](auto& c) { return c.graph; }));
  EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [](auto& c) { return c.op == Op::dequantize; }));
  std::set<std::string> rows;
  for (const BenchCase& c : cases) {
    std::ostringstream key;
    key << op_name(c.op) << shape_string(c) << to_string(c.format) << to_string(c.direction) << to_string(c.layout)
        << detail_string(c);
    EXPECT_TRUE(rows.insert(key.str()).second) << "duplicate row " << key.str();
  }
}

TEST(BenchCases, CpuDefaultsAreSmall) {
  for (const BenchCase& c : default_cases(Backend::cpu, false)) {
    EXPECT_LE(c.batch * c.rows * c.cols, int64_t{1} << 23) << shape_string(c);
    EXPECT_FALSE(c.graph);
  }
}

TEST(BenchCases, SelectionFiltersAndReplacesShapes) {
  BenchOptions o;
  o.ops = {Op::pad};
  for (const BenchCase& c : select_cases(o, Backend::cuda)) EXPECT_EQ(c.op, Op::pad);

  o = {};
  o.formats = {Format::nvfp4};
  const auto nvfp4 = select_cases(o, Backend::cuda);
  ASSERT_FALSE(nvfp4.empty());
  for (const BenchCase& c : nvfp4) {
    EXPECT_TRUE(c.op == Op::quantize || c.op == Op::dequantize);
    EXPECT_EQ(c.format, Format::nvfp4);
  }

  o = {};
  o.ops = {Op::quantize};
  o.shapes = {{1, 256, 512}, {2, 128, 256}};
  const auto shaped = select_cases(o, Backend::cuda);
  ASSERT_FALSE(shaped.empty());
  for (const BenchCase& c : shaped) {
    const bool first = c.batch == 1 && c.rows == 256 && c.cols == 512;
    const bool second = c.batch == 2 && c.rows == 128 && c.cols == 256;
    EXPECT_TRUE(first || second) << shape_string(c);
    if (second) {
      EXPECT_EQ(c.groups, 0) << "token groups are 2-D only";
    }
  }
  EXPECT_TRUE(has(shaped, Op::quantize, Format::mxfp8, Direction::colwise, {2, 128, 256}));
  EXPECT_TRUE(has(shaped, Op::quantize, Format::mxfp8, Direction::both, {1, 256, 512}, 64));

  o = {};
  o.graph_only = true;
  for (const BenchCase& c : select_cases(o, Backend::cuda)) EXPECT_TRUE(c.graph);

  o = {};
  o.ops = {Op::quantize};
  const size_t bf16_only = select_cases(o, Backend::cuda).size();
  o.dtypes = {DType::fp16, DType::fp32};
  const auto typed = select_cases(o, Backend::cuda);
  EXPECT_EQ(typed.size(), 2 * bf16_only);
  for (const BenchCase& c : typed) EXPECT_TRUE(c.dtype == DType::fp16 || c.dtype == DType::fp32);
}

// The options take their values by name, in any case, and nothing else: not the enumerations'
// integer values, which CLI11's own transformer would also accept.
TEST(BenchCli, OptionsTakeNamesOnly) {
  const auto parse = [](const std::vector<std::string>& args, BenchCli* cli) {
    CLI::App app;
    add_bench_options(app, *cli);
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 pops from the back
    app.parse(reversed);
  };
  BenchCli cli;
  parse({"--op", "PAD", "--op", "quantize", "--format", "NvFp4", "--dir", "both", "--dtype", "fp16", "--backend", "cpu",
         "--flush", "read", "--grouped-rowwise", "tiles"},
        &cli);
  EXPECT_EQ(cli.options.ops, (std::vector<Op>{Op::pad, Op::quantize}));
  EXPECT_EQ(cli.options.formats, std::vector<Format>{Format::nvfp4});
  EXPECT_EQ(cli.options.directions, std::vector<Direction>{Direction::both});
  EXPECT_EQ(cli.options.dtypes, std::vector<DType>{DType::fp16});
  EXPECT_EQ(cli.options.backend, Backend::cpu);
  EXPECT_EQ(cli.options.flush, Flush::read);
  EXPECT_EQ(cli.options.grouped_rowwise, "tiles");

  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--backend", "1"}, "--backend: 1 is not one of {auto,cpu,cuda}"},
      {{"--format", "mxfp6"}, "--format: mxfp6 is not one of {mxfp4,mxfp8,mxfp8_e5m2,nvfp4}"},
      {{"--op", "0"}, "--op: 0 is not one of {amax,dequantize,pad,quantize,swiglu,swiglu_backward,unpad}"},
      {{"--dtype", "u8"}, "--dtype: u8 is not one of {bf16,fp16,fp32}"},
      {{"--grouped-rowwise", "rows"}, "--grouped-rowwise: rows not in {auto,tiles}"},
  };
  for (const auto& [args, message] : bad) {
    BenchCli rejected;
    try {
      parse(args, &rejected);
      ADD_FAILURE() << args[0] << " " << args[1] << " was accepted";
    } catch (const CLI::ValidationError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
}

TEST(BenchPlan, JaggedGroupsCoverAllRows) {
  for (int32_t g : {1, 8, 64, 1000}) {
    const std::vector<int32_t> ends = jagged_group_ends(131072, g);
    ASSERT_EQ(ends.size(), static_cast<size_t>(g));
    EXPECT_EQ(ends.back(), 131072);
    EXPECT_TRUE(std::is_sorted(ends.begin(), ends.end()));
    EXPECT_GE(ends.front(), 0);
    if (g > 1) {
      EXPECT_NE(ends[0], ends[1] - ends[0]) << "sizes should be jagged";
    }
    const std::vector<int32_t> cut = jagged_group_ends(131072 - 7, g, 32);
    EXPECT_EQ(cut.back(), 131072 - 7);
    EXPECT_TRUE(std::is_sorted(cut.begin(), cut.end()));
    for (size_t i = 0; i + 1 < cut.size(); ++i) EXPECT_EQ(cut[i] % 32, 0) << i;
  }
}

TEST(BenchPlan, RandomInputIsStandardNormalNotZeros) {
  auto device = make_cpu_device();
  constexpr int64_t n = 1 << 16;
  std::vector<float> x(n);
  device->fill_normal(x.data(), DType::fp32, n, 7);
  double sum = 0, sq = 0;
  int64_t zeros = 0;
  for (float v : x) {
    sum += v;
    sq += double{v} * v;
    zeros += v == 0.0f;
  }
  EXPECT_LT(zeros, 4);
  EXPECT_NEAR(sum / n, 0.0, 0.02);
  EXPECT_NEAR(std::sqrt(sq / n), 1.0, 0.02);
}

// Bytes per layouts.md: rowwise data M*K + blocked scales Rp(M) x Cp(K/32); colwise the same
// transposed: K*M + Rp(K) x Cp(M/32).
TEST(BenchPlan, CountsInputAndEveryOutputByte) {
  auto device = make_cpu_device();
  BenchCase c;
  c.rows = 64;
  c.cols = 256;
  c.direction = Direction::both;
  OpPlan plan;
  ASSERT_TRUE(make_plan(c, *device, &plan).ok());
  EXPECT_EQ(plan.bytes_read, 64 * 256 * 2);
  EXPECT_EQ(plan.bytes_written, (64 * 256 + 128 * 8) + (256 * 64 + 256 * 4));
  ASSERT_TRUE(plan.call().ok());

  BenchCase p;
  p.op = Op::pad;
  p.rows = 100;
  p.cols = 8;
  p.groups = 3;
  p.alignment = 32;
  OpPlan pad_plan;
  ASSERT_TRUE(make_plan(p, *device, &pad_plan).ok());
  // Output rows round_up(M + G*A, A) = 224; offsets: ends read, starts and ends written.
  EXPECT_EQ(pad_plan.bytes_read, 100 * 8 * 2 + 3 * 4);
  EXPECT_EQ(pad_plan.bytes_written, 224 * 8 * 2 + 2 * 3 * 4);
  ASSERT_TRUE(pad_plan.call().ok());
}

// SwiGLU reads h (M, 2F) (and dA (M, F) backward) and writes the quantized a (M, F) or dh (M, 2F).
TEST(BenchPlan, CountsSwigluOperandsAndOutputs) {
  auto device = make_cpu_device();
  BenchCase c;
  c.op = Op::swiglu;
  c.rows = 64;
  c.cols = 128;
  OpPlan forward;
  ASSERT_TRUE(make_plan(c, *device, &forward).ok());
  EXPECT_EQ(forward.bytes_read, 64 * 256 * 2);
  EXPECT_EQ(forward.bytes_written, 64 * 128 + 128 * 4);
  ASSERT_TRUE(forward.call().ok());

  c.op = Op::swiglu_backward;
  OpPlan backward;
  ASSERT_TRUE(make_plan(c, *device, &backward).ok());
  EXPECT_EQ(backward.bytes_read, 64 * 128 * 2 + 64 * 256 * 2);
  EXPECT_EQ(backward.bytes_written, 64 * 256 + 128 * 8);
  ASSERT_TRUE(backward.call().ok());
}

TEST(BenchRunner, TimesCpuCasesAndReportsUnsupportedRowsWithoutStopping) {
  BenchOptions o;
  o.backend = Backend::cpu;
  o.runs = 3;
  o.warmup = 0;
  BenchRunner runner(o);
  EXPECT_EQ(runner.environment().backend, Backend::cpu);
  EXPECT_NE(runner.environment().note.find("CPU"), std::string::npos);

  BenchCase graph;
  graph.rows = 128;
  graph.cols = 256;
  graph.graph = true;
  BenchCase plain = graph;
  plain.graph = false;
  BenchCase bad = plain;
  bad.cols = 255;  // fp4 needs even K; mxfp8 takes it, so use a format rule that breaks
  bad.format = Format::mxfp4;

  std::vector<BenchResult> results = {runner.run_case(graph), runner.run_case(bad), runner.run_case(plain)};
  EXPECT_EQ(results[0].status, RowStatus::unsupported);
  EXPECT_EQ(results[1].status, RowStatus::error);
  EXPECT_FALSE(results[1].message.empty());
  const BenchResult& ok = results[2];
  ASSERT_EQ(ok.status, RowStatus::ok) << ok.message;
  EXPECT_EQ(ok.runs, 3);
  EXPECT_GT(ok.op_us, 0);
  EXPECT_GT(ok.copy_gbps, 0);
  EXPECT_NEAR(ok.ratio, ok.op_gbps / ok.copy_gbps, 1e-9);
  EXPECT_NEAR(ok.op_gbps, (ok.bytes_read + ok.bytes_written) / (ok.op_us * 1e3), 1e-6);
  EXPECT_DOUBLE_EQ(ok.host_us, ok.op_us);  // the cpu backend's call is the op

  std::ostringstream table;
  print_table(table, runner.environment(), results);
  EXPECT_NE(table.str().find("unsupported"), std::string::npos);
  EXPECT_NE(table.str().find("128x256"), std::string::npos);

  const auto json = nlohmann::json::parse(to_json(runner.environment(), results));
  EXPECT_EQ(json["backend"], "cpu");
  ASSERT_EQ(json["results"].size(), 3u);
  EXPECT_EQ(json["results"][0]["status"], "unsupported");
  EXPECT_EQ(json["results"][2]["status"], "ok");
  EXPECT_EQ(json["results"][2]["bytes_read"], ok.bytes_read);
  EXPECT_DOUBLE_EQ(json["results"][2]["ratio"].get<double>(), ok.ratio);
  EXPECT_DOUBLE_EQ(json["results"][2]["host_median_us"].get<double>(), ok.host_us);
  EXPECT_EQ(json["flush"], "write");
}

// A run with forced grouped kernels says so in its header and its JSON; a tuned run has neither.
TEST(BenchReport, ForcedKernelsAreReported) {
  BenchOptions o;
  EXPECT_EQ(forced_kernels(o), "");
  o.grouped_rowwise = "tiles";
  EXPECT_EQ(forced_kernels(o), "grouped rowwise tiles");
  o.grouped_colwise = "windows";
  EXPECT_EQ(forced_kernels(o), "grouped colwise windows, grouped rowwise tiles");

  BenchEnvironment env;
  std::ostringstream tuned;
  print_header(tuned, env);
  EXPECT_EQ(tuned.str().find("FORCED"), std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(to_json(env, {})).contains("forced_kernels"));
  env.forced = forced_kernels(o);
  std::ostringstream forced;
  print_header(forced, env);
  EXPECT_NE(forced.str().find("FORCED (not the tuning's choice): grouped colwise windows, grouped rowwise tiles"),
            std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(to_json(env, {}))["forced_kernels"], env.forced);
}

TEST(BenchRunner, FlushesByReadingWhenAsked) {
  BenchOptions o;
  o.backend = Backend::cpu;
  o.runs = 2;
  o.warmup = 0;
  o.flush = Flush::read;
  BenchRunner runner(o);
  BenchCase c;
  c.rows = 128;
  c.cols = 256;
  const BenchResult r = runner.run_case(c);
  ASSERT_EQ(r.status, RowStatus::ok) << r.message;
  std::ostringstream header;
  print_header(header, runner.environment());
  EXPECT_NE(header.str().find("flushed by reading"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(to_json(runner.environment(), {r}))["flush"], "read");
}

}  // namespace
}  // namespace mxq::bench
